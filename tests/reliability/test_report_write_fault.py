"""The database failing while a report is written: the report's transaction rolls back as
a whole (no score without its checks, no checks without their score) and the submission is
queued again and graded by its next attempt. Real grader and sandbox, real PostgreSQL and
Redis; the fault is one failing INSERT of the check rows."""

from __future__ import annotations

import tomllib
from typing import Any

import pytest
from django.db import OperationalError
from gradlab_fixtures import EXERCISES, queue_length

pytestmark = [pytest.mark.django_db, pytest.mark.sandbox]

E2E_SLUG = "chain-rule"


def _solution() -> str:
    return (EXERCISES / E2E_SLUG / "solution.py").read_text(encoding="utf-8")


def _check_count() -> int:
    return len(tomllib.loads((EXERCISES / E2E_SLUG / "exercise.toml").read_text())["checks"])


def test_a_database_fault_mid_report_leaves_nothing_half_written_and_is_retried(
    alice_learner: Any, worker_queue: str, monkeypatch: Any, settings: Any
) -> None:
    from courses.models import Exercise
    from submissions import services
    from submissions.models import CheckResult, Submission

    settings.GRADLAB_RETRY_BACKOFF_SECONDS = 0
    exercise = Exercise.objects.get(slug=E2E_SLUG)
    submission = Submission.objects.create(
        learner=alice_learner, exercise=exercise, version=exercise.current_version,
        code=_solution(),
    )  # fmt: skip
    real_bulk_create = CheckResult.objects.bulk_create
    failures = iter([OperationalError("server closed the connection unexpectedly")])

    def failing_once(*args: Any, **kwargs: Any) -> Any:
        fault = next(failures, None)
        if fault is not None:
            raise fault
        return real_bulk_create(*args, **kwargs)

    monkeypatch.setattr(CheckResult.objects, "bulk_create", failing_once)

    assert services.submission_grade(submission_id=submission.pk) == services.Outcome.RETRY
    row = Submission.objects.get(pk=submission.pk)
    assert (row.status, row.attempts) == ("queued", 1)
    assert row.score is None and row.report is None and row.graded_at is None
    assert not CheckResult.objects.filter(submission=row).exists()
    assert queue_length(worker_queue) == 1  # sent again

    assert services.submission_grade(submission_id=submission.pk) == services.Outcome.GRADED
    row = Submission.objects.get(pk=submission.pk)
    assert (row.status, row.attempts, row.passed) == ("graded", 2, True)
    assert CheckResult.objects.filter(submission=row).count() == _check_count()
