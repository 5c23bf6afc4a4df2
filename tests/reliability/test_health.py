"""Liveness and readiness (ops.views), against the real database and Redis: readiness
fails when the database or the broker does not answer, or when the recovery sweep has not
run for three intervals (its scheduler died)."""

from __future__ import annotations

import socket
from datetime import timedelta
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.utils import timezone

pytestmark = pytest.mark.django_db


def _unused_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_liveness_answers_without_touching_database_or_broker(client: Any) -> None:
    response = client.get("/healthz/live")
    assert response.status_code == 200 and response.json() == {"ok": True}


def test_readiness_fails_until_a_first_sweep_has_run(client: Any) -> None:
    response = client.get("/healthz/ready")
    body = response.json()
    assert response.status_code == 503
    assert body["database"]["ok"] and body["broker"]["ok"]
    assert body["sweep"] == {"ok": False, "detail": "no sweep has run yet"}


def test_the_sweep_task_records_its_heartbeat_and_readiness_passes(client: Any) -> None:
    from ops.tasks import sweep_submissions

    sweep_submissions()  # the task's body, in this process

    response = client.get("/healthz/ready")
    assert response.status_code == 200, response.json()
    assert response.json()["ok"] is True


def test_readiness_fails_when_the_last_sweep_is_older_than_three_intervals(
    client: Any, settings: Any
) -> None:
    from ops.heartbeats import SWEEP, heartbeat_record

    settings.GRADLAB_RECOVERY_SWEEP_SECONDS = 10
    heartbeat_record(SWEEP, at=timezone.now() - timedelta(seconds=25))
    assert client.get("/healthz/ready").status_code == 200

    heartbeat_record(SWEEP, at=timezone.now() - timedelta(seconds=31))
    response = client.get("/healthz/ready")
    assert response.status_code == 503
    assert "limit 30 s" in response.json()["sweep"]["detail"]


def test_readiness_fails_when_the_broker_does_not_answer(client: Any, settings: Any) -> None:
    from ops.heartbeats import SWEEP, heartbeat_record

    heartbeat_record(SWEEP)
    settings.CELERY_BROKER_URL = f"redis://127.0.0.1:{_unused_port()}/0"

    response = client.get("/healthz/ready")
    assert response.status_code == 503
    assert response.json()["broker"]["ok"] is False
    assert "127.0.0.1" not in response.content.decode()  # no internals in the body


def test_the_health_command_exits_non_zero_when_not_ready(capsys: Any) -> None:
    from ops.heartbeats import SWEEP, heartbeat_record

    with pytest.raises(CommandError, match="not ready"):
        call_command("health")
    assert "sweep: FAIL (no sweep has run yet)" in capsys.readouterr().out

    heartbeat_record(SWEEP)
    call_command("health")
    assert "sweep: ok" in capsys.readouterr().out
