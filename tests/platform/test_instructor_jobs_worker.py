"""Instructor jobs (validate, regrade) run by a REAL Celery worker process on the test
database and Redis: run, failure after retries, and recovery of lost ones by the sweep."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone
from gradlab_fixtures import wait_for
from platform_helpers import E2E_SLUG, manifest, package_file

pytestmark = [pytest.mark.worker, pytest.mark.sandbox]

VALIDATION_TIMEOUT_S = 600.0


def _job(job_id: int) -> Any:
    from courses.models import ExerciseJob

    return ExerciseJob.objects.get(pk=job_id)


def _finished(job_id: int) -> Any:
    job = _job(job_id)
    return job if job.status in ("done", "failed") else None


def _create(kind: str, user: Any, slug: str = E2E_SLUG) -> Any:
    from authoring.jobs import exercise_job_create
    from courses.models import Exercise

    return exercise_job_create(exercise=Exercise.objects.get(slug=slug), kind=kind, user=user)


def test_a_regrade_job_is_run_once_by_a_worker_and_its_outcome_stored(
    grading_worker: Any, bob_instructor: Any, alice_learner: Any
) -> None:
    """What a regrade changes is tested in test_submission_services.py; here, the job."""
    from courses.models import Exercise
    from submissions.models import Submission

    exercise = Exercise.objects.get(slug=E2E_SLUG)
    Submission.objects.create(  # not graded: a regrade leaves it alone
        learner=alice_learner, exercise=exercise, version=exercise.current_version,
        code=package_file(E2E_SLUG, "solution.py"), status="failed",
    )  # fmt: skip
    created = _create("regrade", bob_instructor)

    job = wait_for(lambda: _finished(created.pk), what="the regrade")

    assert (job.status, job.attempts, job.error) == ("done", 1, "")
    assert job.outcome == {
        "exercise": E2E_SLUG, "version": exercise.current_version.number,
        "regraded": 0, "changed": [], "errors": [], "preview": False,
    }  # fmt: skip
    assert job.lease_expires_at is None and job.finished_at is not None


def test_a_validation_job_runs_every_known_solution_of_the_package_in_the_sandbox(
    grading_worker: Any, bob_instructor: Any
) -> None:
    created = _create("validate", bob_instructor, "first-gradient")

    # 9 sandbox runs and 5 auto-mutants: minutes on a loaded 2-core machine.
    job = wait_for(
        lambda: _finished(created.pk), timeout=VALIDATION_TIMEOUT_S, what="the validation"
    )

    assert job.status == "done", job.error
    problems = [row for row in job.outcome["rows"] if not row["ok"]]
    assert problems == [], problems
    mutants = {row["name"]: row for row in job.outcome["mutants"]}
    assert job.outcome["mutant_counts"]["generated"] == len(mutants) >= 4
    dropped = mutants["drop-requires-grad@3"]
    assert dropped["outcome"] == "caught" and "graph-broken" in dropped["detail"].split(", ")
    assert dropped["diff"] == ""  # only survivors and declared equivalents carry one
    assert {row["outcome"] for row in mutants.values()} == {"caught"}
    assert job.outcome["ok"] is True and job.outcome["problems"] == 0
    names = [row["name"] for row in job.outcome["rows"]]
    assert any(name.startswith("reference") for name in names), names
    wrong = manifest("first-gradient").get("wrong", [])
    assert sum(name.startswith("wrong") for name in names) == len(wrong)


def test_a_job_the_sandbox_cannot_run_is_retried_then_failed_with_the_reason(
    start_worker: Any, bob_instructor: Any
) -> None:
    worker = start_worker(GRADLAB_SANDBOX="no-such-backend", GRADLAB_MAX_ATTEMPTS="2")

    created = _create("validate", bob_instructor)

    job = wait_for(lambda: _finished(created.pk), what="the retries")

    assert (job.status, job.attempts) == ("failed", 2)
    assert job.error.startswith("The sandbox could not run (not the package's fault)")
    assert "no-such-backend" in job.error
    assert job.outcome is None
    attempts = f"exercise job {job.pk} attempt"
    assert worker.logged(attempts, count=2).count(attempts) == 2


@pytest.mark.parametrize("status", ["queued", "running"])
def test_a_job_whose_message_or_worker_was_lost_is_recovered_by_the_sweep(
    start_worker: Any, bob_instructor: Any, status: str
) -> None:
    """queued: the broker lost the message; running: the worker died mid-job."""
    from courses.models import Exercise, ExerciseJob

    exercise = Exercise.objects.get(slug=E2E_SLUG)
    lost = ExerciseJob.objects.create(  # no message was ever sent for it
        exercise=exercise, version=exercise.current_version, kind="regrade",
        requested_by=bob_instructor, status=status, attempts=1 if status == "running" else 0,
        lease_expires_at=timezone.now() - timedelta(seconds=1),
    )  # fmt: skip
    worker = start_worker(beat=True, GRADLAB_RECOVERY_SWEEP_SECONDS="1")

    job = wait_for(lambda: _finished(lost.pk), what="the sweep and the run")

    assert job.status == "done" and job.outcome["regraded"] == 0
    assert job.attempts == (2 if status == "running" else 1)
    worker.logged(
        f"exercise job {lost.pk} ({status}, owner ", "re-queued: lease expired or owner gone"
    )
