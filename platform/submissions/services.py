"""Writes for submissions: create (validate, rate-limit, enqueue after commit), grade (claim,
run the grader, save the report once), sweep (re-queue what was lost), regrade.

A submission's row is the source of truth. The broker only carries its id: a message can be
lost (the sweep re-sends it) or delivered twice (the conditional claim ignores the second).
Claim, enqueue, release and sweep are common.jobs, shared with the instructor jobs.
"""

from __future__ import annotations

import enum
import logging
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from celery.exceptions import SoftTimeLimitExceeded
from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import DatabaseError, transaction
from django.db.models import QuerySet
from django.utils import timezone

from accounts.selectors import AnyUser
from common import jobs, ratelimit
from common.errors import Conflict, Forbidden, InvalidInput, NotFound
from common.logs import job_context
from common.text import NOT_TEXT, has_lone_surrogate
from courses.access import module_is_taught_by
from courses.models import Exercise, ExerciseVersion, Module
from courses.selectors import exercise_visible_get
from grader.protocol import ExerciseError, InfrastructureError, Report
from grading import bridge
from submissions import signals
from submissions.late import due_for
from submissions.models import CheckResult, ReviewDecision, Submission

logger = logging.getLogger(__name__)

CHECK_NAME_MAX_LENGTH = 300  # CheckResult.name
DIAGNOSIS_MAX_LENGTH = 100  # CheckResult.diagnosis
MESSAGE_INFRASTRUCTURE = (
    "We could not grade this submission because of a fault on our side (tried {attempts} "
    "times). It does not count against you: please submit again later."
)
MESSAGE_EXERCISE = (
    "This exercise is currently broken on our side, so the submission could not be graded. "
    "It does not count against you; your instructor has been told."
)
MESSAGE_LOST = (
    "Grading did not finish after {attempts} attempts (the grading worker stopped). "
    "It does not count against you: please submit again later."
)
Status = Submission.Status
Review = Submission.Review
REVIEW_DECISIONS = {"release": Review.RELEASED, "reject": Review.REJECTED, "undo": Review.HELD}


# -- create ------------------------------------------------------------------------------


def code_validate(code: object) -> str:
    if not isinstance(code, str):
        raise InvalidInput({"code": "Code must be a string."})
    if not code.strip():
        raise InvalidInput({"code": "Code must not be empty."})
    if "\x00" in code:
        raise InvalidInput({"code": "Code must not contain NUL bytes."})
    if has_lone_surrogate(code):
        raise InvalidInput({"code": f"Code: {NOT_TEXT}"})
    size = len(code.encode("utf-8", errors="surrogatepass"))
    limit = settings.GRADLAB_CODE_MAX_BYTES
    if size > limit:
        raise InvalidInput({"code": f"Code is {size} bytes; the limit is {limit} bytes."})
    return code


def submission_create(
    *,
    learner: AnyUser,
    exercise_slug: str,
    code: str,
) -> tuple[Submission, bool]:
    """Returns (submission, created)."""
    if not learner.is_authenticated:
        raise Forbidden("Sign in to submit.")
    code = code_validate(code)
    try:
        exercise = exercise_visible_get(slug=exercise_slug, user=learner)
    except NotFound:
        raise InvalidInput({"exercise": f"Unknown exercise {exercise_slug!r}."}) from None
    version_id = exercise.current_version_id
    if version_id is None:  # exercise_get finds only published exercises
        raise InvalidInput({"exercise": f"Exercise {exercise_slug!r} is not published."})
    with transaction.atomic():
        # One learner's submissions are created one at a time: the rate limit is then
        # exact, even across processes.
        get_user_model().objects.select_for_update().filter(pk=learner.pk).first()
        rate_limit_check(learner=learner)
        submission = Submission.objects.create(
            learner_id=learner.pk,
            exercise=exercise,
            version_id=version_id,
            code=code,
            late=_is_late(exercise, learner),
            lease_expires_at=jobs.job_queued_until(SUBMISSIONS),
        )
        jobs.job_enqueue_on_commit(SUBMISSIONS, job_id=submission.pk, queue=queue_for(exercise))
    return submission, True


