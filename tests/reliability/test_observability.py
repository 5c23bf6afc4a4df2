"""Prometheus metrics (`/metrics`, ops.metrics) read from the real database and Redis,
behind a token or an address allow-list; log lines carrying the job's ids (common.logs), in
plain text or JSON."""

from __future__ import annotations

import io
import json
import logging
from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone
from prometheus_client.parser import text_string_to_metric_families

pytestmark = pytest.mark.django_db

TOKEN = "scrape-me-0123456789"


def _metrics(client: Any, **headers: Any) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    response = client.get("/metrics", **headers)
    assert response.status_code == 200, response.content
    assert response["Content-Type"].startswith("text/plain; version=0.0.4")
    samples = {}
    for family in text_string_to_metric_families(response.content.decode()):
        for sample in family.samples:
            samples[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return samples


def _submission(learner: Any, *, status: str, seconds: float = 0.0, **fields: Any) -> Any:
    from courses.models import Exercise
    from submissions.models import Submission

    exercise = Exercise.objects.get(slug="chain-rule")
    now = timezone.now()
    return Submission.objects.create(
        learner=learner, exercise=exercise, version_id=exercise.current_version_id,
        code="x = 1", status=status, started_at=now - timedelta(seconds=seconds),
        graded_at=now if status == "graded" else None, **fields,
    )  # fmt: skip


def _report(status: str = "graded") -> dict[str, Any]:
    return {"status": status, "runtime": "bubblewrap torch-2.6.0 cpu", "score": 1.0}


def test_metrics_do_not_exist_until_a_token_or_an_address_is_configured(client: Any) -> None:
    response = client.get("/metrics")
    assert response.status_code == 404
    assert b"gradlab_" not in response.content


@pytest.mark.parametrize(
    "authorization", ["", "Bearer wrong-token", f"Token {TOKEN}", f"Bearer {TOKEN}x"]
)
def test_metrics_refuse_a_scraper_without_the_token_and_show_nothing(
    client: Any, settings: Any, authorization: str
) -> None:
    settings.GRADLAB_METRICS_TOKEN = TOKEN
    headers = {"HTTP_AUTHORIZATION": authorization} if authorization else {}

    response = client.get("/metrics", **headers)

    assert response.status_code == 403
    assert b"gradlab_" not in response.content


@pytest.mark.parametrize(
    ("remote", "allowed", "status"),
    [("10.1.2.3", ["10.0.0.0/8"], 200), ("10.1.2.3", ["192.168.0.0/16"], 403),
     ("::1", ["::1"], 200)],
)  # fmt: skip
def test_metrics_allow_listed_networks_by_the_connections_address_only(
    client: Any, settings: Any, remote: str, allowed: list[str], status: int
) -> None:
    settings.GRADLAB_METRICS_ALLOWED_IPS = allowed
    # a client-written X-Forwarded-For never counts
    response = client.get("/metrics", REMOTE_ADDR=remote, HTTP_X_FORWARDED_FOR="10.0.0.1")
    assert response.status_code == status


def test_metrics_count_submissions_retries_durations_and_reviews_from_the_database(
    client: Any, settings: Any, alice_learner: Any
) -> None:
    settings.GRADLAB_METRICS_TOKEN = TOKEN
    _submission(alice_learner, status="queued")
    _submission(alice_learner, status="running", attempts=2)
    _submission(alice_learner, status="graded", seconds=1.5, attempts=1, report=_report())
    _submission(alice_learner, status="graded", seconds=25, attempts=3, report=_report("failed"))
    _submission(alice_learner, status="graded", seconds=4, report=_report(), review="held")
    _submission(alice_learner, status="failed", attempts=4)

    found = _metrics(client, HTTP_AUTHORIZATION=f"Bearer {TOKEN}")

    def by_status(status: str) -> float:
        return found[("gradlab_submissions", (("status", status),))]

    assert [by_status(s) for s in ("queued", "running", "graded", "failed")] == [1, 1, 3, 1]
    assert found[("gradlab_grading_retries_total", ())] == 1 + 2 + 3
    assert found[("gradlab_submissions_review", (("review", "held"),))] == 1
    labels = (("backend", "bubblewrap"), ("exercise", "chain-rule"))
    assert found[("gradlab_grading_duration_seconds_count", labels)] == 3
    assert found[("gradlab_grading_duration_seconds_bucket", (*labels, ("le", "2.0")))] == 1
    assert found[("gradlab_grading_duration_seconds_bucket", (*labels, ("le", "5.0")))] == 2
    assert found[("gradlab_grading_duration_seconds_bucket", (*labels, ("le", "30.0")))] == 3
    assert 30.0 < found[("gradlab_grading_duration_seconds_sum", labels)] < 31.0
    runs = (("exercise", "chain-rule"), ("outcome", "failed"))
    assert found[("gradlab_learner_runs_total", runs)] == 1
    assert found[("gradlab_learner_runs_total", (runs[0], ("outcome", "ok")))] == 2


def test_metrics_show_the_brokers_queue_depth_and_the_sweeps_age(
    client: Any,
    settings: Any,
    api: Any,
    alice_learner: Any,
    worker_queue: str,
    django_capture_on_commit_callbacks: Any,
) -> None:
    import math

    from gradlab_fixtures import purge_queue

    from ops.heartbeats import SWEEP, heartbeat_record

    settings.GRADLAB_METRICS_TOKEN = TOKEN
    purge_queue(worker_queue)
    learner = api(alice_learner)
    headers = {"HTTP_AUTHORIZATION": f"Bearer {TOKEN}"}
    assert math.isnan(_metrics(client, **headers)[("gradlab_sweep_age_seconds", ())])

    for _ in range(3):  # no worker: the messages wait in the real Redis queue
        body = {"exercise": "chain-rule", "code": "x = 1"}
        with django_capture_on_commit_callbacks(execute=True):  # sent after the commit
            assert learner.post("/api/v1/submissions/", body, format="json").status_code == 201
    heartbeat_record(SWEEP, at=timezone.now() - timedelta(seconds=42))
    found = _metrics(client, **headers)

    assert found[("gradlab_queue_depth", (("queue", worker_queue),))] == 3
    assert 42 <= found[("gradlab_sweep_age_seconds", ())] < 60
    purge_queue(worker_queue)


# -- log lines ---------------------------------------------------------------------------


def _captured(formatter: logging.Formatter) -> tuple[logging.Logger, io.StringIO]:
    from common.logs import JobContextFilter

    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(formatter)
    handler.addFilter(JobContextFilter())
    logger = logging.getLogger(f"gradlab.test.{id(stream)}")
    logger.propagate = False
    logger.handlers = [handler]
    logger.setLevel(logging.INFO)
    return logger, stream


def test_json_log_lines_carry_the_ids_bound_for_the_job_and_only_inside_it() -> None:
    from common.logs import JsonFormatter, job_context

    logger, stream = _captured(JsonFormatter())
    logger.info("before")
    with job_context(task_id="t-1"), job_context(submission_id=12, job_id="submission-12-1"):
        logger.warning("submission %s: graded", 12)
        try:
            raise ValueError("boom")
        except ValueError:
            logger.exception("crashed")
    logger.info("after")

    lines = [json.loads(line) for line in stream.getvalue().splitlines()]
    assert [line["message"] for line in lines] == ["before", "submission 12: graded",
                                                   "crashed", "after"]  # fmt: skip
    inside = lines[1:3]
    for line in inside:
        assert (line["submission_id"], line["job_id"], line["task_id"]) == (
            12, "submission-12-1", "t-1")  # fmt: skip
        assert {"timestamp", "level", "logger"} <= set(line)
        assert line["timestamp"].endswith("+00:00") and "T" in line["timestamp"]
    assert lines[1]["level"] == "WARNING"
    assert "ValueError: boom" in lines[2]["exc_info"]
    for line in (lines[0], lines[3]):
        assert "submission_id" not in line and "task_id" not in line


def test_plain_log_lines_append_the_jobs_ids() -> None:
    from common.logs import PlainFormatter, job_context

    logger, stream = _captured(PlainFormatter())
    with job_context(submission_id=7, job_id="submission-7-2"):
        logger.info("graded")
    logger.info("idle")

    graded, idle = stream.getvalue().splitlines()
    assert graded.endswith("graded [submission_id=7 job_id=submission-7-2]")
    assert idle.endswith(": idle")


@pytest.mark.processes  # a fresh django.setup()
def test_an_unknown_log_format_is_refused_at_start() -> None:
    import os
    import subprocess
    import sys

    from gradlab_fixtures import ROOT

    env = {**os.environ, "LOG_FORMAT": "xml", "PYTHONPATH": f"{ROOT / 'platform'}:{ROOT}",
           "DJANGO_SETTINGS_MODULE": "config.settings.test"}  # fmt: skip
    done = subprocess.run([sys.executable, "-c", "import django; django.setup()"], env=env,
                          capture_output=True, text=True, cwd=ROOT, timeout=60)  # fmt: skip
    assert done.returncode != 0
    assert "LOG_FORMAT='xml': expected 'plain' or 'json'" in done.stderr
