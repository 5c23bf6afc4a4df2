"""Leased jobs: the one claim / enqueue / sweep helper of every row a Celery worker runs
(submissions to grade, instructor jobs).

The row is the source of truth; the broker only carries its id, as a hint a worker may or
may not receive:
- enqueue after commit, and a broker failure is logged, not raised: the row stays queued
  with a lease, and the sweep sends it again;
- a worker claims the row with a conditional update (queued -> running, attempts + 1, a
  running lease): a duplicated or redelivered message finds nothing to claim;
- the claim records its owner (common.owner: host, pid, process start time). A claim
  whose owner is provably gone (same host, the process dead or its pid reused) is taken
  over at once by a redelivered message (acks_late + reject_on_worker_lost redeliver the
  message of a killed pool process) or by the sweep: recovery in seconds;
- the attempt number is the fencing token: a worker writes its result only while the row
  is still running under its attempt (`job_owned`);
- the sweep re-queues rows whose owner is gone, and rows whose lease expired (a queued
  row whose message was lost, a running row on a host that was lost: the last resort),
  and fails those that used every attempt.

A row has `status` ("queued", "running", then final states of its own), `attempts`,
`claimed_by`, `lease_expires_at` and `started_at`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Generic, TypeVar

from celery import current_app
from django.db import models, transaction
from django.db.models import F, QuerySet
from django.utils import timezone

from common import owner

logger = logging.getLogger(__name__)

QUEUED = "queued"
RUNNING = "running"
SWEEP_BATCH = 500

Row = TypeVar("Row", bound=models.Model)


@dataclass(frozen=True)
class JobKind(Generic[Row]):
    """How one kind of row is run: its model, its Celery task (called with the row's id),
    its queue, its leases and attempts (callables: read from settings at each use)."""

    name: str  # in log lines: "submission 12 ..."
    model: type[Row]
    task_name: str
    queue_of: Callable[[Row], str]
    running_lease_seconds: Callable[[], float]
    queued_lease_seconds: Callable[[], float]
    max_attempts: Callable[[], int]
    lost_fields: Callable[[Row, datetime], dict[str, Any]]  # a row out of attempts

    def rows(self) -> QuerySet[Row]:
        return self.model._default_manager.all()


@dataclass(frozen=True)
class SweepResult:
    requeued: tuple[int, ...]
    failed: tuple[int, ...]


def job_queued_until(kind: JobKind[Any], *, now: datetime | None = None) -> datetime:
    """The lease of a row just queued: unclaimed past it, the sweep sends it again."""
    return (now or timezone.now()) + timedelta(seconds=kind.queued_lease_seconds())


def task_send(task_name: str, *, args: list[Any], queue: str, countdown: float = 0) -> None:
    """Sends the Celery task `task_name`: the one way a task is sent, by its name, so that
    the sender imports nothing of the app that runs it (with Django, Celery's current app
    is config.celery_app's, in every thread). Raises what the broker raises."""
    current_app.send_task(task_name, args=args, queue=queue, countdown=countdown)


def job_enqueue(kind: JobKind[Any], *, job_id: int, queue: str, countdown: float = 0) -> bool:
    """Sends the row's task. Call it only once the row is committed (see
    job_enqueue_on_commit). A broker failure is logged, not raised: the sweep resends."""
    try:
        task_send(kind.task_name, args=[job_id], queue=queue, countdown=countdown)
    except Exception:
        logger.exception("could not enqueue %s %s; the next sweep resends it", kind.name, job_id)
        _expire_queued_lease(kind, job_id)
        return False
    return True


def _expire_queued_lease(kind: JobKind[Any], job_id: int) -> None:
    """A row whose message was never sent: its lease ends now, so the next sweep (seconds
    away) sends it once the broker is back, not after a whole queued lease."""
    try:
        kind.rows().filter(pk=job_id, status=QUEUED).update(lease_expires_at=timezone.now())
    except Exception:
        logger.exception("%s %s: could not mark it unsent; its lease still ends", kind.name, job_id)


def job_enqueue_on_commit(kind: JobKind[Any], *, job_id: int, queue: str) -> None:
    transaction.on_commit(lambda: job_enqueue(kind, job_id=job_id, queue=queue))


def job_claim(kind: JobKind[Any], *, job_id: int) -> int | None:
    """queued -> running under a new attempt number (returned), or a running claim whose
    owner is provably gone taken over under a new attempt; None when the row is not ours
    to run (claimed by a live owner, finished, gone, or out of attempts)."""
    attempt = _claim(kind, kind.rows().filter(pk=job_id, status=QUEUED), job_id)
    if attempt is not None:
        return attempt
    return _take_over(kind, job_id)


def _claim(kind: JobKind[Any], rows: QuerySet[Any], job_id: int) -> int | None:
    now = timezone.now()
    lease = timedelta(seconds=kind.running_lease_seconds())
    with transaction.atomic():
        claimed = rows.update(
            status=RUNNING,
            attempts=F("attempts") + 1,
            claimed_by=str(owner.current()),
            started_at=now,
            lease_expires_at=now + lease,
        )
        if claimed != 1:
            return None
        attempt: int = kind.rows().values_list("attempts", flat=True).get(pk=job_id)
        return attempt


def _take_over(kind: JobKind[Any], job_id: int) -> int | None:
    row = kind.rows().filter(pk=job_id, status=RUNNING).first()
    if row is None or not owner.is_gone(row.claimed_by):
        return None
    same = _same_claim(kind, row)
    if row.attempts >= kind.max_attempts():
        if same.update(**kind.lost_fields(row, timezone.now())) == 1:
            logger.warning("%s %s: owner %s gone after %s attempts: failed",
                           kind.name, job_id, row.claimed_by, row.attempts)  # fmt: skip
        return None
    attempt = _claim(kind, same, job_id)
    if attempt is not None:
        logger.warning("%s %s: owner %s is gone; taken over as attempt %s",
                       kind.name, job_id, row.claimed_by, attempt)  # fmt: skip
    return attempt


def _same_claim(kind: JobKind[Any], row: Any) -> QuerySet[Any]:
    """The row while nobody changed its claim since it was read."""
    return kind.rows().filter(
        pk=row.pk, status=RUNNING, attempts=row.attempts, claimed_by=row.claimed_by
    )


def job_owned(kind: JobKind[Row], *, job_id: int, attempt: int) -> QuerySet[Row]:
    """The row while it is still running under `attempt`: write results through this."""
    return kind.rows().filter(pk=job_id, status=RUNNING, attempts=attempt)


def job_release(kind: JobKind[Row], *, row: Row, attempt: int, countdown: float) -> bool:
    """running -> queued again after a fault on our side, sent again after `countdown`
    seconds. False when the claim was lost meanwhile (then nothing is sent)."""
    lease = timedelta(seconds=countdown + kind.queued_lease_seconds())
    released = job_owned(kind, job_id=row.pk, attempt=attempt).update(
        status=QUEUED, lease_expires_at=timezone.now() + lease
    )
    if released != 1:
        return False
    job_enqueue(kind, job_id=row.pk, queue=kind.queue_of(row), countdown=countdown)
    return True


def jobs_sweep(kind: JobKind[Any], *, now: datetime | None = None) -> SweepResult:
    """Re-queues running rows whose owner on this host is gone, and rows whose lease
    expired: queued ones the broker lost, running ones on a lost host. One that already
    used every attempt gets `kind.lost_fields`."""
    now = now or timezone.now()
    requeued: list[int] = []
    failed: list[int] = []
    seen: set[int] = set()
    for row, same in _orphaned(kind) + _expired(kind, now):
        if row.pk in seen:
            continue
        seen.add(row.pk)
        if _sweep_one(kind, row, same, now):
            requeued.append(row.pk)
        else:
            failed.append(row.pk)
    return SweepResult(requeued=tuple(requeued), failed=tuple(failed))


def _orphaned(kind: JobKind[Any]) -> list[tuple[Any, QuerySet[Any]]]:
    here = kind.rows().filter(status=RUNNING, claimed_by__startswith=f"{owner.this_host()}/")
    return [
        (row, _same_claim(kind, row))
        for row in here.order_by("started_at")[:SWEEP_BATCH]
        if owner.is_gone(row.claimed_by)
    ]


def _expired(kind: JobKind[Any], now: datetime) -> list[tuple[Any, QuerySet[Any]]]:
    stuck = (
        kind.rows()
        .filter(status__in=[QUEUED, RUNNING], lease_expires_at__lt=now)
        .order_by("lease_expires_at")[:SWEEP_BATCH]
    )
    return [
        (
            row,
            kind.rows().filter(
                pk=row.pk, status=row.status, attempts=row.attempts, lease_expires_at__lt=now
            ),
        )
        for row in stuck
    ]


def _sweep_one(kind: JobKind[Any], row: Any, same: QuerySet[Any], now: datetime) -> bool:
    if row.attempts >= kind.max_attempts():
        if same.update(**kind.lost_fields(row, now)) == 1:
            logger.warning("%s %s lost after %s attempts: failed", kind.name, row.pk, row.attempts)
        return False
    if same.update(status=QUEUED, lease_expires_at=job_queued_until(kind, now=now)) == 1:
        logger.warning("%s %s (%s, owner %s) re-queued: lease expired or owner gone",
                       kind.name, row.pk, row.status, row.claimed_by or "-")  # fmt: skip
        job_enqueue(kind, job_id=row.pk, queue=kind.queue_of(row))
    return True


def retry_backoff_seconds(attempt: int, *, base: float, cap: float) -> float:
    """Exponential backoff: base, 2 base, 4 base, ... at most cap."""
    return float(min(base * 2 ** (attempt - 1), cap))
