"""Instructor jobs (validate, regrade): created on the instructor's request, run by a worker
through common.jobs' claim, like a grading. The row is courses.models.ExerciseJob."""

from __future__ import annotations

import logging
from dataclasses import asdict
from datetime import datetime
from typing import Any

from celery.exceptions import SoftTimeLimitExceeded
from django.conf import settings
from django.db import transaction
from django.utils import timezone

from accounts.selectors import AnyUser
from authoring.validation import ValidationOutcome, outcome_json, version_validate
from common import jobs, ratelimit
from common.errors import InvalidInput, NotFound
from courses.models import Exercise, ExerciseJob, ExerciseVersion
from submissions.services import exercise_regrade

logger = logging.getLogger(__name__)

JOB_TIME_LIMIT_MESSAGE = "It took longer than the job time limit ({limit} s)."
JOB_FAULT_MESSAGE = "The sandbox could not run (not the package's fault): {error}"
JOB_LOST_MESSAGE = "The job did not finish after {attempts} attempts (its worker stopped)."


def _job_lost_fields(job: ExerciseJob, now: datetime) -> dict[str, Any]:
    return {
        "status": ExerciseJob.Status.FAILED,
        "finished_at": now,
        "lease_expires_at": None,
        "error": JOB_LOST_MESSAGE.format(attempts=job.attempts),
        "outcome": None,  # a lost attempt's partial rows are no outcome
    }


EXERCISE_JOBS: jobs.JobKind[ExerciseJob] = jobs.JobKind(
    name="exercise job",
    model=ExerciseJob,
    task_name="gradlab.run_exercise_job",
    queue_of=lambda job: settings.GRADLAB_QUEUE_AUTHORING,  # never the learners' queue
    running_lease_seconds=lambda: settings.GRADLAB_JOB_RUNNING_LEASE_SECONDS,
    queued_lease_seconds=lambda: settings.GRADLAB_QUEUED_LEASE_SECONDS,
    max_attempts=lambda: settings.GRADLAB_MAX_ATTEMPTS,
    lost_fields=_job_lost_fields,
)


def exercise_job_create(
    *, exercise: Exercise, kind: str, user: AnyUser, version: ExerciseVersion | None = None
) -> ExerciseJob:
    """A queued job on `version` (default: the exercise's current version), sent to a
    worker after commit."""
    if kind not in ExerciseJob.Kind.values:
        raise InvalidInput({"kind": f"Unknown job kind {kind!r}."})
    version_id = version.pk if version is not None else exercise.current_version_id
    if version_id is None:
        raise NotFound(f"Exercise {exercise.slug!r} has no version.")
    with transaction.atomic():
        # One queued or running job per exercise version and kind: asking again while one
        # is pending is that job (the exercise row's lock makes the check and the insert
        # one step for concurrent requests on PostgreSQL; SQLite writes one at a time).
        Exercise.objects.select_for_update().filter(pk=exercise.pk).exists()
        pending = _pending_job(exercise_id=exercise.pk, version_id=version_id, kind=kind)
        if pending is not None:
            return pending
        _job_rate_limit_check(user=user)
        job = ExerciseJob.objects.create(
            exercise=exercise,
            version_id=version_id,
            kind=kind,
            requested_by_id=user.pk,
            lease_expires_at=jobs.job_queued_until(EXERCISE_JOBS),
        )
        jobs.job_enqueue_on_commit(EXERCISE_JOBS, job_id=job.pk, queue=EXERCISE_JOBS.queue_of(job))
    return job


def _pending_job(*, exercise_id: int, version_id: int, kind: str) -> ExerciseJob | None:
    pending = (ExerciseJob.Status.QUEUED, ExerciseJob.Status.RUNNING)
    return ExerciseJob.objects.filter(
        exercise_id=exercise_id, version_id=version_id, kind=kind, status__in=pending
    ).first()


def _job_rate_limit_check(*, user: AnyUser) -> None:
    """At most GRADLAB_JOB_RATE_LIMIT_COUNT instructor jobs per user per window: validations
    and regrades run in the same sandboxes as learners' submissions."""
    ratelimit.window_check(
        ExerciseJob.objects.filter(requested_by_id=user.pk),
        limit=settings.GRADLAB_JOB_RATE_LIMIT_COUNT,
        window_s=settings.GRADLAB_JOB_RATE_LIMIT_WINDOW_SECONDS,
        what="validations and regrades",
    )


