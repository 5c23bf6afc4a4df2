"""Writes for submissions: create (validate, rate-limit, enqueue after commit), grade (claim,
run the grader, save the report once), sweep (re-queue what was lost), regrade.

A submission's row is the source of truth. The broker only carries its id: a message can be
lost (the sweep re-sends it) or delivered twice (the conditional claim ignores the second).
"""

from __future__ import annotations

import enum
import logging
import math
from dataclasses import dataclass
from datetime import datetime, timedelta

from celery.exceptions import SoftTimeLimitExceeded
from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.db.models import F, QuerySet
from django.utils import timezone

from common.errors import Conflict, InvalidInput, NotFound, RateLimited
from courses.models import Exercise
from courses.selectors import exercise_get
from grader.protocol import ExerciseError, InfrastructureError, Report
from submissions import grading
from submissions.models import CheckResult, Submission

logger = logging.getLogger(__name__)

IDEMPOTENCY_KEY_MAX_LENGTH = 255
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


# -- create ------------------------------------------------------------------------------


def code_validate(code: object) -> str:
    if not isinstance(code, str):
        raise InvalidInput({"code": "Code must be a string."})
    if not code.strip():
        raise InvalidInput({"code": "Code must not be empty."})
    if "\x00" in code:
        raise InvalidInput({"code": "Code must not contain NUL bytes."})
    size = len(code.encode("utf-8", errors="surrogatepass"))
    limit = settings.GRADLAB_CODE_MAX_BYTES
    if size > limit:
        raise InvalidInput({"code": f"Code is {size} bytes; the limit is {limit} bytes."})
    return code


def idempotency_key_validate(key: str | None) -> str | None:
    if key is None:
        return None
    if not key or len(key) > IDEMPOTENCY_KEY_MAX_LENGTH or not key.isprintable():
        raise InvalidInput(
            {
                "idempotency_key": "Idempotency-Key must be 1 to "
                f"{IDEMPOTENCY_KEY_MAX_LENGTH} printable characters."
            }
        )
    return key


def submission_create(
    *,
    learner: AbstractBaseUser,
    exercise_slug: str,
    code: str,
    idempotency_key: str | None = None,
) -> tuple[Submission, bool]:
    """Returns (submission, created). With an idempotency key already used by this learner
    for the same request, returns that submission and False."""
    code = code_validate(code)
    key = idempotency_key_validate(idempotency_key)
    try:
        exercise = exercise_get(slug=exercise_slug)
    except NotFound:
        raise InvalidInput({"exercise": f"Unknown exercise {exercise_slug!r}."}) from None
    with transaction.atomic():
        # One learner's submissions are created one at a time: the rate limit and the
        # idempotency check are then exact, even across processes.
        get_user_model().objects.select_for_update().filter(pk=learner.pk).first()
        if key is not None:
            existing = Submission.objects.filter(learner=learner, idempotency_key=key).first()
            if existing is not None:
                return _replay(existing, exercise=exercise, code=code), False
        rate_limit_check(learner=learner)
        submission = Submission.objects.create(
            learner=learner,
            exercise=exercise,
            version=exercise.current_version,
            code=code,
            idempotency_key=key,
            lease_expires_at=timezone.now() + timedelta(seconds=queued_lease_seconds()),
        )
        queue = queue_for(exercise)
        transaction.on_commit(lambda: submission_enqueue(submission_id=submission.pk, queue=queue))
    return submission, True


def _replay(existing: Submission, *, exercise: Exercise, code: str) -> Submission:
    if existing.exercise_id != exercise.pk or existing.code != code:
        raise Conflict(
            "This Idempotency-Key was already used for a different submission; "
            "use a new key for new code."
        )
    return existing


def rate_limit_check(*, learner: AbstractBaseUser) -> None:
    """At most GRADLAB_RATE_LIMIT_COUNT submissions per window, counted in the database.
    Submissions we failed to grade are not counted."""
    window = settings.GRADLAB_RATE_LIMIT_WINDOW_SECONDS
    now = timezone.now()
    recent = Submission.objects.filter(
        learner=learner, created_at__gt=now - timedelta(seconds=window)
    ).exclude(status=Status.FAILED)
    limit = settings.GRADLAB_RATE_LIMIT_COUNT
    if recent.count() < limit:
        return
    oldest = recent.order_by("created_at").values_list("created_at", flat=True).first()
    assert oldest is not None
    retry_after = max(1, math.ceil((oldest + timedelta(seconds=window) - now).total_seconds()))
    raise RateLimited(
        f"Too many submissions: at most {limit} per {window} s. Try again in {retry_after} s.",
        retry_after=retry_after,
    )


