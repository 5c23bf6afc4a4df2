"""A grading that outlives the broker's visibility timeout: Redis hands its message to
another worker while the first still runs it. The second finds the claim held by a live
owner and skips it: one claim, one sandbox run of the learner's code, one report.

The startup check (ops.checks) refuses a worker whose visibility timeout is below twice
the task time limit, so the test cannot give a worker a tiny one; instead the running
task's entry in kombu's index of unacknowledged messages is dated back past the (real)
visibility timeout, exactly as if it had run that long. A second worker restores visible
messages when it starts consuming (kombu's Redis QoS): the message is delivered again, to a
free pool process of either worker."""

from __future__ import annotations

import base64
import json
import time
from typing import Any

import pytest
import redis
from gradlab_fixtures import EXERCISES, wait_for

from grader.rewrite import STARTER

pytestmark = [pytest.mark.worker, pytest.mark.sandbox]

# A script exercise: its learner's code runs twice (the second run, grader/runs/second.py),
# and sleeps in its first run only (the second run's source defines the rewrite's STARTER).
SLUG = "training-loop"
SLEEP_S = 30  # the learner's run: long enough for a second worker to start meanwhile
UNACKED, UNACKED_INDEX = "unacked", "unacked_index"  # kombu's Redis QoS keys


def _broker() -> redis.Redis:
    from django.conf import settings

    return redis.Redis.from_url(settings.CELERY_BROKER_URL)


def _unacked_tag(submission_id: int) -> str | None:
    """The delivery tag of the unacknowledged message of this submission's grading."""
    for tag, raw in _broker().hgetall(UNACKED).items():
        message = json.loads(raw)[0]  # [message, exchange, routing key]
        task = message["headers"].get("task")
        if task == "gradlab.grade_submission" and _task_args(message) == [submission_id]:
            return str(tag.decode())
    return None


def _task_args(message: dict[str, Any]) -> Any:
    body = message["body"]
    if message.get("properties", {}).get("body_encoding") == "base64":
        body = base64.b64decode(body)
    return json.loads(body)[0]  # Celery's protocol 2: [args, kwargs, embed]


def _date_back(tag: str, seconds: float) -> None:
    _broker().zadd(UNACKED_INDEX, {tag: time.time() - seconds})


def test_a_grading_longer_than_the_visibility_timeout_runs_once_and_reports_once(
    start_worker: Any, api: Any, alice_learner: Any, settings: Any
) -> None:
    from courses.models import Exercise, ExerciseVersion
    from submissions.models import CheckResult, Submission

    exercise = Exercise.objects.get(slug=SLUG)
    files = dict(exercise.current_version.files)
    manifest = files["exercise.toml"]
    assert "\n[limits]\nwall_seconds = 20\n" in manifest
    # the sleep is no CPU
    files["exercise.toml"] = manifest.replace("\nwall_seconds = 20\n", "\nwall_seconds = 90\n")
    ExerciseVersion.objects.filter(pk=exercise.current_version_id).update(files=files)
    first = start_worker(GRADLAB_SANDBOX_WARM="0")
    code = (EXERCISES / SLUG / "solution.py").read_text(encoding="utf-8")
    code += f"\nimport time\nif {STARTER!r} not in globals():\n    time.sleep({SLEEP_S})\n"
    response = api(alice_learner).post("/api/v1/submissions/", {"exercise": SLUG, "code": code},
                                       format="json")  # fmt: skip
    submission_id = int(response.json()["id"])
    wait_for(lambda: Submission.objects.get(pk=submission_id).status == "running", what="claim")
    tag = wait_for(lambda: _unacked_tag(submission_id), what="the unacknowledged message")

    visibility = settings.CELERY_BROKER_TRANSPORT_OPTIONS["visibility_timeout"]
    _date_back(tag, visibility + 60)  # delivered longer ago than the visibility timeout
    second = start_worker(GRADLAB_SANDBOX_WARM="0")  # restores it at start: a redelivery

    skipped = f"submission {submission_id}: not queued, skipping this delivery"
    # the restored message goes to whichever worker has a free pool process
    wait_for(lambda: skipped in first.output() + second.output(), timeout=60,
             what="the redelivery")  # fmt: skip
    assert Submission.objects.get(pk=submission_id).status == "running"  # still the first's
    row = wait_for(lambda: (r := Submission.objects.get(pk=submission_id)).status == "graded"
                   and r, timeout=SLEEP_S + 90, what="the first worker's report")  # fmt: skip

    assert row.attempts == 1  # one claim: one sandbox run of the learner's code
    assert row.passed is True
    checks = len(files["exercise.toml"].split("[[checks]]")) - 1
    assert CheckResult.objects.filter(submission=row).count() == checks
    graded = f"submission {submission_id} attempt 1: graded"
    assert (first.output() + second.output()).count(graded) == 1