def _is_late(exercise: Exercise, learner: AnyUser) -> bool:
    """After the learner's due date (the exercise's, or their extension: submissions.late)."""
    due_at = due_for(exercise=exercise, learner_id=learner.pk)
    return due_at is not None and timezone.now() > due_at


def submission_preview_create(
    *, user: AnyUser, exercise: Exercise, version: ExerciseVersion, code: str
) -> Submission:
    """An instructor or reviewer tries `version` (a draft, perhaps) as a learner would: graded
    like any submission, counted nowhere (`preview`). The caller checked their access."""
    if not user.is_authenticated:
        raise Forbidden("Sign in to submit.")
    if version.exercise_id != exercise.pk:
        raise InvalidInput({"version": ["Not a version of this exercise."]})
    code = code_validate(code)
    with transaction.atomic():
        get_user_model().objects.select_for_update().filter(pk=user.pk).first()
        rate_limit_check(learner=user)
        submission = Submission.objects.create(
            learner_id=user.pk,
            exercise=exercise,
            version=version,
            code=code,
            preview=True,
            lease_expires_at=jobs.job_queued_until(SUBMISSIONS),
        )
        jobs.job_enqueue_on_commit(SUBMISSIONS, job_id=submission.pk, queue=queue_for(exercise))
    return submission


def rate_limit_check(*, learner: AnyUser) -> None:
    """At most GRADLAB_RATE_LIMIT_COUNT submissions per window, counted in the database.
    Submissions we failed to grade are not counted."""
    ratelimit.window_check(
        Submission.objects.filter(learner_id=learner.pk).exclude(status=Status.FAILED),
        limit=settings.GRADLAB_RATE_LIMIT_COUNT,
        window_s=settings.GRADLAB_RATE_LIMIT_WINDOW_SECONDS,
        what="submissions",
    )


def queue_for(exercise: Exercise) -> str:
    if exercise.device == Exercise.Device.CUDA and settings.GRADLAB_GPU_QUEUE_ENABLED:
        return settings.GRADLAB_QUEUE_GPU
    return settings.GRADLAB_QUEUE_CPU


def _lost_fields(submission: Submission, now: datetime) -> dict[str, Any]:
    return {
        "status": Status.FAILED,
        "graded_at": now,
        "lease_expires_at": None,
        "error_message": MESSAGE_LOST.format(attempts=submission.attempts),
    }


SUBMISSIONS: jobs.JobKind[Submission] = jobs.JobKind(
    name="submission",
    model=Submission,
    task_name="gradlab.grade_submission",
    queue_of=lambda submission: queue_for(submission.exercise),
    running_lease_seconds=lambda: settings.GRADLAB_RUNNING_LEASE_SECONDS,
    queued_lease_seconds=lambda: settings.GRADLAB_QUEUED_LEASE_SECONDS,
    max_attempts=lambda: settings.GRADLAB_MAX_ATTEMPTS,
    lost_fields=_lost_fields,
)


# -- grade -------------------------------------------------------------------------------


class Outcome(str, enum.Enum):
    GRADED = "graded"
    FAILED = "failed"
    RETRY = "retry"
    SKIPPED = "skipped"  # not ours to grade (already claimed, graded, or gone)


def _hidden_seed(submission: Submission) -> int:
    """The submission's own hidden-case seed, derived and stored at its first grading."""
    if submission.hidden_seed is None:
        submission.hidden_seed = bridge.seed_for(submission.version.hidden_seed, submission.pk)
        submission.save(update_fields=["hidden_seed"])
    return submission.hidden_seed


def submission_grade(*, submission_id: int) -> Outcome:
    """Claims the submission (queued -> running), grades it, saves the report once."""
    attempt = jobs.job_claim(SUBMISSIONS, job_id=submission_id)
    if attempt is None:
        logger.info("submission %s: not queued, skipping this delivery", submission_id)
        return Outcome.SKIPPED
    job_id = f"submission-{submission_id}-{attempt}"  # the sandbox's job id too
    with job_context(submission_id=submission_id, job_id=job_id):
        return _grade_claimed(submission_id, attempt, job_id)


