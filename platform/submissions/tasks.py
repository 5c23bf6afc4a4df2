"""Celery tasks: thin, take ids, call one service. JSON payloads only."""

from __future__ import annotations

import logging

from celery import shared_task

from ops.logs import job_context
from submissions import services

logger = logging.getLogger(__name__)


@shared_task(name="gradlab.grade_submission", acks_late=True, reject_on_worker_lost=True)
def grade_submission(submission_id: int) -> str:
    with job_context(submission_id=int(submission_id)):  # on every line of this grading
        return services.submission_grade(submission_id=int(submission_id)).value


@shared_task(name="gradlab.sweep_submissions")
def sweep_submissions() -> dict[str, list[int]]:
    from ops.broker import queued_resend_if_restarted
    from ops.heartbeats import SWEEP, heartbeat_record

    queued_resend_if_restarted()  # its queued messages may be gone: send them all again now
    result = services.submissions_sweep()
    heartbeat_record(SWEEP)  # readiness fails when this grows old (the scheduler stopped)
    return {"requeued": list(result.requeued), "failed": list(result.failed)}


@shared_task(name="gradlab.reap_sandboxes")
def reap_sandboxes() -> list[str]:
    from submissions.grading import sandboxes_reap

    return sandboxes_reap()
