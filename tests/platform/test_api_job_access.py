"""GET /api/v1/authoring/jobs/<id>/: who reads an instructor job. A module's reviewers read
its validations; a regrade's outcome holds each learner's old and new score, and reviewers
see no grades anywhere, so only the module's instructors read it."""

from __future__ import annotations

from typing import Any

import pytest
from gradlab_fixtures import MODULE_SLUG, persona

pytestmark = pytest.mark.django_db

JOBS = "/api/v1/authoring/jobs"
SCORES = {"regraded": 1, "changes": [{"learner": "alice_learner", "old": 4.0, "new": 10.0}]}


def _job(kind: str, instructor: Any) -> int:
    from courses.models import Exercise, ExerciseJob

    exercise = Exercise.objects.filter(module__slug=MODULE_SLUG).first()
    assert exercise is not None
    job = ExerciseJob.objects.create(
        exercise=exercise, version=exercise.current_version, kind=kind,
        requested_by=instructor, status="done", outcome=SCORES,
    )  # fmt: skip
    return int(job.pk)


@pytest.fixture
def rita(api: Any, catalog: Any) -> Any:
    return api(persona("rita_reviewer", module_slug=MODULE_SLUG, role="reviewer"))


@pytest.mark.parametrize("kind", ["regrade", "regrade-preview"])
def test_a_reviewer_gets_a_404_for_a_regrade_and_never_its_learners_scores(
    rita: Any, bob_instructor: Any, kind: str
) -> None:
    response = rita.get(f"{JOBS}/{_job(kind, bob_instructor)}/")

    assert response.status_code == 404
    assert b"alice_learner" not in response.content


@pytest.mark.parametrize("kind", ["regrade", "regrade-preview"])
def test_the_module_instructor_reads_a_regrade_with_its_scores(
    api: Any, bob_instructor: Any, catalog: Any, kind: str
) -> None:
    response = api(bob_instructor).get(f"{JOBS}/{_job(kind, bob_instructor)}/")

    assert response.status_code == 200
    assert response.json()["outcome"] == SCORES


def test_a_reviewer_still_reads_a_validation_of_the_module(rita: Any, bob_instructor: Any) -> None:
    response = rita.get(f"{JOBS}/{_job('validate', bob_instructor)}/")

    assert response.status_code == 200
    assert response.json()["kind"] == "validate"


def test_an_instructor_of_another_module_reads_no_job_of_this_one(
    api: Any, carol_other_course: Any, bob_instructor: Any, catalog: Any
) -> None:
    for kind in ("validate", "regrade"):
        response = api(carol_other_course).get(f"{JOBS}/{_job(kind, bob_instructor)}/")
        assert response.status_code == 404
