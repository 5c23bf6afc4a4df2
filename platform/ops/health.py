"""Readiness: the database answers, the broker answers, the recovery sweep is fresh."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db import connection
from kombu import Connection

from ops.heartbeats import SWEEP, heartbeat_age_seconds, sweep_stale_after_seconds

BROKER_TIMEOUT_S = 2.0


@dataclass(frozen=True)
class Probe:
    name: str
    ok: bool
    detail: str

    def as_json(self) -> dict[str, Any]:
        return {"ok": self.ok, "detail": self.detail}


def database_probe() -> Probe:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
    except Exception as error:  # any driver error means not ready
        return Probe("database", False, type(error).__name__)
    return Probe("database", True, "answers")


def broker_probe() -> Probe:
    try:
        with Connection(settings.CELERY_BROKER_URL, connect_timeout=BROKER_TIMEOUT_S) as broker:
            # One immediate retry: the probe is polled again anyway, and kombu's default
            # back-off (2 s) held every probe of a refused broker for 2 s.
            broker.ensure_connection(max_retries=1, interval_start=0, timeout=BROKER_TIMEOUT_S)
    except Exception as error:  # any transport error means not ready
        return Probe("broker", False, type(error).__name__)
    return Probe("broker", True, "answers")


def sweep_probe() -> Probe:
    try:
        age = heartbeat_age_seconds(SWEEP)
    except Exception as error:
        return Probe("sweep", False, type(error).__name__)
    limit = sweep_stale_after_seconds()
    if age is None:
        return Probe("sweep", False, "no sweep has run yet")
    if age > limit:
        return Probe("sweep", False, f"last sweep {age:.0f} s ago (limit {limit:.0f} s)")
    return Probe("sweep", True, f"last sweep {age:.0f} s ago")


def readiness() -> list[Probe]:
    return [database_probe(), broker_probe(), sweep_probe()]
