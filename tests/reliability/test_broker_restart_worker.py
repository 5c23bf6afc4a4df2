"""Redis restarted (nothing kept) under a running worker, with gradings running and more
queued: the worker reconnects and stays up, the sweep sees the broker's new run id and
sends the lost queued ones again, and every submission is graded once. A private
redis-server on a spare port; the real database, worker, scheduler and sandbox."""

from __future__ import annotations

import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from gradlab_fixtures import EXERCISES, wait_for
from test_broker_down import E2E_SLUG, PrivateRedis, _use_broker

pytestmark = [pytest.mark.worker, pytest.mark.sandbox]

BURST = 6


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[PrivateRedis]:
    """A private redis-server (not started yet) that this process sends to."""
    from django.conf import settings

    shared = settings.CELERY_BROKER_URL
    server = PrivateRedis(tmp_path)
    _use_broker(server.url)
    yield server
    server.stop()
    _use_broker(shared)


def test_a_worker_survives_a_redis_restart_and_every_lost_message_is_graded_once(
    start_worker: Any, api: Any, alice_learner: Any, broker: PrivateRedis, settings: Any
) -> None:
    from submissions.models import CheckResult, Submission

    settings.GRADLAB_RATE_LIMIT_COUNT = BURST + 1
    broker.start()
    worker = start_worker(beat=True, CELERY_BROKER_URL=broker.url,
                          REDIS_URL=broker.url, GRADLAB_RECOVERY_SWEEP_SECONDS="2",
                          GRADLAB_SANDBOX_WARM="1")  # fmt: skip
    code = (EXERCISES / E2E_SLUG / "solution.py").read_text(encoding="utf-8")
    code += "\nimport time\ntime.sleep(3)\n"
    client = api(alice_learner)
    ids = [int(client.post("/api/v1/submissions/", {"exercise": E2E_SLUG, "code": code},
                           format="json").json()["id"]) for _ in range(BURST)]  # fmt: skip
    wait_for(lambda: Submission.objects.filter(pk__in=ids, status="running").exists(),
             what="a grading to start")  # fmt: skip

    broker.stop()
    broker.start()  # the same port, nothing kept: the queued messages are gone

    done = wait_for(
        lambda: Submission.objects.filter(pk__in=ids, status="graded").count() == BURST,
        timeout=240,
        what="every submission graded after the restart",
    )
    assert done
    assert worker.process.poll() is None  # reconnected, still up
    worker.logged("the broker restarted:")
    checks = len(tomllib.loads((EXERCISES / E2E_SLUG / "exercise.toml").read_text())["checks"])
    for row in Submission.objects.filter(pk__in=ids):
        assert row.passed is True
        assert CheckResult.objects.filter(submission=row).count() == checks
