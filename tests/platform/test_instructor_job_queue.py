"""Instructors' jobs (validations, regrades) go to a queue of their own
(GRADLAB_QUEUE_AUTHORING), which `make run` and docker-compose give a worker of its own:
a flood of them never stands between a learner's submission and the worker that grades it."""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from typing import Any

import pytest
from gradlab_fixtures import purge_queue, queue_length, wait_for

GRADING_WAIT_S = 400.0


@pytest.fixture
def queues(settings: Any) -> Iterator[tuple[str, str]]:
    """(learners' queue, instructors' queue), private to this test, nobody consuming."""
    tag = secrets.token_hex(4)
    learners, authoring = f"grading-jobq-{tag}", f"authoring-jobq-{tag}"
    settings.GRADLAB_QUEUE_CPU = settings.GRADLAB_QUEUE_GPU = learners
    settings.GRADLAB_QUEUE_AUTHORING = authoring
    yield learners, authoring
    purge_queue(learners)
    purge_queue(authoring)


def _flood(user: Any) -> list[int]:
    """A validation and a regrade of every catalog exercise (each one a job of its own)."""
    from authoring.jobs import exercise_job_create
    from courses.models import Exercise

    return [
        exercise_job_create(exercise=exercise, kind=kind, user=user).pk
        for exercise in Exercise.objects.exclude(current_version=None)
        for kind in ("validate", "regrade")
    ]


def test_instructor_jobs_are_queued_apart_from_learners_submissions(
    queues: tuple[str, str],
    catalog: Any,
    bob_instructor: Any,
    alice_learner: Any,
    django_capture_on_commit_callbacks: Any,
) -> None:
    from submissions.services import submission_create

    learners, authoring = queues
    with django_capture_on_commit_callbacks(execute=True):
        jobs = _flood(bob_instructor)
        submission_create(learner=alice_learner, exercise_slug="first-gradient", code="x = 1")

    assert len(jobs) >= 4
    assert queue_length(authoring) == len(jobs)
    assert queue_length(learners) == 1


@pytest.mark.worker
@pytest.mark.sandbox
def test_a_learner_is_graded_while_a_flood_of_instructor_jobs_waits(
    start_worker: Any,
    worker_queue: str,
    settings: Any,
    catalog: Any,
    bob_instructor: Any,
    alice_learner: Any,
) -> None:
    """The learners' worker (as `make run`'s) consumes only the learners' queue: the flood
    queued first is still waiting, untouched, when the learner's grade is in."""
    from courses.models import ExerciseJob
    from submissions.models import Submission
    from submissions.services import submission_create

    authoring = f"{worker_queue}-authoring"
    settings.GRADLAB_QUEUE_AUTHORING = authoring
    start_worker(GRADLAB_QUEUE_AUTHORING=authoring)
    try:
        jobs = _flood(bob_instructor)
        submission, _ = submission_create(
            learner=alice_learner, exercise_slug="first-gradient", code="x = 1"
        )

        graded = wait_for(
            lambda: Submission.objects.filter(pk=submission.pk, status="graded").first(),
            timeout=GRADING_WAIT_S, what="the learner's grade",
        )  # fmt: skip

        assert graded.score is not None
        assert queue_length(authoring) == len(jobs)
        assert set(ExerciseJob.objects.filter(pk__in=jobs).values_list("status", flat=True)) == {
            "queued"
        }
    finally:
        purge_queue(authoring)
