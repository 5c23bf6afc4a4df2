"""Learner pages: module, exercise (editor + live feedback), one submission, its status.

Each view: parse, authorise with one access-checked selector (the rule is in
courses.access, shared with the API), call one service or selector, render.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils.safestring import SafeString, mark_safe
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from common.errors import DomainError, InvalidInput, NotFound, RateLimited
from courses.access import module_is_taught_by
from courses.models import Exercise, Module
from courses.selectors import (
    exercise_get_in_module,
    exercises_visible_to,
    module_get,
    modules_visible_to,
)
from submissions.drafts import draft_get, draft_save, draft_to_open
from submissions.late import deadline_for
from submissions.mastery import SHOWN, learner_mastery
from submissions.models import Draft, Submission
from submissions.selectors import queue_place, submission_get, submission_result_withheld
from submissions.services import submission_create
from web import selectors
from web.deadlines import deadline_view, when
from web.presenters import HELD, Feedback, feedback_for, history_item


def _wants_json(request: HttpRequest) -> bool:
    return "application/json" in request.headers.get("Accept", "")


@login_required
@require_GET
def home(request: HttpRequest) -> HttpResponse:
    modules = list(modules_visible_to(user=request.user))
    if len(modules) == 1:
        return redirect("web:module", modules[0].slug)
    return render(request, "web/home.html", {"modules": modules, "nav": "learn"})


@login_required
@require_GET
def module_page(request: HttpRequest, module_slug: str) -> HttpResponse:
    module = _module_visible(request, module_slug)
    rows = selectors.learner_progress(module=module, user=request.user)
    context = {
        "module": module,
        "rows": rows,
        "summary": selectors.module_summary(rows),
        "mastery": learner_mastery(module=module, user=request.user),
        "shown_at": SHOWN,
        "nav": "learn",
    }
    return render(request, "web/module.html", context)


@login_required
@require_http_methods(["GET", "POST"])
def exercise_page(request: HttpRequest, module_slug: str, exercise_slug: str) -> HttpResponse:
    module, exercise = _exercise_visible(request, module_slug, exercise_slug)
    if request.method == "POST":
        return _submit(request, exercise)
    return _render_exercise(request, module, exercise)


def _module_visible(request: HttpRequest, module_slug: str) -> Module:
    """The module if the user is enrolled in it (or staff); a 404 for anyone else."""
    module = module_get(slug=module_slug)
    if not modules_visible_to(user=request.user).filter(pk=module.pk).exists():
        raise NotFound("No such module.")
    return module


def _exercise_visible(
    request: HttpRequest, module_slug: str, exercise_slug: str
) -> tuple[Module, Exercise]:
    """The exercise if the user may see it (enrolled, released, published); else a 404."""
    module = _module_visible(request, module_slug)
    exercise = exercise_get_in_module(module=module, slug=exercise_slug)
    if not exercises_visible_to(user=request.user).filter(pk=exercise.pk).exists():
        raise NotFound("No such exercise.")
    return module, exercise


def _render_exercise(
    request: HttpRequest,
    module: Module,
    exercise: Exercise,
    *,
    code: str | None = None,
    errors: list[str] | None = None,
    status: int = 200,
) -> HttpResponse:
    history = list(selectors.exercise_history(exercise=exercise, user=request.user))
    latest = history[0] if history else None
    version = exercise.current_version
    if version is None:  # exercise_get_in_module only finds published exercises
        raise NotFound("No such exercise.")
    draft = draft_to_open(draft=draft_get(learner=request.user, exercise=exercise), latest=latest)
    opened, origin = _opening_code(code, draft, latest, version.starter_code)
    context = {
        "module": module,
        "exercise": exercise,
        "statement_html": _trusted_statement(version.statement_html),
        "code": opened,
        "origin": origin,
        "starter_code": version.starter_code,
        "draft_url": reverse("web:exercise_draft", args=[module.slug, exercise.slug]),
        "draft_saved_at": draft.updated_at.isoformat() if draft else "",
        "deadline": deadline_view(deadline_for(exercise=exercise, learner_id=request.user.pk)),
        "latest": _feedback(latest, request) if latest else None,
        "pending_status_url": _status_url(latest) if latest and not _done(latest) else "",
        "history": [history_item(s) for s in history],
        "form_errors": errors or [],
        "crumbs": _crumbs(module, exercise.title),
        "nav": "learn",
    }
    return render(request, "web/exercise.html", context, status=status)


def _opening_code(
    posted: str | None, draft: Draft | None, latest: Submission | None, starter: str
) -> tuple[str, str]:
    """(the code the editor opens with, where it comes from, in words)."""
    if posted is not None:
        return posted, "This is the code you sent."
    if draft is not None:
        return draft.code, f"Restored your unsent code (saved {when(draft.updated_at)})."
    if latest is not None:
        return latest.code, "Restored from your last submission."
    return starter, "This is the starter code."


@login_required
@require_POST
def exercise_draft(request: HttpRequest, module_slug: str, exercise_slug: str) -> JsonResponse:
    """Keeps the editor's unsent code (posted by the page as the learner types)."""
    _, exercise = _exercise_visible(request, module_slug, exercise_slug)
    try:
        draft = draft_save(learner=request.user, exercise=exercise, code=request.POST.get("code"))
    except InvalidInput as error:
        return JsonResponse({"errors": error.errors}, status=400)
    return JsonResponse({"saved_at": draft.updated_at.isoformat(), "saved": when(draft.updated_at)})


