"""A module's members, set from its authoring page: one at a time or from a CSV roster."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.views.decorators.http import require_POST

from courses import roster
from web.views.authoring.base import author_url, module_for_writing, module_refusals


@login_required
@require_POST
def add_member(request: HttpRequest, module_slug: str) -> HttpResponse:
    module = module_for_writing(request, module_slug)
    with module_refusals(request):
        roster.module_member_set(
            module=module,
            username=request.POST.get("username", "").strip(),
            role=request.POST.get("role", ""),
        )
        messages.success(request, "Member saved.")
    return redirect(author_url(module))


@login_required
@require_POST
def upload_roster(request: HttpRequest, module_slug: str) -> HttpResponse:
    module = module_for_writing(request, module_slug)
    with module_refusals(request):
        upload = request.FILES.get("roster")
        data = upload.read(roster.CSV_MAX_BYTES + 1) if upload else b""
        result = roster.module_roster_import(
            module=module, data=data, create=bool(request.POST.get("create"))
        )
        created = (
            f"; created users: {', '.join(result.created_users)}" if result.created_users else ""
        )
        messages.success(
            request,
            f"Roster applied: {result.added} added, {result.changed} changed, "
            f"{result.unchanged} unchanged{created}.",
        )
    return redirect(author_url(module))
