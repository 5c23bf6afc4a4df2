"""Instructor pages: class statistics, submissions held for review (release or reject),
the gradebook, one learner's work, one exercise's submissions, grade export, regrade and
validation of an exercise. Each starts with courses.access.module_get_taught (403)."""

from __future__ import annotations

import csv
from datetime import UTC
from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from authoring.jobs import exercise_job_create
from courses.access import module_get_taught, module_member_get
from courses.models import ExerciseJob
from courses.selectors import exercise_get_in_module
from lti.bindings import module_lms_links
from lti.passback import score_failures
from submissions.late import extensions_of
from submissions.mastery import SHOWN, class_mastery, learner_mastery_of
from submissions.services import submission_review, submission_review_check
from web import selectors
from web.deadlines import Schedule
from web.gradebook import (
    STATUS_CHOICES,
    GradebookQuery,
    SubmissionsQuery,
    gradebook_table,
    submissions_page,
)
from web.mistakes import learner_mistakes
from web.presenters import history_item
from web.selectors import GradeRow
from web.views.enrolment import links_panel

VALIDATE = ExerciseJob.Kind.VALIDATE
REGRADE = ExerciseJob.Kind.REGRADE
REGRADE_PREVIEW = ExerciseJob.Kind.REGRADE_PREVIEW


@login_required
@require_GET
def teach_module(request: HttpRequest, module_slug: str) -> HttpResponse:
    module = module_get_taught(slug=module_slug, user=request.user)
    held, reviewed = selectors.flagged_submissions(module)
    context = {
        "module": module,
        "held": held,
        "reviewed": reviewed,
        "stats": selectors.exercise_stats(module),
        "mastery": class_mastery(module=module),
        "shown_at": SHOWN,
        "gradebook": gradebook_table(module, GradebookQuery.from_get(request.GET)),
        "lms_failures": score_failures(module_id=module.pk),
        "lms_links": module_lms_links(module_id=module.pk),
        "enrolment": links_panel(request, module),
        "nav": "teach",
    }
    return render(request, "web/teach_module.html", context)


@login_required
@require_GET
def teach_learner(request: HttpRequest, module_slug: str, user_id: int) -> HttpResponse:
    module = module_get_taught(slug=module_slug, user=request.user)
    learner = module_member_get(module=module, user_id=user_id)
    submissions = selectors.learner_submissions(module=module, learner_id=learner.pk)
    context = {
        "module": module,
        "learner": learner,
        "rows": [(s.exercise, history_item(s)) for s in submissions],
        "mastery": learner_mastery_of(module=module, learner_id=learner.pk),
        "mistakes": learner_mistakes(module=module, learner_id=learner.pk),
        "shown_at": SHOWN,
        "crumbs": [(f"Teach: {module.title}", _teach_url(module)), (learner.get_username(), "")],
        "nav": "teach",
    }
    return render(request, "web/teach_learner.html", context)


@login_required
@require_GET
def exercise_submissions(
    request: HttpRequest, module_slug: str, exercise_slug: str
) -> HttpResponse:
    module = module_get_taught(slug=module_slug, user=request.user)
    exercise = exercise_get_in_module(module=module, slug=exercise_slug)
    query = SubmissionsQuery.from_get(request.GET)
    context = {
        "module": module,
        "exercise": exercise,
        "query": query,
        "page": submissions_page(exercise, query),
        "statuses": STATUS_CHOICES,
        "crumbs": [
            (f"Teach: {module.title}", _teach_url(module)),
            (exercise.title, reverse("web:teach_exercise", args=[module.slug, exercise.slug])),
            ("Submissions", ""),
        ],
        "nav": "teach",
    }
    return render(request, "web/exercise_submissions.html", context)