def _trusted_statement(html: str) -> SafeString:
    # statement_html was sanitised with an allow-list (nh3) when the version was created.
    return mark_safe(html)


def _submit(request: HttpRequest, exercise: Exercise) -> HttpResponse:
    code = request.POST.get("code", "")
    try:
        submission, _ = submission_create(
            learner=request.user, exercise_slug=exercise.slug, code=code
        )
    except InvalidInput as error:
        return _rejected(request, exercise, code, error.errors, 400)
    except RateLimited as error:
        response = _rejected(request, exercise, code, {"code": [error.message]}, 429)
        response["Retry-After"] = str(error.retry_after)
        return response
    except DomainError as error:
        return _rejected(request, exercise, code, {"code": [error.message]}, 400)
    if _wants_json(request):
        return JsonResponse(_status_payload(submission, request=None), status=202)
    return redirect("web:submission", submission.pk)


def _rejected(
    request: HttpRequest, exercise: Exercise, code: str, errors: dict[str, list[str]], status: int
) -> HttpResponse:
    if _wants_json(request):
        return JsonResponse({"errors": errors}, status=status)
    messages = [m for field in errors.values() for m in field]
    return _render_exercise(
        request, exercise.module, exercise, code=code, errors=messages, status=status
    )


@login_required
@require_GET
def submission_page(request: HttpRequest, submission_id: int) -> HttpResponse:
    submission = submission_get(user=request.user, submission_id=submission_id)
    exercise = submission.exercise
    context = {
        "fb": _feedback(submission, request),
        "exercise": exercise,
        "submission": submission,
        "owner": submission.learner,
        "code": submission.code,
        "crumbs": _crumbs(
            exercise.module, exercise.title, exercise=exercise, last=f"Submission #{submission.pk}"
        ),
        **_review_context(submission, request),
    }
    return render(request, "web/submission.html", context)


def _review_context(submission: Submission, request: HttpRequest) -> dict[str, Any]:
    """For those who teach the module, a flagged submission's review: Release/Reject while
    held, Undo once decided, and the log of decisions."""
    if not submission.review or submission.status != Submission.Status.GRADED:
        return {"reviewing": False}
    if not module_is_taught_by(module_id=submission.exercise.module_id, user=request.user):
        return {"reviewing": False}
    decisions = submission.review_decisions.select_related("decided_by")
    return {"reviewing": True, "decisions": list(decisions)}


@login_required
@require_GET
def submission_status(request: HttpRequest, submission_id: int) -> JsonResponse:
    """Polled by the exercise page until `done`; then carries the rendered feedback."""
    submission = submission_get(user=request.user, submission_id=submission_id)
    return JsonResponse(_status_payload(submission, request=request))


def _done(submission: Submission) -> bool:
    return submission.status in (Submission.Status.GRADED, Submission.Status.FAILED)


def _status_url(submission: Submission) -> str:
    return reverse("web:submission_status", args=[submission.pk])


def _status_payload(submission: Submission, *, request: HttpRequest | None) -> dict[str, Any]:
    payload: dict[str, Any] = {
        "id": submission.pk,
        "status": submission.status,
        "done": _done(submission),
        "status_url": _status_url(submission),
        "url": reverse("web:submission", args=[submission.pk]),
    }
    place = queue_place(submission)
    if place is not None:
        payload["queue"] = {"position": place.position, "estimated_wait_s": place.estimated_wait_s}
    if payload["done"] and request is not None:
        feedback = _feedback(submission, request)
        payload.update(
            score=None if feedback.status == HELD else submission.score,
            max_score=submission.max_score,
            passed=None if feedback.status == HELD else submission.passed,
            held_for_review=submission.review == Submission.Review.HELD,
            late=submission.late,
            late_counts=submission.exercise.late_counts,
        )
        payload["feedback_html"] = render_to_string(
            "web/_feedback.html", {"fb": feedback}, request=request
        )
        if submission.learner_id == request.user.pk:
            history = selectors.exercise_history(exercise=submission.exercise, user=request.user)
            payload["history_html"] = render_to_string(
                "web/_history.html",
                {"history": [history_item(s) for s in history]},
                request=request,
            )
    return payload


def _feedback(submission: Submission, request: HttpRequest) -> Feedback:
    if not submission.review:  # never flagged: nothing to withhold or to review
        return feedback_for(submission)
    withheld = submission_result_withheld(submission=submission, user=request.user)
    teaches = module_is_taught_by(module_id=submission.exercise.module_id, user=request.user)
    return feedback_for(submission, withheld=withheld, show_review=teaches)


def _crumbs(
    module: Module, title: str, *, exercise: Exercise | None = None, last: str = ""
) -> list[tuple[str, str]]:
    crumbs: list[tuple[str, str]] = [(module.title, reverse("web:module", args=[module.slug]))]
    if exercise is not None:
        crumbs.append((title, reverse("web:exercise", args=[module.slug, exercise.slug])))
        crumbs.append((last, ""))
    else:
        crumbs.append((title, ""))
    return crumbs
