"""A module's authoring page and its actions: create an exercise or a module, import and
download archives, declare the learning objectives."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from authoring import services as authoring
from common.errors import InvalidInput
from courses import roster
from courses.access import module_get_reviewed, module_is_taught_by
from courses.models import Module
from courses.selectors import module_objectives
from courses.services import module_export
from grader.authoring import archive
from web.views.authoring.base import author_url, crumbs, module_for_writing, module_refusals


@login_required
@require_GET
def author_module(request: HttpRequest, module_slug: str) -> HttpResponse:
    module = module_get_reviewed(slug=module_slug, user=request.user)
    exercises = module.exercises.select_related("current_version").order_by("order", "slug")
    context = {
        "module": module,
        "exercises": exercises,
        "may_edit": module_is_taught_by(module_id=module.pk, user=request.user),
        "formats": archive.FORMATS,
        "objectives": module_objectives(module),
        "members": roster.module_members(module=module),
        "crumbs": crumbs(module),
        "nav": "teach",
    }
    return render(request, "web/author_module.html", context)


@login_required
@require_POST
def create_exercise(request: HttpRequest, module_slug: str) -> HttpResponse:
    module = module_for_writing(request, module_slug)
    with module_refusals(request):
        draft = authoring.exercise_create(
            module=module,
            slug=request.POST.get("slug", "").strip(),
            title=request.POST.get("title", "").strip(),
            kind=request.POST.get("kind", "script"),
            user=request.user,
        )
        return redirect(author_url(module, draft.version.exercise))
    return redirect(author_url(module))


@login_required
@require_POST
def create_module(request: HttpRequest, module_slug: str) -> HttpResponse:
    module = module_for_writing(request, module_slug)
    with module_refusals(request):
        created = authoring.module_create(
            slug=request.POST.get("slug", "").strip(),
            title=request.POST.get("title", ""),
            user=request.user,
        )
        return redirect(author_url(created))
    return redirect(author_url(module))


@login_required
@require_POST
def upload_archive(request: HttpRequest, module_slug: str) -> HttpResponse:
    module = module_for_writing(request, module_slug)
    with module_refusals(request):
        upload = request.FILES.get("archive")
        data = upload.read(archive.DEFAULT_LIMITS.archive_bytes + 1) if upload else b""
        before = _unpublished_drafts(module)
        drafts = authoring.module_archive_upload(
            module=module, data=data, name=(upload.name if upload else "") or "upload",
            user=request.user, copy=bool(request.POST.get("copy")),
        )  # fmt: skip
        replaced = _replaced(before, _unpublished_drafts(module))
        messages.success(request, f"Imported {len(drafts)} exercise(s) as drafts.")
        if replaced:
            messages.warning(request, replaced_message(replaced))
    return redirect(author_url(module))


def _unpublished_drafts(module: Module) -> dict[str, int]:
    """Slug -> draft version of each exercise of `module` that has an unpublished draft."""
    rows = module.exercises.filter(draft_version__isnull=False).values_list("slug", "draft_version")
    return dict(rows)


def _replaced(before: dict[str, int], after: dict[str, int]) -> list[str]:
    """The exercises whose unpublished draft an import replaced with other content."""
    return sorted(slug for slug, version in before.items() if after.get(slug) != version)


def replaced_message(slugs: list[str]) -> str:
    return (
        f"The import replaced the unpublished draft of {len(slugs)} exercise(s): "
        f"{', '.join(slugs)}. Each replaced draft is in its exercise's History, to restore; "
        "import “as copies” to keep a draft and the imported exercise side by side."
    )


@login_required
@require_GET
def module_archive(request: HttpRequest, module_slug: str) -> HttpResponse:
    module = module_get_reviewed(slug=module_slug, user=request.user)
    kind = request.GET.get("type", archive.TAR_GZ)
    if kind not in archive.FORMATS:
        kind = archive.TAR_GZ
    response = HttpResponse(
        module_export(module=module, kind=kind), content_type=archive.CONTENT_TYPES[kind]
    )
    response["Content-Disposition"] = f'attachment; filename="{module.slug}.{kind}"'
    return response


@login_required
@require_POST
def save_objectives(request: HttpRequest, module_slug: str) -> HttpResponse:
    module = module_for_writing(request, module_slug)
    with module_refusals(request):
        authoring.module_objectives_set(
            module=module, objectives=objectives_from_lines(request.POST.get("objectives", ""))
        )
        messages.success(request, "Learning objectives saved.")
    return redirect(author_url(module))


def objectives_from_lines(text: str) -> list[dict[str, str]]:
    """The objectives form's text, one `id: title` a line (blank lines skipped); a line
    without its colon is refused, naming it."""
    objectives = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        ident, colon, title = line.partition(":")
        if not colon:
            raise InvalidInput({"objectives": [f"line {number}: write it as id: title"]})
        objectives.append({"id": ident.strip(), "title": title.strip()})
    return objectives