@login_required
@require_GET
def grades_csv(request: HttpRequest, module_slug: str) -> HttpResponse:
    module = module_get_taught(slug=module_slug, user=request.user)
    # Always the whole gradebook, by username: the page's search and sort do not apply.
    exercises, grades = selectors.gradebook(module)
    response = HttpResponse(content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{module.slug}-grades.csv"'
    writer = csv.writer(response)
    # Per exercise: the best score that counts, then when the learner last submitted it
    # (ISO 8601, UTC) and whether that submission was late.
    per_exercise = ((e.slug, f"{e.slug} last submitted (UTC)", f"{e.slug} late") for e in exercises)
    writer.writerow(
        ["username", "email", *(h for heads in per_exercise for h in heads), "total", "max_total"]
    )
    max_total = sum(e.points for e in exercises)
    for row in grades:
        writer.writerow(
            [
                _csv_text(row.username),
                _csv_text(row.email),
                *(cell for cells in _exercise_cells(row) for cell in cells),
                _number(row.total),
                _number(max_total),
            ]
        )
    return response


def _exercise_cells(row: GradeRow) -> list[tuple[str, str, str]]:
    return [
        (
            "" if score is None else _number(score),
            "" if submitted is None else submitted.astimezone(UTC).isoformat(timespec="seconds"),
            ("yes" if late else "no") if submitted is not None else "",
        )
        for score, submitted, late in zip(row.scores, row.submitted, row.late, strict=True)
    ]


def _number(value: float) -> str:
    return f"{value:g}"


# What makes a spreadsheet read a cell as a formula (OWASP "CSV injection"): = + - @ first,
# or TAB / CR first (some spreadsheets drop them and read the rest), or any of them after
# leading blanks. Names and e-mails come from learners and from LMSs.
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def _csv_text(value: str) -> str:
    """The cell as text a spreadsheet shows and never evaluates."""
    risky = value[:1] in FORMULA_STARTS or value.lstrip(" \t\r\n")[:1] in FORMULA_STARTS
    return "'" + value if risky else value


@login_required
@require_GET
def teach_exercise(request: HttpRequest, module_slug: str, exercise_slug: str) -> HttpResponse:
    module = module_get_taught(slug=module_slug, user=request.user)
    exercise = exercise_get_in_module(module=module, slug=exercise_slug)
    stats = next(s for s in selectors.exercise_stats(module) if s.slug == exercise.slug)
    validation = selectors.latest_job(exercise, VALIDATE)
    regrade = selectors.latest_job(exercise, REGRADE)
    regrade_previewed = selectors.latest_job(exercise, REGRADE_PREVIEW)
    context = {
        "module": module,
        "exercise": exercise,
        "stats": stats,
        "versions": exercise.versions.filter(number__isnull=False).order_by("-number"),
        "validation": validation,
        "regrade": regrade,
        "regrade_previewed": regrade_previewed,
        "refresh": any(
            job is not None and job.pending for job in (validation, regrade, regrade_previewed)
        ),
        "stale_submissions": selectors.stale_submissions(exercise),
        "schedule": Schedule(exercise.release_at, exercise.due_at, exercise.late_counts),
        "extensions": extensions_of(exercise),
        "learners": selectors.module_learners(module),
        "crumbs": [(f"Teach: {module.title}", _teach_url(module)), (exercise.title, "")],
        "nav": "teach",
    }
    return render(request, "web/teach_exercise.html", context)


@login_required
@require_POST
def validate_exercise(request: HttpRequest, module_slug: str, exercise_slug: str) -> HttpResponse:
    return _start_job(request, module_slug, exercise_slug, VALIDATE)


@login_required
@require_POST
def regrade_preview(request: HttpRequest, module_slug: str, exercise_slug: str) -> HttpResponse:
    return _start_job(request, module_slug, exercise_slug, REGRADE_PREVIEW)


@login_required
@require_POST
def regrade_exercise(request: HttpRequest, module_slug: str, exercise_slug: str) -> HttpResponse:
    return _start_job(request, module_slug, exercise_slug, REGRADE)


def _start_job(
    request: HttpRequest, module_slug: str, exercise_slug: str, kind: str
) -> HttpResponse:
    module = module_get_taught(slug=module_slug, user=request.user)
    exercise = exercise_get_in_module(module=module, slug=exercise_slug)
    exercise_job_create(exercise=exercise, kind=kind, user=request.user)
    return redirect("web:teach_exercise", module.slug, exercise.slug)


@login_required
@require_POST
def review_submission(request: HttpRequest, module_slug: str, submission_id: int) -> HttpResponse:
    """Release (the grader's score counts) or reject (score 0) a submission held for review,
    or undo such a decision. The first post shows what it would do and asks to confirm;
    only a post with confirmed=yes decides."""
    module = module_get_taught(slug=module_slug, user=request.user)
    decision = request.POST.get("decision", "")
    back = _review_back(request, module, submission_id)
    confirmed = request.POST.get("confirmed") == "yes"
    act = submission_review if confirmed else submission_review_check  # check: changes nothing
    submission = act(
        submission_id=submission_id, module=module, reviewer=request.user, decision=decision
    )
    if confirmed:
        return redirect(back)
    context = {
        "module": module,
        "submission": submission,
        "decision": decision,
        "back": request.POST.get("back", ""),
        "cancel_url": back,
        "row": selectors.flagged_row(submission),
    }
    return render(request, "web/review_confirm.html", context)


def _review_back(request: HttpRequest, module: Any, submission_id: int) -> str:
    """Where a review returns: the submission's page, or the module's list of held work."""
    if request.POST.get("back") == "submission":
        return reverse("web:submission", args=[submission_id])
    return f"{_teach_url(module)}#review"


def _teach_url(module: Any) -> str:
    return reverse("web:teach_module", args=[module.slug])
