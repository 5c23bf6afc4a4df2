"""Celery tasks: thin, take ids, call one service. JSON payloads only.
The task names are a contract (messages already queued carry them); the submissions'
sweep runs in ops.tasks (it records the broker's run and the sweep's heartbeat)."""

from __future__ import annotations

from celery import shared_task

from common.logs import job_context
from grading.bridge import sandboxes_reap
from submissions import services


@shared_task(name="gradlab.grade_submission", acks_late=True, reject_on_worker_lost=True)
def grade_submission(submission_id: int) -> str:
    with job_context(submission_id=int(submission_id)):  # on every line of this grading
        return services.submission_grade(submission_id=int(submission_id)).value


@shared_task(name="gradlab.reap_sandboxes")
def reap_sandboxes() -> list[str]:
    return sandboxes_reap()
