"""Authoring against a REAL Celery worker and sandbox: a draft's validation runs as a
background job, publishing waits for it to pass, and a preview of a draft is graded."""

from __future__ import annotations

from typing import Any

import pytest
from gradlab_fixtures import MODULE_SLUG, wait_for

pytestmark = [pytest.mark.worker, pytest.mark.sandbox]

VALIDATION_TIMEOUT_S = 600.0


def _finished(job_id: int) -> Any:
    from courses.models import ExerciseJob

    job = ExerciseJob.objects.get(pk=job_id)
    return job if job.status in ("done", "failed") else None


def _exercise() -> Any:
    from courses.models import Exercise

    return Exercise.objects.get(slug="cube-gradient")


def test_a_new_draft_validates_in_the_background_and_then_publishes(
    grading_worker: Any, bob_instructor: Any
) -> None:
    from authoring.services import draft_validate, exercise_create, exercise_publish
    from courses.models import Module

    exercise_create(
        module=Module.objects.get(slug=MODULE_SLUG), slug="cube-gradient", user=bob_instructor
    )
    created = draft_validate(exercise=_exercise(), user=bob_instructor)

    job = wait_for(lambda: _finished(created.pk), timeout=VALIDATION_TIMEOUT_S, what="validation")
    version = exercise_publish(exercise=_exercise())

    assert job.status == "done" and job.outcome["ok"] is True, job.outcome
    assert [row["name"] for row in job.outcome["rows"]][:3] == [
        "reference: solution.py", "starter: starter.py", "wrong: wrong/forgot-requires-grad.py",
    ]  # fmt: skip
    assert version.number == 1 and _exercise().current_version_id == version.pk


def _snapshot(job_id: int) -> tuple[str, int, int] | None:
    """(status, runs done, runs to come) of the job's outcome so far; None once finished."""
    from courses.models import ExerciseJob

    job = ExerciseJob.objects.get(pk=job_id)
    outcome = job.outcome or {}
    if job.status in ("done", "failed"):
        return None
    return (job.status, outcome.get("runs_done", 0), outcome.get("pending", 0))


def test_a_running_validation_shows_its_rows_as_they_arrive(
    grading_worker: Any, bob_instructor: Any
) -> None:
    from authoring.services import draft_validate, exercise_create
    from courses.models import Module

    exercise_create(
        module=Module.objects.get(slug=MODULE_SLUG), slug="cube-gradient", user=bob_instructor
    )
    created = draft_validate(exercise=_exercise(), user=bob_instructor)
    seen: list[tuple[str, int, int]] = []

    def finished() -> Any:
        snapshot = _snapshot(created.pk)
        if snapshot is not None and snapshot not in seen:
            seen.append(snapshot)
        return _finished(created.pk)

    job = wait_for(finished, timeout=VALIDATION_TIMEOUT_S, what="validation")

    partial = [(done, pending) for status, done, pending in seen if status == "running" and done]
    assert len(partial) >= 3, seen  # the reference, then runs one by one
    assert [done for done, _ in partial] == sorted(done for done, _ in partial)
    total = job.outcome["runs_done"]
    assert all(done + pending == total for done, pending in partial)
    assert job.status == "done" and job.outcome["pending"] == 0 and job.outcome["ok"] is True


def test_a_wrong_solution_with_the_wrong_diagnosis_fails_validation_and_blocks_publishing(
    grading_worker: Any, bob_instructor: Any
) -> None:
    from authoring.services import draft_save, draft_validate, exercise_create, exercise_publish
    from common.errors import Conflict
    from courses.models import Module

    draft = exercise_create(
        module=Module.objects.get(slug=MODULE_SLUG), slug="cube-gradient", user=bob_instructor
    )
    files = dict(draft.version.files)
    files["exercise.toml"] = files["exercise.toml"].replace(
        'diagnosis = "graph-broken"', 'diagnosis = "sign-error"'
    )
    assert draft_save(exercise=_exercise(), files=files, user=bob_instructor).problem == ""
    created = draft_validate(exercise=_exercise(), user=bob_instructor)

    job = wait_for(lambda: _finished(created.pk), timeout=VALIDATION_TIMEOUT_S, what="validation")

    assert job.status == "done" and job.outcome["ok"] is False
    failing = [row for row in job.outcome["rows"] if not row["ok"]]
    assert [row["name"] for row in failing] == ["wrong: wrong/forgot-requires-grad.py"]
    assert "fails with sign-error" in failing[0]["expected"]
    with pytest.raises(Conflict, match="validation failed"):
        exercise_publish(exercise=_exercise())
    assert _exercise().current_version is None
