"""Celery tasks of the web app: thin, take an id, call one service. JSON payloads only."""

from __future__ import annotations

from celery import shared_task

from web import services

# Validation and regrade run many sandboxes one after another: far above a grading task.
JOB_SOFT_TIME_LIMIT_S = 30 * 60
JOB_TIME_LIMIT_S = 31 * 60


@shared_task(
    name="gradlab.run_exercise_job",
    acks_late=True,
    reject_on_worker_lost=True,
    soft_time_limit=JOB_SOFT_TIME_LIMIT_S,
    time_limit=JOB_TIME_LIMIT_S,
)
def run_exercise_job(job_id: int) -> str:
    return services.exercise_job_run(job_id=int(job_id))
