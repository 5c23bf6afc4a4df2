"""A queued submission says where it stands: its position among the submissions queued
before it for the same kind of worker, and an estimate of the wait from the median of the
recent gradings' durations and how many are graded at once; in the API (the detail) and in
the status the exercise page polls."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

pytestmark = pytest.mark.django_db


def _submission(learner: Any, catalog: Any, status: str, **fields: Any) -> Any:
    from submissions.models import Submission

    exercise = catalog.exercises.get(slug="chain-rule")
    return Submission.objects.create(
        learner=learner, exercise=exercise, version=exercise.current_version,
        code="x = 1\n", status=status, **fields,
    )  # fmt: skip


def _graded_in(learner: Any, catalog: Any, seconds: float) -> None:
    started = timezone.now() - timedelta(minutes=5)
    _submission(learner, catalog, "graded", started_at=started,
                graded_at=started + timedelta(seconds=seconds))  # fmt: skip


def test_a_third_queued_submission_is_position_3_with_a_wait_from_the_median_grading(
    api: Any, alice_learner: Any, dave_learner: Any, catalog: Any
) -> None:
    for seconds in (2.0, 4.0, 30.0):  # median 4 s
        _graded_in(dave_learner, catalog, seconds)
    _submission(dave_learner, catalog, "queued")
    _submission(dave_learner, catalog, "queued")
    mine = _submission(alice_learner, catalog, "queued")

    body = api(alice_learner).get(reverse("api:submission-detail", args=[mine.pk])).json()

    assert body["queue"] == {"position": 3, "ahead": 2, "estimated_wait_s": 12}


def test_submissions_graded_at_once_shorten_the_estimate(
    api: Any, alice_learner: Any, dave_learner: Any, catalog: Any
) -> None:
    _graded_in(dave_learner, catalog, 10.0)
    _submission(dave_learner, catalog, "running")
    _submission(dave_learner, catalog, "running")
    mine = _submission(alice_learner, catalog, "queued")

    body = api(alice_learner).get(reverse("api:submission-detail", args=[mine.pk])).json()

    assert body["queue"] == {"position": 1, "ahead": 0, "estimated_wait_s": 5}


def test_without_any_grading_yet_the_position_comes_without_an_estimate(
    api: Any, alice_learner: Any, catalog: Any
) -> None:
    mine = _submission(alice_learner, catalog, "queued")

    body = api(alice_learner).get(reverse("api:submission-detail", args=[mine.pk])).json()

    assert body["queue"] == {"position": 1, "ahead": 0, "estimated_wait_s": None}


def test_a_graded_submission_has_no_queue_place(api: Any, alice_learner: Any, catalog: Any) -> None:
    mine = _submission(alice_learner, catalog, "graded", score=1.0, max_score=10.0)

    body = api(alice_learner).get(reverse("api:submission-detail", args=[mine.pk])).json()

    assert body["queue"] is None


def test_the_status_the_exercise_page_polls_carries_the_queue_place(
    alice_learner: Any, dave_learner: Any, catalog: Any
) -> None:
    _graded_in(dave_learner, catalog, 6.0)
    _submission(dave_learner, catalog, "queued")
    mine = _submission(alice_learner, catalog, "queued")
    client = Client()
    client.force_login(alice_learner)

    status = client.get(reverse("web:submission_status", args=[mine.pk])).json()

    assert status["queue"] == {"position": 2, "estimated_wait_s": 12}
