"""Enrolment links (courses.enrolment_links): made and revoked on the Teach page by the
module's instructors; opened at /join/<code>/ (or typed on the home page) by whoever was
given one, who joins with a POST from the page that names the module."""

from __future__ import annotations

from dataclasses import dataclass

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from common.errors import InvalidInput, NotFound
from courses import enrolment_links as links
from courses.access import module_get_taught
from courses.models import EnrolmentLink, Module
from web.deadlines import when
from web.middleware import error_page
from web.views.authoring.base import module_refusals

GONE = 410
ROLE_WORDS: dict[str, str] = {
    EnrolmentLink.Role.LEARNER: "a learner",
    EnrolmentLink.Role.REVIEWER: "a reviewer (reads and validates drafts, sees no grades)",
}


@dataclass(frozen=True)
class LinkRow:
    """An open link as the Teach page lists it."""

    id: int
    code: str  # ABCD-EFGH-JKLM
    url: str  # absolute: what the instructor shares
    role: str
    uses: str  # "3" or "3 of 40"
    expires: str


@dataclass(frozen=True)
class LinksPanel:
    """The Teach page's enrolment links section: the open links and the form's bounds."""

    rows: list[LinkRow]
    default_days: int = links.DEFAULT_DAYS
    max_days: int = links.MAX_DAYS
    max_uses: int = links.MAX_USES


def links_panel(request: HttpRequest, module: Module) -> LinksPanel:
    return LinksPanel(rows=_link_rows(request, module))


def _link_rows(request: HttpRequest, module: Module) -> list[LinkRow]:
    return [
        LinkRow(
            id=link.pk,
            code=links.code_shown(link.code),
            url=request.build_absolute_uri(reverse("web:join", args=[link.code])),
            role=link.role,
            uses=f"{link.use_count}" + (f" of {link.max_uses}" if link.max_uses else ""),
            expires=when(link.expires_at),
        )
        for link in links.enrolment_links_open(module=module)
    ]


@login_required
@require_POST
def link_create(request: HttpRequest, module_slug: str) -> HttpResponse:
    module = module_get_taught(slug=module_slug, user=request.user)
    with module_refusals(request):
        days = _number(request, "days")
        link = links.enrolment_link_create(
            module=module,
            created_by=request.user,
            role=request.POST.get("role", EnrolmentLink.Role.LEARNER),
            days=links.DEFAULT_DAYS if days is None else days,
            max_uses=_number(request, "max_uses"),
        )
        url = request.build_absolute_uri(reverse("web:join", args=[link.code]))
        messages.success(
            request,
            f"Enrolment link created: {url} (code {links.code_shown(link.code)}). "
            f"Whoever opens it joins as a {link.role} until {when(link.expires_at)}.",
        )
    return redirect(_links_url(module))


@login_required
@require_POST
def link_revoke(request: HttpRequest, module_slug: str, link_id: int) -> HttpResponse:
    module = module_get_taught(slug=module_slug, user=request.user)
    link = links.enrolment_link_revoke(module=module, link_id=link_id)
    messages.success(
        request,
        f"Enrolment link {links.code_shown(link.code)} revoked: it lets no one join any more.",
    )
    return redirect(_links_url(module))


@login_required
@require_GET
def join_code(request: HttpRequest) -> HttpResponse:
    """The home page's form: a typed code, on to its join page (nothing looked up here)."""
    typed = request.GET.get("code", "")
    code = links.code_normalise(typed)
    if links.code_is_well_formed(code):
        return redirect("web:join", code)
    error = (
        f"An enrolment code has {links.CODE_LENGTH} letters and digits, like ABCD-EFGH-JKLM "
        "(there is no I, O, 0 or 1 in one)."
        if typed.strip()
        else ""
    )
    return render(request, "web/join_code.html", {"code": typed, "error": error})


@login_required
@require_http_methods(["GET", "POST"])
def join(request: HttpRequest, code: str) -> HttpResponse:
    """GET names the module and asks to join (it enrols no one); POST joins. A member
    already goes to the module's page with their role unchanged."""
    try:
        if request.method == "POST":
            return _joined(request, links.enrolment_link_join(code=code, user=request.user))
        link = links.enrolment_link_find(code=code, user=request.user)
        role = links.enrolment_link_role_of(link=link, user=request.user)
        if role:
            return _joined(request, links.Joined(module=link.module, role=role, added=False))
        links.enrolment_link_check(link)
    except NotFound as unknown:
        return error_page(request, 404, "Unknown enrolment code", unknown.message)
    except links.LinkClosed as closed:
        return error_page(request, GONE, "This enrolment link no longer works", closed.message)
    context = {"module": link.module, "role": ROLE_WORDS[link.role], "code": link.code}
    return render(request, "web/join.html", context)


def _joined(request: HttpRequest, joined: links.Joined) -> HttpResponse:
    title = joined.module.title
    if joined.added:
        messages.success(request, f"You joined {title} as {_a(joined.role)}.")
    else:
        messages.info(request, f"You are already in {title}, as {_a(joined.role)}.")
    return redirect("web:module", joined.module.slug)


def _number(request: HttpRequest, name: str) -> int | None:
    """The form's whole number `name` (None when left empty)."""
    text = request.POST.get(name, "").strip()
    if not text:
        return None
    try:
        return int(text)
    except ValueError:
        raise InvalidInput({name: f"{text!r} is not a whole number."}) from None


def _a(role: str) -> str:
    return f"an {role}" if role[:1] in "aeiou" else f"a {role}"


def _links_url(module: Module) -> str:
    return f"{reverse('web:teach_module', args=[module.slug])}#enrolment-links"
