"""Celery tasks of operations: periodic work that records its heartbeat (ops.heartbeats).
The task names are a contract (the beat schedule and messages already queued carry them)."""

from __future__ import annotations

from celery import shared_task

from ops.broker import queued_resend_if_restarted
from ops.heartbeats import SWEEP, heartbeat_record
from submissions.services import submissions_sweep


@shared_task(name="gradlab.sweep_submissions")
def sweep_submissions() -> dict[str, list[int]]:
    queued_resend_if_restarted()  # its queued messages may be gone: send them all again now
    result = submissions_sweep()
    heartbeat_record(SWEEP)  # readiness fails when this grows old (the scheduler stopped)
    return {"requeued": list(result.requeued), "failed": list(result.failed)}