def queue_for(exercise: Exercise) -> str:
    if exercise.device == Exercise.Device.CUDA and settings.GRADLAB_GPU_QUEUE_ENABLED:
        return settings.GRADLAB_QUEUE_GPU
    return settings.GRADLAB_QUEUE_CPU


def queued_lease_seconds() -> int:
    return settings.GRADLAB_QUEUED_LEASE_SECONDS


def submission_enqueue(*, submission_id: int, queue: str, countdown: float = 0) -> bool:
    """Sends the grading task. Call it only after the row is committed. A broker failure is
    logged, not raised: the row stays queued and the sweep sends it again later."""
    from submissions.tasks import grade_submission

    try:
        grade_submission.apply_async(args=[submission_id], queue=queue, countdown=countdown)
    except Exception:
        logger.exception("could not enqueue submission %s; the sweep will retry", submission_id)
        return False
    return True


# -- grade -------------------------------------------------------------------------------


class Outcome(str, enum.Enum):
    GRADED = "graded"
    FAILED = "failed"
    RETRY = "retry"
    SKIPPED = "skipped"  # not ours to grade (already claimed, graded, or gone)


def submission_grade(*, submission_id: int) -> Outcome:
    """Claims the submission (queued -> running), grades it, saves the report once."""
    attempt = _claim(submission_id)
    if attempt is None:
        logger.info("submission %s: not queued, skipping this delivery", submission_id)
        return Outcome.SKIPPED
    submission = Submission.objects.select_related("version").get(pk=submission_id)
    try:
        report = grading.run_grader(
            files=submission.version.files,
            code=submission.code,
            seed=submission.version.hidden_seed,
            job_id=f"submission-{submission_id}-{attempt}",
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
    return Outcome.GRADED if _finish_graded(submission_id, attempt, report) else Outcome.SKIPPED


def _claim(submission_id: int) -> int | None:
    """The conditional update that makes grading happen at most once per claim. Returns
    the attempt number (the fencing token for the final write) or None."""
    now = timezone.now()
    lease = timedelta(seconds=settings.GRADLAB_RUNNING_LEASE_SECONDS)
    with transaction.atomic():
        claimed = Submission.objects.filter(pk=submission_id, status=Status.QUEUED).update(
            status=Status.RUNNING,
            attempts=F("attempts") + 1,
            started_at=now,
            lease_expires_at=now + lease,
        )
        if claimed != 1:
            return None
        return Submission.objects.values_list("attempts", flat=True).get(pk=submission_id)


def _owned(submission_id: int, attempt: int) -> QuerySet[Submission]:
    return Submission.objects.filter(pk=submission_id, status=Status.RUNNING, attempts=attempt)


def _finish_graded(submission_id: int, attempt: int, report: Report) -> bool:
    with transaction.atomic():
        updated = _owned(submission_id, attempt).update(
            status=Status.GRADED,
            graded_at=timezone.now(),
            lease_expires_at=None,
            score=report.score,
            max_score=report.max_score,
            passed=report.passed,
            report=grading.json_safe(report.to_json()),
            error_message=grading.text_safe(report.message),
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
    transaction of the grade itself, sent by a worker once it commits."""
    from integrations.events import submission_graded

    submission_graded(submission_id=submission_id)


def _save_checks(submission_id: int, report: Report) -> None:
    CheckResult.objects.filter(submission_id=submission_id).delete()
    CheckResult.objects.bulk_create(
        CheckResult(
            submission_id=submission_id,
            order=index,
            name=grading.text_safe(check.name)[:CHECK_NAME_MAX_LENGTH],
            passed=check.passed,
            score=check.score,
            max_score=check.max_score,
            message=grading.text_safe(check.message),
            diagnosis=check.diagnosis[:DIAGNOSIS_MAX_LENGTH],
            hint=grading.text_safe(check.hint),
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
    countdown = retry_backoff_seconds(attempt)
    lease = timedelta(seconds=countdown + queued_lease_seconds())
    released = _owned(submission.pk, attempt).update(
        status=Status.QUEUED, lease_expires_at=timezone.now() + lease
    )
    if released == 1:
        exercise = Exercise.objects.get(pk=submission.exercise_id)
        submission_enqueue(
            submission_id=submission.pk, queue=queue_for(exercise), countdown=countdown
        )
    return Outcome.RETRY


def retry_backoff_seconds(attempt: int) -> float:
    base = settings.GRADLAB_RETRY_BACKOFF_SECONDS
    return float(min(base * 2 ** (attempt - 1), settings.GRADLAB_RETRY_BACKOFF_MAX_SECONDS))


# -- sweep -------------------------------------------------------------------------------

SWEEP_BATCH = 500


@dataclass(frozen=True)
class SweepResult:
    requeued: tuple[int, ...]
    failed: tuple[int, ...]


def submissions_sweep(*, now: datetime | None = None) -> SweepResult:
    """Re-queues submissions whose lease expired: queued ones the broker lost, running
    ones whose worker died. One that already used every attempt is marked failed."""
    now = now or timezone.now()
    stuck = list(
        Submission.objects.filter(
            status__in=[Status.QUEUED, Status.RUNNING], lease_expires_at__lt=now
        )
        .select_related("exercise")
        .order_by("lease_expires_at")[:SWEEP_BATCH]
    )
    requeued: list[int] = []
    failed: list[int] = []
    for submission in stuck:
        if _sweep_one(submission, now):
            requeued.append(submission.pk)
        else:
            failed.append(submission.pk)
    return SweepResult(requeued=tuple(requeued), failed=tuple(failed))


def _sweep_one(submission: Submission, now: datetime) -> bool:
    same = Submission.objects.filter(
        pk=submission.pk,
        status=submission.status,
        attempts=submission.attempts,
        lease_expires_at__lt=now,
    )
    if submission.attempts >= settings.GRADLAB_MAX_ATTEMPTS:
        same.update(
            status=Status.FAILED,
            graded_at=now,
            lease_expires_at=None,
            error_message=MESSAGE_LOST.format(attempts=submission.attempts),
        )
        return False
    lease = timedelta(seconds=queued_lease_seconds())
    if same.update(status=Status.QUEUED, lease_expires_at=now + lease) == 1:
        logger.warning("submission %s (%s) lease expired: re-queued",
                       submission.pk, submission.status)  # fmt: skip
        submission_enqueue(submission_id=submission.pk, queue=queue_for(submission.exercise))
    return True


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


def exercise_regrade(*, exercise: Exercise) -> RegradeResult:
    """Regrades every graded submission of `exercise` against its current version, here and
    now (synchronously), and reports whose score or pass/fail changed."""
    version = exercise.current_version
    if version is None:
        raise NotFound(f"Exercise {exercise.slug!r} has no version to regrade against.")
    changed: list[ScoreChange] = []
    errors: list[int] = []
    graded = Submission.objects.filter(exercise=exercise, status=Status.GRADED)
    submissions = list(graded.select_related("learner").order_by("id"))
    for submission in submissions:
        try:
            report = grading.run_grader(
                files=version.files,
                code=submission.code,
                seed=version.hidden_seed,
                job_id=f"regrade-{submission.pk}-v{version.number}",
            )
        except (InfrastructureError, ExerciseError) as error:
            logger.warning("regrade of submission %s failed: %s", submission.pk, error)
            errors.append(submission.pk)
            continue
        change = _apply_regrade(submission, version.pk, report)
        if change is not None:
            changed.append(change)
    return RegradeResult(
        exercise=exercise.slug,
        version=version.number,
        regraded=len(submissions) - len(errors),
        changed=tuple(changed),
        errors=tuple(errors),
    )


def _apply_regrade(submission: Submission, version_id: int, report: Report) -> ScoreChange | None:
    with transaction.atomic():
        Submission.objects.filter(pk=submission.pk).update(
            version_id=version_id,
            graded_at=timezone.now(),
            score=report.score,
            max_score=report.max_score,
            passed=report.passed,
            report=grading.json_safe(report.to_json()),
            error_message=grading.text_safe(report.message),
        )
        _save_checks(submission.pk, report)
        if submission.score != report.score or submission.passed != report.passed:
            _tell_integrations(submission.pk)
    if submission.score == report.score and submission.passed == report.passed:
        return None
    return ScoreChange(
        submission_id=submission.pk,
        learner=submission.learner.get_username(),
        old_score=submission.score,
        new_score=report.score,
        old_passed=submission.passed,
        new_passed=report.passed,
    )
