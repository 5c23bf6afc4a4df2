"""What an author looks at besides the editor: the statement's preview, the latest
validation, the draft tried as a learner and the diff between two versions."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.template.loader import render_to_string
from django.utils.safestring import mark_safe
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from authoring import services as authoring
from common.errors import DomainError
from courses.access import module_get_reviewed
from courses.manifest import stored_manifest
from courses.models import Exercise
from courses.statement import render_statement
from grader.authoring import archive
from grader.spec import Package, PackageError
from submissions.services import submission_preview_create
from web.views.authoring.base import author_url, crumbs, error_text, exercise_in


@login_required
@require_POST
def statement_preview(request: HttpRequest, module_slug: str, exercise_slug: str) -> JsonResponse:
    """The statement's HTML as learners would get it (the same Markdown and sanitiser)."""
    module = module_get_reviewed(slug=module_slug, user=request.user)
    exercise = exercise_in(module, exercise_slug)
    text = request.POST.get("statement", "")[: archive.DEFAULT_LIMITS.file_bytes]
    return JsonResponse({"html": render_statement(_with_checks(exercise, text))})


def _with_checks(exercise: Exercise, text: str) -> str:
    """The statement with its "What is checked" section made from the saved draft's
    manifest (grader.statement), as learners get it; the text alone when the draft with
    this statement is not a valid package."""
    version = authoring.draft_of(exercise)
    if version is None:
        return text
    try:
        return Package.from_files({**version.files, "statement.md": text}).statement
    except PackageError:
        return text


@login_required
@require_GET
def validation_status(request: HttpRequest, module_slug: str, exercise_slug: str) -> JsonResponse:
    """The latest validation of the draft, rendered, for the page to show as it arrives."""
    module = module_get_reviewed(slug=module_slug, user=request.user)
    exercise = exercise_in(module, exercise_slug)
    job = authoring.validation_latest(version=authoring.draft_get(exercise=exercise).version)
    if job is None:
        return JsonResponse({"status": "none", "pending": False, "html": ""})
    html = render_to_string("web/_job.html", {"job": job}, request=request)
    return JsonResponse({"status": job.status, "pending": job.pending, "html": html})


@login_required
@require_http_methods(["GET", "POST"])
def try_exercise(request: HttpRequest, module_slug: str, exercise_slug: str) -> HttpResponse:
    """The draft as a learner sees it; a submission here is a preview that counts nowhere."""
    module = module_get_reviewed(slug=module_slug, user=request.user)
    exercise = exercise_in(module, exercise_slug)
    version = authoring.draft_get(exercise=exercise).version
    if request.method == "POST":
        try:
            submission = submission_preview_create(
                user=request.user, exercise=exercise, version=version,
                code=request.POST.get("code", ""),
            )  # fmt: skip
        except DomainError as error:
            messages.error(request, error_text(error))
            return redirect("web:author_try", module.slug, exercise.slug)
        return redirect("web:submission", submission.pk)
    context = {
        "module": module,
        "exercise": exercise,
        "version": version,
        "title": stored_manifest(version, title=exercise.title).title,
        "statement_html": mark_safe(version.statement_html),  # nh3-sanitised when saved
        "code": version.starter_code,
        "crumbs": crumbs(module, (exercise.title, author_url(module, exercise)), ("Try", "")),
        "nav": "teach",
    }
    return render(request, "web/author_try.html", context)


@login_required
@require_GET
def version_diff(request: HttpRequest, module_slug: str, exercise_slug: str) -> HttpResponse:
    module = module_get_reviewed(slug=module_slug, user=request.user)
    exercise = exercise_in(module, exercise_slug)
    old_label, new_label = request.GET.get("from", "current"), request.GET.get("to", "draft")
    old = authoring.version_get(exercise=exercise, label=old_label)
    new = authoring.version_get(exercise=exercise, label=new_label)
    context: dict[str, Any] = {
        "module": module,
        "exercise": exercise,
        "old": old,
        "new": new,
        "diffs": authoring.versions_diff(old, new),
        "crumbs": crumbs(module, (exercise.title, author_url(module, exercise)), ("Diff", "")),
        "nav": "teach",
    }
    return render(request, "web/author_diff.html", context)