def exercise_job_run(*, job_id: int) -> str:
    """Claims the job (queued -> running), runs it, stores its outcome once. Returns the
    job's status afterwards, or "skipped" when it was not ours to run."""
    attempt = jobs.job_claim(EXERCISE_JOBS, job_id=job_id)
    if attempt is None:
        logger.info("exercise job %s: not queued, skipping this delivery", job_id)
        return "skipped"
    job = ExerciseJob.objects.select_related("exercise", "version").get(pk=job_id)
    _job_progress(job_id, attempt, None)  # an earlier attempt's partial rows are not ours
    try:
        outcome = _job_outcome(job, attempt)
    except SoftTimeLimitExceeded:
        limit = settings.GRADLAB_JOB_SOFT_TIME_LIMIT
        _job_finish(job_id, attempt, error=JOB_TIME_LIMIT_MESSAGE.format(limit=limit))
        return ExerciseJob.Status.FAILED
    except Exception as error:  # a sandbox fault, or a bug of ours: retried, then failed
        logger.warning("exercise job %s attempt %s: %s", job_id, attempt, error, exc_info=True)
        return _after_job_fault(job, attempt, error)
    _job_finish(job_id, attempt, outcome=outcome)
    return ExerciseJob.Status.DONE


def _job_outcome(job: ExerciseJob, attempt: int) -> dict[str, Any]:
    if job.kind == ExerciseJob.Kind.VALIDATE:

        def progress(partial: ValidationOutcome) -> None:
            _job_progress(job.pk, attempt, outcome_json(partial))

        return outcome_json(version_validate(version=job.version, on_progress=progress))
    preview = job.kind == ExerciseJob.Kind.REGRADE_PREVIEW
    return {
        **asdict(exercise_regrade(exercise=job.exercise, apply=not preview)),
        "preview": preview,
    }


def _after_job_fault(job: ExerciseJob, attempt: int, error: Exception) -> str:
    if attempt >= settings.GRADLAB_MAX_ATTEMPTS:
        message = JOB_FAULT_MESSAGE.format(error=error)
        _job_finish(job.pk, attempt, error=message)
        return ExerciseJob.Status.FAILED
    countdown = jobs.retry_backoff_seconds(
        attempt,
        base=settings.GRADLAB_RETRY_BACKOFF_SECONDS,
        cap=settings.GRADLAB_RETRY_BACKOFF_MAX_SECONDS,
    )
    _job_progress(job.pk, attempt, None)  # queued again: this attempt's rows are void
    jobs.job_release(EXERCISE_JOBS, row=job, attempt=attempt, countdown=countdown)
    return ExerciseJob.Status.QUEUED


def _job_progress(job_id: int, attempt: int, outcome: dict[str, Any] | None) -> None:
    """The partial outcome of a running job, written only under our claim (a job taken
    over by another attempt keeps that attempt's rows)."""
    jobs.job_owned(EXERCISE_JOBS, job_id=job_id, attempt=attempt).update(outcome=outcome)


def _job_finish(
    job_id: int, attempt: int, *, outcome: dict[str, Any] | None = None, error: str = ""
) -> bool:
    """done with an outcome, or failed with an error: written only under our claim."""
    status = ExerciseJob.Status.FAILED if error else ExerciseJob.Status.DONE
    updated = jobs.job_owned(EXERCISE_JOBS, job_id=job_id, attempt=attempt).update(
        status=status,
        outcome=outcome,
        error=error,
        finished_at=timezone.now(),
        lease_expires_at=None,
    )
    if updated != 1:
        logger.warning("exercise job %s attempt %s lost its claim; outcome discarded",
                       job_id, attempt)  # fmt: skip
    return updated == 1


def exercise_jobs_sweep(*, now: datetime | None = None) -> jobs.SweepResult:
    """Re-queues instructor jobs whose lease expired (a lost message, a dead worker)."""
    return jobs.jobs_sweep(EXERCISE_JOBS, now=now)
