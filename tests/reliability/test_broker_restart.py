"""Redis restarted (no persistence) with 10 submissions queued and 1 running: the recovery
sweep sees the broker's new run id and sends the 10 queued ones again at once (not after
their queued lease); the running one, whose owner is alive, is left to finish. A private
redis-server on a spare port; the real database."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from gradlab_fixtures import queue_length
from test_broker_down import E2E_SLUG, PrivateRedis, _use_broker

pytestmark = pytest.mark.django_db(transaction=True)

QUEUED = 10


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[PrivateRedis]:
    from django.conf import settings

    shared = settings.CELERY_BROKER_URL
    server = PrivateRedis(tmp_path)
    server.start()
    _use_broker(server.url)
    yield server
    server.stop()
    _use_broker(shared)


def test_queued_submissions_are_sent_again_at_once_after_a_redis_restart(
    broker: PrivateRedis, alice_learner: Any, worker_queue: str, settings: Any
) -> None:
    from common.owner import current
    from ops.tasks import sweep_submissions
    from submissions.models import Submission
    from submissions.services import submission_create

    settings.GRADLAB_RATE_LIMIT_COUNT = QUEUED + 5
    queued = [submission_create(learner=alice_learner, exercise_slug=E2E_SLUG, code="x = 1")[0]
              for _ in range(QUEUED)]  # fmt: skip
    running, _ = submission_create(learner=alice_learner, exercise_slug=E2E_SLUG, code="x = 2")
    Submission.objects.filter(pk=running.pk).update(status="running", attempts=1,
                                                    claimed_by=str(current()))  # fmt: skip
    assert queue_length(worker_queue) == QUEUED + 1
    assert sweep_submissions() == {"requeued": [], "failed": []}  # the broker's first run id

    broker.stop()
    broker.start()  # the same port, nothing kept
    assert queue_length(worker_queue) == 0
    result = sweep_submissions()

    assert sorted(result["requeued"]) == sorted(row.pk for row in queued)
    assert queue_length(worker_queue) == QUEUED
    assert Submission.objects.get(pk=running.pk).status == "running"
    assert sweep_submissions() == {"requeued": [], "failed": []}  # once per restart
    assert queue_length(worker_queue) == QUEUED


def test_a_restart_before_the_first_sweep_is_noticed_from_the_run_id_a_worker_recorded(
    broker: PrivateRedis, alice_learner: Any, worker_queue: str, settings: Any
) -> None:
    from config.celery_app import _record_broker_run
    from ops.tasks import sweep_submissions
    from submissions.services import submission_create

    settings.GRADLAB_RATE_LIMIT_COUNT = QUEUED + 5
    _record_broker_run()  # a worker started (worker_ready): no sweep has run yet
    queued = [submission_create(learner=alice_learner, exercise_slug=E2E_SLUG, code="x = 1")[0]
              for _ in range(QUEUED)]  # fmt: skip
    assert queue_length(worker_queue) == QUEUED

    broker.stop()
    broker.start()  # nothing kept, and no sweep saw the first run id
    result = sweep_submissions()

    assert sorted(result["requeued"]) == sorted(row.pk for row in queued)
    assert queue_length(worker_queue) == QUEUED
