"""Celery tasks of instructor jobs: thin, take an id, call one service. JSON payloads only.
The task names are a contract (messages already queued carry them)."""

from __future__ import annotations

from celery import shared_task
from django.conf import settings

from authoring import jobs
from common.logs import job_context


@shared_task(
    name="gradlab.run_exercise_job",
    acks_late=True,
    reject_on_worker_lost=True,
    soft_time_limit=settings.GRADLAB_JOB_SOFT_TIME_LIMIT,
    time_limit=settings.GRADLAB_JOB_TIME_LIMIT,
)
def run_exercise_job(job_id: int) -> str:
    with job_context(exercise_job_id=int(job_id)):  # on every line of this job
        return str(jobs.exercise_job_run(job_id=int(job_id)))


@shared_task(name="gradlab.sweep_exercise_jobs")
def sweep_exercise_jobs() -> dict[str, list[int]]:
    result = jobs.exercise_jobs_sweep()
    return {"requeued": list(result.requeued), "failed": list(result.failed)}