# What grading reads of a version: its files and hidden seed, not its rendered statement.
VERSION_TEXT = ("version__manifest", "version__statement", "version__statement_html",
                "version__starter_code")  # fmt: skip


def _grade_claimed(submission_id: int, attempt: int, job_id: str) -> Outcome:
    submission = (
        Submission.objects.select_related("version").defer(*VERSION_TEXT).get(pk=submission_id)
    )
    try:
        report = bridge.run_grader(
            files=submission.version.files,
            code=submission.code,
            seed=_hidden_seed(submission),
            job_id=job_id,
        )
    except (InfrastructureError, SoftTimeLimitExceeded) as error:
        logger.warning("submission %s attempt %s: infrastructure fault: %s",
                       submission_id, attempt, error)  # fmt: skip
        return _after_infrastructure_fault(submission, attempt)
    except ExerciseError as error:
        logger.error("submission %s: exercise %s is broken: %s",
                     submission_id, submission.exercise_id, error)  # fmt: skip
        _finish_failed(submission_id, attempt, MESSAGE_EXERCISE)
        return Outcome.FAILED
    except Exception:
        # A bug on our side is our fault too: retried, never charged to the learner.
        logger.exception("submission %s attempt %s: grading crashed", submission_id, attempt)
        return _after_infrastructure_fault(submission, attempt)
    try:
        saved = _finish_graded(submission_id, attempt, report)
    except DatabaseError as error:
        # The report's transaction rolled back as a whole: nothing half-written. Retried.
        logger.warning("submission %s attempt %s: the report could not be saved: %s",
                       submission_id, attempt, error)  # fmt: skip
        return _after_infrastructure_fault(submission, attempt)
    if saved:
        logger.info("submission %s attempt %s: graded", submission_id, attempt)
    return Outcome.GRADED if saved else Outcome.SKIPPED


def _owned(submission_id: int, attempt: int) -> QuerySet[Submission]:
    return jobs.job_owned(SUBMISSIONS, job_id=submission_id, attempt=attempt)


def _finish_graded(submission_id: int, attempt: int, report: Report) -> bool:
    with transaction.atomic():
        updated = _owned(submission_id, attempt).update(
            status=Status.GRADED,
            graded_at=timezone.now(),
            lease_expires_at=None,
            **_report_fields(report, review=Review.NONE),
        )
        if updated != 1:
            logger.warning("submission %s attempt %s lost its claim; report discarded",
                           submission_id, attempt)  # fmt: skip
            return False
        _save_checks(submission_id, report)
        _tell_integrations(submission_id)
    return True


def _tell_integrations(submission_id: int) -> None:
    """Webhooks (and LMS grade passback) of the new grade: outbox rows written in the
    transaction of the grade itself, sent by a worker once it commits (submissions.signals:
    integrations and lti receive it)."""
    if Submission.objects.filter(pk=submission_id, preview=True).exists():
        return  # a preview counts nowhere
    signals.submission_graded(submission_id=submission_id)


def _report_fields(report: Report, *, review: str) -> dict[str, Any]:
    """The row's fields for a new report. A report with integrity flags puts a submission
    that nobody reviewed yet on hold: no score until an instructor decides (the grader's
    score stays in the report). A decision already taken stands for a regrade: released,
    the new score counts; rejected, it stays 0."""
    fields: dict[str, Any] = {
        "score": report.score,
        "max_score": report.max_score,
        "passed": report.passed,
        "report": bridge.json_safe(report.to_json()),
        "error_message": bridge.text_safe(report.message),
    }
    if review == Review.NONE and report.integrity_flags:
        review = Review.HELD
    if review == Review.HELD:
        fields.update(score=None, passed=None)
    elif review == Review.REJECTED:
        fields.update(score=0.0, passed=False)
    return {**fields, "review": review}


def _save_checks(submission_id: int, report: Report) -> None:
    CheckResult.objects.filter(submission_id=submission_id).delete()
    CheckResult.objects.bulk_create(
        CheckResult(
            submission_id=submission_id,
            order=index,
            name=bridge.text_safe(check.name)[:CHECK_NAME_MAX_LENGTH],
            passed=check.passed,
            score=check.score,
            max_score=check.max_score,
            message=bridge.text_safe(check.message),
            diagnosis=check.diagnosis[:DIAGNOSIS_MAX_LENGTH],
            hint=bridge.text_safe(check.hint),
        )
        for index, check in enumerate(report.checks)
    )


