"""An exercise's due date and late policy, for its instructors: a change previewed (whose
scores it changes) and applied only once confirmed, and per-learner extensions. Each view
starts with courses.access.module_get_taught (403)."""

from __future__ import annotations

from urllib.parse import urlencode

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods, require_POST

from authoring.services import exercise_schedule_set
from common.errors import InvalidInput
from courses.access import module_get_taught, module_member_get
from courses.models import Exercise, Module
from courses.selectors import exercise_get_in_module
from submissions import late
from web.deadlines import Schedule, posted_schedule, posted_time
from web.views.authoring.base import error_text


def late_policy_url(module: Module, exercise: Exercise, schedule: Schedule) -> str:
    """The preview of `schedule` for `exercise` (where a change of dates is confirmed)."""
    base = reverse("web:late_policy", args=[module.slug, exercise.slug])
    return f"{base}?{urlencode(schedule.as_query())}"


@login_required
@require_http_methods(["GET", "POST"])
def late_policy(request: HttpRequest, module_slug: str, exercise_slug: str) -> HttpResponse:
    """GET: whose scores the dates in the query would change; POST (confirmed): apply."""
    module = module_get_taught(slug=module_slug, user=request.user)
    exercise = exercise_get_in_module(module=module, slug=exercise_slug)
    data = request.POST if request.method == "POST" else request.GET
    try:
        schedule = posted_schedule(data)
    except InvalidInput as error:
        messages.error(request, error_text(error))
        return redirect("web:teach_exercise", module.slug, exercise.slug)
    if request.method == "POST" and data.get("confirm") == "yes":
        return _apply(request, module, exercise, schedule)
    changes = late.late_policy_changes(
        exercise=exercise, due_at=schedule.due_at, late_counts=schedule.late_counts
    )
    context = {
        "module": module,
        "exercise": exercise,
        "schedule": schedule,
        "changes": changes,
        "crumbs": [
            (f"Teach: {module.title}", reverse("web:teach_module", args=[module.slug])),
            (exercise.title, reverse("web:teach_exercise", args=[module.slug, exercise.slug])),
            ("Change the due date or late policy", ""),
        ],
        "nav": "teach",
    }
    return render(request, "web/late_policy.html", context)


def _apply(
    request: HttpRequest, module: Module, exercise: Exercise, schedule: Schedule
) -> HttpResponse:
    try:
        exercise_schedule_set(
            exercise=exercise,
            release_at=schedule.release_at,
            due_at=schedule.due_at,
            late_counts=schedule.late_counts,
        )
    except InvalidInput as error:
        messages.error(request, error_text(error))
    else:
        messages.success(request, "Dates and late policy saved.")
    return redirect("web:teach_exercise", module.slug, exercise.slug)


@login_required
@require_POST
def extension_grant(request: HttpRequest, module_slug: str, exercise_slug: str) -> HttpResponse:
    module = module_get_taught(slug=module_slug, user=request.user)
    exercise = exercise_get_in_module(module=module, slug=exercise_slug)
    try:
        learner = module_member_get(module=module, user_id=_int(request.POST.get("learner")))
        due_at = posted_time(request.POST.get("due_at", ""), "due_at")
        if due_at is None:
            raise InvalidInput({"due_at": ["Give the learner's new due date."]})
        late.extension_grant(
            exercise=exercise, learner=learner, due_at=due_at, granted_by=request.user
        )
    except InvalidInput as error:
        messages.error(request, error_text(error))
    else:
        messages.success(request, f"{learner.get_username()}'s due date moved.")
    return redirect(_extensions_url(module, exercise))


@login_required
@require_POST
def extension_withdraw(
    request: HttpRequest, module_slug: str, exercise_slug: str, extension_id: int
) -> HttpResponse:
    module = module_get_taught(slug=module_slug, user=request.user)
    exercise = exercise_get_in_module(module=module, slug=exercise_slug)
    late.extension_withdraw(exercise=exercise, extension_id=extension_id)
    messages.success(request, "Extension withdrawn: the exercise's due date applies again.")
    return redirect(_extensions_url(module, exercise))


def _int(value: str | None) -> int:
    try:
        return int(value or "")
    except ValueError:
        raise InvalidInput({"learner": ["Choose a learner."]}) from None


def _extensions_url(module: Module, exercise: Exercise) -> str:
    return reverse("web:teach_exercise", args=[module.slug, exercise.slug]) + "#deadline"
