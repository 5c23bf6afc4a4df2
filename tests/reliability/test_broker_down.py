"""Redis down when a learner submits: the API still answers 201 (the row is the source of
truth), and once Redis is back the recovery sweep sends it and a real worker grades it,
once. A private redis-server on a spare port plays the broker (the shared one on 6379 is
never touched); the real database, worker and sandbox do the rest."""

from __future__ import annotations

import socket
import subprocess
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from django.utils import timezone
from gradlab_fixtures import EXERCISES, wait_for

pytestmark = [pytest.mark.worker, pytest.mark.sandbox]

E2E_SLUG = "chain-rule"
REDIS_START_TIMEOUT_S = 30.0


class PrivateRedis:
    def __init__(self, folder: Path) -> None:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = int(probe.getsockname()[1])
        self.folder = folder
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        self.process = subprocess.Popen(
            ["redis-server", "--bind", "127.0.0.1", "--port", str(self.port), "--save", "",
             "--appendonly", "no", "--dir", str(self.folder)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        wait_for(self._answers, timeout=REDIS_START_TIMEOUT_S, what="the private redis-server")

    def _answers(self) -> bool:
        try:
            return bool(redis.Redis.from_url(self.url, socket_connect_timeout=1).ping())
        except redis.ConnectionError:
            return False

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=30)


def _use_broker(url: str) -> None:
    """Points this process's Celery app (and settings) at `url`: new connections only."""
    from django.conf import settings

    from config.celery_app import app

    settings.CELERY_BROKER_URL = url
    app.conf.broker_url = app.conf.broker_write_url = app.conf.broker_read_url = url
    app._pool = None  # the old pool stays open for whoever holds it; new sends use `url`
    app.amqp._producer_pool = None


@pytest.fixture
def private_redis(tmp_path: Path) -> Iterator[PrivateRedis]:
    from django.conf import settings

    shared = settings.CELERY_BROKER_URL
    server = PrivateRedis(tmp_path)
    _use_broker(server.url)
    yield server
    server.stop()
    _use_broker(shared)


def test_a_submission_made_while_redis_is_down_is_accepted_and_graded_once_it_is_back(
    start_worker: Any, api: Any, alice_learner: Any, private_redis: PrivateRedis
) -> None:
    from submissions.models import CheckResult, Submission

    solution = (EXERCISES / E2E_SLUG / "solution.py").read_text(encoding="utf-8")
    response = api(alice_learner).post(
        "/api/v1/submissions/", {"exercise": E2E_SLUG, "code": solution}, format="json"
    )  # nothing listens on the broker's port

    assert response.status_code == 201, response.content
    row = Submission.objects.get(pk=response.json()["id"])
    assert row.status == "queued"
    assert row.lease_expires_at <= timezone.now()  # unsent: the next sweep sends it

    private_redis.start()
    start_worker(beat=True, CELERY_BROKER_URL=private_redis.url,
                 REDIS_URL=private_redis.url, GRADLAB_RECOVERY_SWEEP_SECONDS="2",
                 GRADLAB_SANDBOX_WARM="1")  # fmt: skip

    graded = wait_for(lambda: Submission.objects.filter(pk=row.pk, status="graded").first(),
                      what="the sweep to send it and the worker to grade it")  # fmt: skip
    assert graded.passed is True and graded.attempts == 1
    checks = tomllib.loads((EXERCISES / E2E_SLUG / "exercise.toml").read_text())["checks"]
    assert CheckResult.objects.filter(submission=graded).count() == len(checks)
