"""Heartbeats of periodic work, and their freshness for the readiness check."""

from __future__ import annotations

from datetime import datetime

from django.conf import settings
from django.utils import timezone

from ops.models import Heartbeat

SWEEP = "sweep"
STALE_INTERVALS = 3  # a sweep older than three intervals means the scheduler stopped


def heartbeat_record(name: str, *, at: datetime | None = None) -> None:
    Heartbeat.objects.update_or_create(name=name, defaults={"at": at or timezone.now()})


def heartbeat_age_seconds(name: str, *, now: datetime | None = None) -> float | None:
    """Seconds since the heartbeat, or None when it never beat."""
    at = Heartbeat.objects.filter(name=name).values_list("at", flat=True).first()
    if at is None:
        return None
    return max(0.0, ((now or timezone.now()) - at).total_seconds())


def sweep_stale_after_seconds() -> float:
    return STALE_INTERVALS * float(settings.GRADLAB_RECOVERY_SWEEP_SECONDS)
