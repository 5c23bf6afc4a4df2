"""Outboxes: the one mechanism by which side effects leave gradlab (webhook deliveries, LMS
scores). ARCHITECTURE.md: "Side effects leave through an outbox".

A row is written in the transaction that causes the side effect, and its id is sent to a
Celery task once that transaction commits. The row is the source of truth; the message only
a hint:
- a broker failure is logged, not raised: the row stays pending and the sweep sends it;
- a worker claims a due row with a conditional update (pending -> sending, attempts + 1, a
  lock until `locked_until`): a duplicated or redelivered message finds nothing to claim;
- the attempt number fences the result: it is written only while the row is still sending
  under that attempt (`finish`);
- the sweep frees rows whose worker died while sending (lock expired) and resends pending
  rows whose message was lost (due for longer than a grace period).

What an answer means (success, retry, give up, a side decision such as disabling an
endpoint) is the owning app's decision, not this module's.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import ClassVar, Generic, TypeVar

from django.conf import settings
from django.db import models, transaction
from django.db.models import F, QuerySet
from django.utils import timezone

from common.jobs import task_send

logger = logging.getLogger(__name__)

PENDING = "pending"
SENDING = "sending"
ERROR_MAX_CHARS = 500
SWEEP_BATCH = 500


class OutboxRow(models.Model):
    """The columns every outbox row has. A concrete model declares `status` with its own
    choices (at least "pending" and "sending"), and names its success status and the
    field stamped when it is reached (`DONE`, `DONE_AT`)."""

    DONE: ClassVar[str]
    DONE_AT: ClassVar[str]

    attempts = models.PositiveIntegerField(default=0)
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    locked_until = models.DateTimeField(null=True, blank=True)
    last_status_code = models.PositiveSmallIntegerField(null=True, blank=True)
    last_error = models.TextField(blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        abstract = True


Row = TypeVar("Row", bound=OutboxRow)


@dataclass(frozen=True)
class Answer:
    """What the other side said to one attempt: its HTTP status (None: no answer), the
    error text kept on the row, and how long it asked us to wait (Retry-After)."""

    status_code: int | None
    error: str
    retry_after: float | None = None

    @property
    def succeeded(self) -> bool:
        return self.status_code is not None and 200 <= self.status_code < 300


@dataclass(frozen=True)
class Outbox(Generic[Row]):
    """One kind of outbox row: its model, its Celery task (by name, called with the row's
    id), its worker lock and its sweep grace (callables: read from settings at use)."""

    name: str  # in log lines: "webhook delivery 12 ..."
    model: type[Row]
    task_name: str
    lock_seconds: Callable[[], float]
    sweep_grace_seconds: Callable[[], float]

    def rows(self) -> QuerySet[Row]:
        return self.model._default_manager.all()

    def enqueue(self, row_id: int, *, countdown: float = 0) -> bool:
        """Sends the row's task; a broker failure is logged, and the sweep sends it later."""
        try:
            task_send(
                self.task_name, args=[row_id], queue=settings.GRADLAB_QUEUE_CPU, countdown=countdown
            )
        except Exception:
            logger.exception("could not enqueue %s %s; the sweep will", self.name, row_id)
            return False
        return True

    def enqueue_on_commit(self, row_ids: Iterable[int]) -> None:
        ids = list(row_ids)
        if ids:
            transaction.on_commit(lambda: [self.enqueue(i) for i in ids])

    def claim(self, row_id: int) -> int | None:
        """A due pending row -> sending under a new attempt number (returned); None when it
        is not due, already done, or claimed by another worker."""
        now = timezone.now()
        lock = timedelta(seconds=self.lock_seconds())
        with transaction.atomic():
            claimed = (
                self.rows()
                .filter(pk=row_id, status=PENDING, next_attempt_at__lte=now)
                .update(status=SENDING, attempts=F("attempts") + 1, locked_until=now + lock)
            )
            if claimed != 1:
                return None
            attempt: int = self.rows().values_list("attempts", flat=True).get(pk=row_id)
            return attempt

    def finish(
        self,
        row_id: int,
        attempt: int,
        status: str,
        answer: Answer,
        *,
        retry_in: float | None = None,
    ) -> bool:
        """Records the answer of `attempt` and the row's next status (pending again with
        `retry_in`). False when the claim was lost meanwhile (nothing written)."""
        now = timezone.now()
        updated = (
            self.rows()
            .filter(pk=row_id, status=SENDING, attempts=attempt)
            .update(
                status=status,
                locked_until=None,
                last_status_code=answer.status_code,
                last_error=answer.error,
                next_attempt_at=now + timedelta(seconds=retry_in) if retry_in is not None else None,
                **{self.model.DONE_AT: now if status == self.model.DONE else None},
            )
        )
        return updated == 1

    def sweep(self, *, now: datetime | None = None) -> list[int]:
        """Frees rows whose worker died while sending (their lock expired) and resends
        pending rows whose message was lost. Returns the ids sent."""
        now = now or timezone.now()
        dead = self.rows().filter(status=SENDING, locked_until__lt=now)
        freed = list(dead.values_list("pk", flat=True)[:SWEEP_BATCH])
        self.rows().filter(pk__in=freed, status=SENDING).update(
            status=PENDING, locked_until=None, next_attempt_at=now
        )
        stale = now - timedelta(seconds=self.sweep_grace_seconds())
        lost = self.rows().filter(status=PENDING, next_attempt_at__lte=stale)
        due = freed + list(
            lost.order_by("next_attempt_at").values_list("pk", flat=True)[:SWEEP_BATCH]
        )
        for row_id in due:
            self.enqueue(row_id)
        return due


def error_text(text: str) -> str:
    """An error as kept on a row: at most ERROR_MAX_CHARS characters."""
    return text[:ERROR_MAX_CHARS]


def describe(failure: BaseException) -> str:
    return error_text(f"{type(failure).__name__}: {failure}")
