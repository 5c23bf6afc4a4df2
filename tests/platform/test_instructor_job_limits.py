"""Instructor jobs (validations, regrades) share the sandboxes with learners' submissions,
so nobody who may validate can fill the queue: a request for a job that is already queued
or running for the same exercise version is that job, and each user starts at most
GRADLAB_JOB_RATE_LIMIT_COUNT jobs per window (429 with Retry-After past it)."""

from __future__ import annotations

from typing import Any

import pytest
from gradlab_fixtures import MODULE_SLUG, persona

pytestmark = pytest.mark.django_db

MODULE = f"/api/v1/authoring/modules/{MODULE_SLUG}"


@pytest.fixture(autouse=True)
def _no_worker(settings: Any) -> None:
    settings.GRADLAB_QUEUE_CPU = "grading-unconsumed-job-limits-test"  # nobody runs them


@pytest.fixture
def bob(api: Any, bob_instructor: Any) -> Any:
    return api(bob_instructor)


def _new_exercises(client: Any, count: int) -> list[str]:
    slugs = [f"limit-{n}" for n in range(count)]
    for slug in slugs:
        created = client.post(f"{MODULE}/exercises/", {"slug": slug}, format="json")
        assert created.status_code == 201, created.content
    return slugs


def test_validating_a_draft_again_while_its_validation_is_queued_is_that_validation(
    bob: Any,
) -> None:
    from courses.models import ExerciseJob

    [slug] = _new_exercises(bob, 1)
    first = bob.post(f"{MODULE}/exercises/{slug}/validate/")
    again = bob.post(f"{MODULE}/exercises/{slug}/validate/")

    assert first.status_code == again.status_code == 202
    assert again.json()["id"] == first.json()["id"]
    assert ExerciseJob.objects.filter(kind="validate").count() == 1


def test_a_finished_validation_does_not_stand_in_for_a_new_one(bob: Any) -> None:
    from courses.models import ExerciseJob

    [slug] = _new_exercises(bob, 1)
    first = bob.post(f"{MODULE}/exercises/{slug}/validate/").json()
    ExerciseJob.objects.filter(pk=first["id"]).update(status="done", outcome={"ok": True})

    again = bob.post(f"{MODULE}/exercises/{slug}/validate/")

    assert again.status_code == 202 and again.json()["id"] != first["id"]


def test_a_flood_of_validations_past_the_limit_is_a_429_with_retry_after(
    bob: Any, settings: Any
) -> None:
    from courses.models import ExerciseJob

    settings.GRADLAB_JOB_RATE_LIMIT_COUNT = 3
    slugs = _new_exercises(bob, 4)
    for slug in slugs[:3]:
        assert bob.post(f"{MODULE}/exercises/{slug}/validate/").status_code == 202

    refused = bob.post(f"{MODULE}/exercises/{slugs[3]}/validate/")

    assert refused.status_code == 429
    assert "Too many validations and regrades: at most 3 per 600 s" in refused.json()["detail"]
    assert 1 <= int(refused["Retry-After"]) <= 600
    assert ExerciseJob.objects.count() == 3


def test_a_pending_job_is_found_again_past_the_limit_by_anyone_who_may_validate(
    bob: Any, api: Any, catalog: Any, settings: Any
) -> None:
    settings.GRADLAB_JOB_RATE_LIMIT_COUNT = 1
    [slug] = _new_exercises(bob, 1)
    first = bob.post(f"{MODULE}/exercises/{slug}/validate/")
    rita = api(persona("rita_reviewer", module_slug=MODULE_SLUG, role="reviewer"))

    assert bob.post(f"{MODULE}/exercises/{slug}/validate/").json()["id"] == first.json()["id"]
    assert rita.post(f"{MODULE}/exercises/{slug}/validate/").json()["id"] == first.json()["id"]


def test_a_regrade_asked_for_twice_on_the_page_queues_one_job(
    bob_instructor: Any, client: Any
) -> None:
    from django.urls import reverse

    from courses.models import ExerciseJob

    client.force_login(bob_instructor)
    url = reverse("web:regrade_exercise", args=[MODULE_SLUG, "chain-rule"])

    assert client.post(url).status_code == 302
    assert client.post(url).status_code == 302
    assert ExerciseJob.objects.filter(kind="regrade").count() == 1