def _finish_failed(submission_id: int, attempt: int, message: str) -> bool:
    """Not gradable by us: no score, never counted as a wrong answer."""
    updated = _owned(submission_id, attempt).update(
        status=Status.FAILED,
        graded_at=timezone.now(),
        lease_expires_at=None,
        score=None,
        passed=None,
        error_message=message,
    )
    return updated == 1


def _after_infrastructure_fault(submission: Submission, attempt: int) -> Outcome:
    if attempt >= settings.GRADLAB_MAX_ATTEMPTS:
        _finish_failed(submission.pk, attempt, MESSAGE_INFRASTRUCTURE.format(attempts=attempt))
        return Outcome.FAILED
    countdown = jobs.retry_backoff_seconds(
        attempt,
        base=settings.GRADLAB_RETRY_BACKOFF_SECONDS,
        cap=settings.GRADLAB_RETRY_BACKOFF_MAX_SECONDS,
    )
    jobs.job_release(SUBMISSIONS, row=submission, attempt=attempt, countdown=countdown)
    return Outcome.RETRY


# -- sweep -------------------------------------------------------------------------------


def submissions_sweep(*, now: datetime | None = None) -> jobs.SweepResult:
    """Re-queues submissions whose lease expired: queued ones the broker lost, running
    ones whose worker died. One that already used every attempt is marked failed."""
    return jobs.jobs_sweep(SUBMISSIONS, now=now)


# -- regrade -----------------------------------------------------------------------------


@dataclass(frozen=True)
class ScoreChange:
    submission_id: int
    learner: str
    old_score: float | None
    new_score: float | None
    old_passed: bool | None
    new_passed: bool | None


@dataclass(frozen=True)
class RegradeResult:
    exercise: str
    version: int
    regraded: int
    changed: tuple[ScoreChange, ...]
    errors: tuple[int, ...]  # submissions that could not be regraded (left as they were)


def exercise_regrade(*, exercise: Exercise, apply: bool = True) -> RegradeResult:
    """Regrades every graded submission of `exercise` against its current version, here and
    now (synchronously), and reports whose score or pass/fail changed. With apply=False
    (a regrade preview) nothing is written: the report says whose score would change."""
    version = exercise.current_version
    if version is None:
        raise NotFound(f"Exercise {exercise.slug!r} has no version to regrade against.")
    changed: list[ScoreChange] = []
    errors: list[int] = []
    graded = Submission.objects.filter(exercise=exercise, status=Status.GRADED, preview=False)
    submissions = list(graded.select_related("learner").order_by("id"))
    for submission in submissions:
        try:
            report = bridge.run_grader(
                files=version.files,
                code=submission.code,
                seed=bridge.seed_for(version.hidden_seed, submission.pk),
                job_id=f"regrade-{submission.pk}-v{version.number}",
            )
        except (InfrastructureError, ExerciseError) as error:
            logger.warning("regrade of submission %s failed: %s", submission.pk, error)
            errors.append(submission.pk)
            continue
        change = (
            _apply_regrade(submission, version.pk, report)
            if apply
            else _score_change(submission, _report_fields(report, review=submission.review))
        )
        if change is not None:
            changed.append(change)
    return RegradeResult(
        exercise=exercise.slug,
        version=version.number or 0,
        regraded=len(submissions) - len(errors),
        changed=tuple(changed),
        errors=tuple(errors),
    )


def _apply_regrade(submission: Submission, version_id: int, report: Report) -> ScoreChange | None:
    with transaction.atomic():
        fields = _report_fields(report, review=submission.review)
        Submission.objects.filter(pk=submission.pk).update(
            version_id=version_id, graded_at=timezone.now(), **fields
        )
        _save_checks(submission.pk, report)
        if submission.score != fields["score"] or submission.passed != fields["passed"]:
            _tell_integrations(submission.pk)
    return _score_change(submission, fields)


