"""Validating a draft (reviewers may too), publishing and unpublishing it."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.views.decorators.http import require_POST

from authoring import services as authoring
from web.views.authoring.base import author_url, exercise_for, exercise_refusals


@login_required
@require_POST
def validate(request: HttpRequest, module_slug: str, exercise_slug: str) -> HttpResponse:
    exercise = exercise_for(request, module_slug, exercise_slug, writes=False)
    with exercise_refusals(request):
        authoring.draft_validate(exercise=exercise, user=request.user)
        return redirect(author_url(exercise.module, exercise) + "#validation")
    return redirect(author_url(exercise.module, exercise))


@login_required
@require_POST
def publish(request: HttpRequest, module_slug: str, exercise_slug: str) -> HttpResponse:
    exercise = exercise_for(request, module_slug, exercise_slug, writes=True)
    with exercise_refusals(request):
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
