"""Validating a draft (reviewers may too), publishing and unpublishing it."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.views.decorators.http import require_POST

from authoring import services as authoring
from courses.access import module_is_taught_by
from web.views.authoring.base import author_url, exercise_for, exercise_refusals
from web.views.authoring.editor import save_posted, unsaved_changes

UNSAVED_PUBLISH = (
    "Not published: the page had unsaved changes. They are saved now as the draft; "
    "validate it, then publish."
)
UNSAVED_REVIEWER = (
    "Not validated: the page has changes, and a reviewer cannot save them. Reload the "
    "page to validate the saved draft."
)


@login_required
@require_POST
def validate(request: HttpRequest, module_slug: str, exercise_slug: str) -> HttpResponse:
    """Validates the draft; the editor's unsaved changes are saved first (by those who may
    edit), so that what is validated is what the page shows."""
    exercise = exercise_for(request, module_slug, exercise_slug, writes=False)
    with exercise_refusals(request):
        if unsaved_changes(request, exercise):
            if not module_is_taught_by(module_id=exercise.module_id, user=request.user):
                messages.error(request, UNSAVED_REVIEWER)
                return redirect(author_url(exercise.module, exercise))
            draft = save_posted(request, exercise)
            if draft is not None and draft.problem:
                return redirect(author_url(exercise.module, exercise))
            messages.success(request, "Saved your changes; validating them.")
        authoring.draft_validate(exercise=exercise, user=request.user)
        return redirect(author_url(exercise.module, exercise) + "#validation")
    return redirect(author_url(exercise.module, exercise))


@login_required
@require_POST
def publish(request: HttpRequest, module_slug: str, exercise_slug: str) -> HttpResponse:
    """Publishes the validated draft. With unsaved changes on the page, nothing is
    published: the changes are saved as the draft, which must be validated first."""
    exercise = exercise_for(request, module_slug, exercise_slug, writes=True)
    with exercise_refusals(request):
        if save_posted(request, exercise) is not None:
            messages.error(request, UNSAVED_PUBLISH)
            return redirect(author_url(exercise.module, exercise))
        version = authoring.exercise_publish(exercise=exercise)
        messages.success(request, f"Published as v{version.number}.")
    return redirect(author_url(exercise.module, exercise))


@login_required
@require_POST
def unpublish(request: HttpRequest, module_slug: str, exercise_slug: str) -> HttpResponse:
    exercise = exercise_for(request, module_slug, exercise_slug, writes=True)
    with exercise_refusals(request):
        authoring.exercise_unpublish(exercise=exercise)
        messages.success(request, "Unpublished: learners no longer see it.")
    return redirect(author_url(exercise.module, exercise))
