"""Submission services against the real database: grading only what is queued, the
queue of an exercise, and regrading (the claim and the sweep: test_job_pipeline.py)."""

from __future__ import annotations

from typing import Any

import pytest
from django.utils import timezone
from platform_helpers import E2E_SLUG, package_file

pytestmark = pytest.mark.django_db


def _submission(learner: Any, **fields: Any) -> Any:
    from courses.models import Exercise
    from submissions.models import Submission

    exercise = Exercise.objects.get(slug=E2E_SLUG)
    defaults = {"code": package_file(E2E_SLUG, "solution.py"), "lease_expires_at": timezone.now()}
    return Submission.objects.create(
        learner=learner, exercise=exercise, version=exercise.current_version,
        **{**defaults, **fields},
    )  # fmt: skip


def test_grading_a_submission_that_is_not_queued_does_nothing(alice_learner: Any) -> None:
    from submissions.services import Outcome, submission_grade

    graded = _submission(alice_learner, status="graded", attempts=1, score=10.0)

    assert submission_grade(submission_id=graded.pk) is Outcome.SKIPPED
    assert submission_grade(submission_id=987654) is Outcome.SKIPPED
    graded.refresh_from_db()
    assert graded.attempts == 1 and graded.score == 10.0


def test_a_gpu_exercise_goes_to_the_gpu_queue_when_gpu_workers_are_enabled(
    catalog: Any, settings: Any
) -> None:
    from courses.models import Exercise
    from submissions.services import queue_for

    settings.GRADLAB_GPU_QUEUE_ENABLED = True
    exercise = Exercise.objects.get(slug=E2E_SLUG)
    exercise.device = "cuda"

    assert queue_for(exercise) == settings.GRADLAB_QUEUE_GPU
    exercise.device = "cpu"
    assert queue_for(exercise) == settings.GRADLAB_QUEUE_CPU


def test_a_gpu_exercise_is_graded_on_the_cpu_queue_without_gpu_workers(
    catalog: Any, settings: Any
) -> None:
    from courses.models import Exercise
    from submissions.services import queue_for

    settings.GRADLAB_GPU_QUEUE_ENABLED = False
    exercise = Exercise.objects.get(slug=E2E_SLUG)
    exercise.device = "cuda"

    assert queue_for(exercise) == settings.GRADLAB_QUEUE_CPU


@pytest.mark.sandbox
def test_regrade_reports_the_scores_that_changed(alice_learner: Any, dave_learner: Any) -> None:
    from courses.models import Exercise
    from submissions.services import exercise_regrade

    right = package_file(E2E_SLUG, "solution.py")
    # Graded by an older, stricter version: 0 points for a correct solution.
    changed = _submission(
        alice_learner, code=right, status="graded", score=0.0, max_score=10.0, passed=False
    )
    same = _submission(
        dave_learner, code=right, status="graded", score=10.0, max_score=10.0, passed=True
    )
    _submission(dave_learner, code=right, status="failed")  # not graded: left alone

    result = exercise_regrade(exercise=Exercise.objects.get(slug=E2E_SLUG))

    assert result.regraded == 2 and result.errors == ()
    assert [c.submission_id for c in result.changed] == [changed.pk]
    change = result.changed[0]
    assert (change.old_score, change.new_score) == (0.0, 10.0)
    assert (change.old_passed, change.new_passed) == (False, True)
    changed.refresh_from_db()
    assert changed.passed is True and changed.checks.count() > 0
    same.refresh_from_db()
    assert same.checks.count() == changed.checks.count()


@pytest.mark.sandbox
def test_a_regrade_preview_reports_whose_score_would_change_and_changes_nothing(
    alice_learner: Any,
) -> None:
    from courses.models import Exercise
    from submissions.services import exercise_regrade

    right = package_file(E2E_SLUG, "solution.py")
    stale = _submission(
        alice_learner, code=right, status="graded", score=0.0, max_score=10.0, passed=False
    )

    result = exercise_regrade(exercise=Exercise.objects.get(slug=E2E_SLUG), apply=False)

    assert [(c.submission_id, c.old_score, c.new_score) for c in result.changed] == [
        (stale.pk, 0.0, 10.0)
    ]
    stale.refresh_from_db()
    assert (stale.score, stale.passed, stale.checks.count()) == (0.0, False, 0)


@pytest.mark.sandbox
def test_regrade_command_prints_what_changed(alice_learner: Any) -> None:
    from io import StringIO

    from django.core.management import call_command

    right = package_file(E2E_SLUG, "solution.py")
    stale = _submission(alice_learner, code=right, status="graded", score=1.0, passed=False)
    out = StringIO()

    call_command("regrade", E2E_SLUG, stdout=out)

    lines = out.getvalue().splitlines()
    assert lines[0].startswith(f"submission {stale.pk} (alice_learner): 1.0 -> 10.0")
    assert lines[-1].endswith("1 regraded, 1 changed, 0 errors")
