"""Writes of the web app: instructor jobs (validate, regrade) created here, run by a worker.

The job is enqueued after commit (the worker must find its row); it is claimed with a
conditional update so a duplicated or redelivered message runs it once.
"""

from __future__ import annotations

import logging
from dataclasses import asdict
from datetime import timedelta
from typing import Any

from celery.exceptions import SoftTimeLimitExceeded
from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.utils import timezone

from common.errors import NotFound
from courses.models import Exercise
from grader.protocol import InfrastructureError
from submissions.services import exercise_regrade
from web.models import VALIDATE, ExerciseJob
from web.validation import validate_version

logger = logging.getLogger(__name__)

# A job still "running" after this long lost its worker: a redelivery may take it over.
JOB_LEASE = timedelta(minutes=40)
Status = ExerciseJob.Status


def exercise_job_create(*, exercise: Exercise, kind: str, user: AbstractBaseUser) -> ExerciseJob:
    if exercise.current_version_id is None:
        raise NotFound(f"Exercise {exercise.slug!r} has no version.")
    with transaction.atomic():
        job = ExerciseJob.objects.create(
            exercise=exercise, version_id=exercise.current_version_id, kind=kind,
            requested_by=user,
        )  # fmt: skip
        queue = settings.GRADLAB_QUEUE_CPU
        transaction.on_commit(lambda: _enqueue(job.pk, queue))
    return job


def _enqueue(job_id: int, queue: str) -> None:
    from web.tasks import run_exercise_job

    run_exercise_job.apply_async(args=[job_id], queue=queue)


def exercise_job_run(*, job_id: int) -> str:
    if not _claim(job_id):
        return "skipped"
    job = ExerciseJob.objects.select_related("exercise", "version").get(pk=job_id)
    try:
        outcome = _run(job)
    except InfrastructureError as error:
        logger.warning("exercise job %s: sandbox fault: %s", job_id, error)
        _finish(job_id, Status.FAILED, None, f"The sandbox could not run: {error}")
        return Status.FAILED
    except SoftTimeLimitExceeded:
        _finish(job_id, Status.FAILED, None, "It took longer than the job time limit.")
        return Status.FAILED
    _finish(job_id, Status.DONE, outcome, "")
    return Status.DONE


def _claim(job_id: int) -> bool:
    now = timezone.now()
    fresh = ExerciseJob.objects.filter(pk=job_id, status=Status.QUEUED)
    stale = ExerciseJob.objects.filter(
        pk=job_id, status=Status.RUNNING, started_at__lt=now - JOB_LEASE
    )
    return bool((fresh | stale).update(status=Status.RUNNING, started_at=now))


def _run(job: ExerciseJob) -> dict[str, Any]:
    if job.kind == VALIDATE:
        validation = validate_version(job.version)
        return {**asdict(validation), "problems": validation.problems}
    result = exercise_regrade(exercise=job.exercise)
    return asdict(result)


def _finish(job_id: int, status: str, outcome: dict[str, Any] | None, error: str) -> None:
    ExerciseJob.objects.filter(pk=job_id, status=Status.RUNNING).update(
        status=status, outcome=outcome, error=error, finished_at=timezone.now()
    )
