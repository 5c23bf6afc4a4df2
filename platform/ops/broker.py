"""A Redis broker that restarted (its run id changed) may have lost every message it held
(no persistence, or the last writes before a crash): the sweep then ends the lease of
every queued row at once, so they are sent again now, not after their queued lease.
A message sent twice is harmless (the claim is conditional).

The run id is recorded by every sweep and by every worker as it starts (config.celery_app:
worker_ready), so a restart in the seconds before the first sweep is noticed too (the
load test found rows queued before a restart that no sweep had yet seen waiting for their
whole queued lease)."""

from __future__ import annotations

import logging

import redis
from django.conf import settings
from django.db.models import Model, QuerySet
from django.utils import timezone

from courses.models import ExerciseJob
from ops.models import Heartbeat
from submissions.models import Submission

logger = logging.getLogger(__name__)

BROKER = "broker"
TIMEOUT_S = 2.0


def broker_run_id() -> str | None:
    """The Redis broker's run id (new at each server start), or None (not Redis, down)."""
    url = str(settings.CELERY_BROKER_URL)
    if not url.startswith(("redis://", "rediss://")):
        return None
    try:
        info: dict[str, object] = redis.Redis.from_url(  # type: ignore[assignment]
            url, socket_connect_timeout=TIMEOUT_S
        ).info("server")
    except redis.RedisError:
        return None
    return str(info.get("run_id", "")) or None


def broker_restarted() -> bool:
    """True once per broker start seen after another (the first one seen is recorded)."""
    run_id = broker_run_id()
    if run_id is None:
        return False
    seen = Heartbeat.objects.filter(name=BROKER).values_list("detail", flat=True).first()
    Heartbeat.objects.update_or_create(
        name=BROKER, defaults={"at": timezone.now(), "detail": run_id}
    )
    return seen is not None and seen != run_id


def queued_resend_now(rows: QuerySet[Model]) -> int:
    """Ends the lease of every queued row: the sweep that follows sends them again."""
    return rows.filter(status="queued").update(lease_expires_at=timezone.now())


def queued_resend_if_restarted() -> int:
    """When the broker restarted since its run id was last recorded: every queued row of
    every job kind gets its lease ended (the next sweep sends it). The rows' count."""
    if not broker_restarted():
        return 0
    resent = queued_resend_now(Submission.objects.all())
    resent += queued_resend_now(ExerciseJob.objects.all())
    logger.warning("the broker restarted: %s queued rows sent again", resent)
    return resent