def _score_change(submission: Submission, fields: dict[str, Any]) -> ScoreChange | None:
    if submission.score == fields["score"] and submission.passed == fields["passed"]:
        return None
    return ScoreChange(
        submission_id=submission.pk,
        learner=submission.learner.get_username(),
        old_score=submission.score,
        new_score=fields["score"],
        old_passed=submission.passed,
        new_passed=fields["passed"],
    )


# -- integrity review ------------------------------------------------------------------


def submission_review_check(
    *, submission_id: int, module: Module, reviewer: AnyUser, decision: str
) -> Submission:
    """The submission that `decision` ("release", "reject" or "undo") would act on, with
    nothing changed: the confirmation step shows it. Refuses what submission_review would."""
    review = REVIEW_DECISIONS.get(decision)
    if review is None:
        raise InvalidInput({"decision": "Decide with 'release', 'reject' or 'undo'."})
    if not module_is_taught_by(module_id=module.pk, user=reviewer):
        raise NotFound(f"No submission {submission_id}.")
    submission = Submission.objects.filter(pk=submission_id, exercise__module=module).first()
    if submission is None:
        raise NotFound(f"No submission {submission_id}.")
    if submission.status != Status.GRADED or submission.review not in _REVIEWABLE[review]:
        raise Conflict(_NOT_REVIEWABLE[review].format(id=submission_id))
    return submission


def submission_review(
    *, submission_id: int, module: Module, reviewer: AnyUser, decision: str
) -> Submission:
    """An instructor of `module` decides on a submission held for review: "release" (the
    grader's score counts) or "reject" (score 0); or "undo" puts a decided one back on
    hold. Who and when are kept on the row, and each decision in its ReviewDecision log."""
    submission = submission_review_check(
        submission_id=submission_id, module=module, reviewer=reviewer, decision=decision
    )
    review = REVIEW_DECISIONS[decision]
    with transaction.atomic():
        decided = Submission.objects.filter(
            pk=submission_id, status=Status.GRADED, review__in=_REVIEWABLE[review]
        ).update(review=review, **_decided_fields(submission, review, reviewer))
        if decided != 1:
            raise Conflict(_NOT_REVIEWABLE[review].format(id=submission_id))
        ReviewDecision.objects.create(
            submission_id=submission_id, action=_LOGGED_AS[review], decided_by_id=reviewer.pk
        )
        _tell_integrations(submission_id)
    logger.info("submission %s %s after review by %s", submission_id, review or "held again",
                reviewer.get_username())  # fmt: skip
    submission.refresh_from_db()
    return submission


# The review a decision leads to -> the reviews it may start from.
_REVIEWABLE = {
    Review.RELEASED: (Review.HELD,),
    Review.REJECTED: (Review.HELD,),
    Review.HELD: (Review.RELEASED, Review.REJECTED),  # an undo
}
_NOT_REVIEWABLE = {
    Review.RELEASED: "Submission {id} is not held for review.",
    Review.REJECTED: "Submission {id} is not held for review.",
    Review.HELD: "Submission {id} has no review decision to undo.",
}
_LOGGED_AS = {
    Review.RELEASED: ReviewDecision.Action.RELEASED,
    Review.REJECTED: ReviewDecision.Action.REJECTED,
    Review.HELD: ReviewDecision.Action.UNDONE,
}


def _decided_fields(submission: Submission, review: str, reviewer: AnyUser) -> dict[str, Any]:
    if review == Review.HELD:  # undone: held again, no score, nobody decided yet
        return {"score": None, "passed": None, "reviewed_by_id": None, "reviewed_at": None}
    return {
        "reviewed_by_id": reviewer.pk,
        "reviewed_at": timezone.now(),
        **_decided_score(submission, review),
    }


def _decided_score(submission: Submission, review: str) -> dict[str, Any]:
    if review == Review.REJECTED:
        return {"score": 0.0, "passed": False}
    report = submission.report if isinstance(submission.report, dict) else {}
    score, passed = report.get("score"), report.get("passed")
    return {
        "score": float(score) if isinstance(score, int | float) else 0.0,
        "passed": passed is True,
    }
