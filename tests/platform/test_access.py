"""One access rule for pages and API alike (accounts.selectors): a learner sees their own
submissions; the module's instructors, its co-instructors and staff see every submission
of the module; anyone else gets a 404 that tells nothing, on a page and in the API."""

from __future__ import annotations

from typing import Any

import pytest
from django.urls import reverse
from gradlab_fixtures import MODULE_SLUG
from platform_helpers import E2E_SLUG

SECRET_CODE = "x = 'alices-private-attempt'\n"

SEES = ["alice_learner", "bob_instructor", "erin_co_instructor", "sam_staff"]
DOES_NOT_SEE = ["dave_learner", "carol_other_course"]
TEACHES = ["bob_instructor", "erin_co_instructor", "sam_staff"]
DOES_NOT_TEACH = ["alice_learner", "dave_learner", "carol_other_course"]


@pytest.fixture
def alices_submission(alice_learner: Any, settings: Any) -> Any:
    from submissions.services import submission_create

    settings.GRADLAB_QUEUE_CPU = "grading-unconsumed-access-test"  # no worker listens here
    submission, _ = submission_create(
        learner=alice_learner, exercise_slug=E2E_SLUG, code=SECRET_CODE
    )
    return submission


def _urls(submission_id: int) -> dict[str, str]:
    return {
        "page": reverse("web:submission", args=[submission_id]),
        "status": reverse("web:submission_status", args=[submission_id]),
        "api": reverse("api:submission-detail", args=[submission_id]),
    }


def _get(request: Any, web: Any, api: Any, viewer: str, url: str) -> Any:
    user = request.getfixturevalue(viewer)
    client = api(user) if url.startswith("/api/") else web(user)
    return client.get(url)


@pytest.mark.parametrize("viewer", SEES)
@pytest.mark.parametrize("kind", ["page", "status", "api"])
def test_owner_instructors_and_staff_read_the_submission_on_pages_and_in_the_api(
    request: Any, web: Any, api: Any, alices_submission: Any, viewer: str, kind: str
) -> None:
    response = _get(request, web, api, viewer, _urls(alices_submission.pk)[kind])

    assert response.status_code == 200
    if kind == "api":
        assert response.json()["learner"] == "alice_learner"
    if kind == "page":
        assert "alices-private-attempt" in response.content.decode()


@pytest.mark.parametrize("viewer", DOES_NOT_SEE)
@pytest.mark.parametrize("kind", ["page", "status", "api"])
def test_another_learner_and_another_modules_instructor_get_a_404_that_reveals_nothing(
    request: Any, web: Any, api: Any, alices_submission: Any, viewer: str, kind: str
) -> None:
    response = _get(request, web, api, viewer, _urls(alices_submission.pk)[kind])

    assert response.status_code == 404
    body = response.content.decode()
    assert "alices-private-attempt" not in body
    assert "alice_learner" not in body
    assert E2E_SLUG not in body


def test_a_missing_submission_and_a_hidden_one_answer_the_same_404(
    api: Any, dave_learner: Any, alices_submission: Any
) -> None:
    client = api(dave_learner)
    hidden = client.get(_urls(alices_submission.pk)["api"])
    missing = client.get(_urls(alices_submission.pk + 1000)["api"])

    assert hidden.status_code == missing.status_code == 404
    assert set(hidden.json()) == set(missing.json()) == {"detail"}


@pytest.mark.parametrize("viewer", TEACHES)
def test_instructors_co_instructors_and_staff_open_the_instructor_pages(
    request: Any, web: Any, viewer: str, alice_learner: Any
) -> None:
    client = web(request.getfixturevalue(viewer))

    assert client.get(reverse("web:teach_module", args=[MODULE_SLUG])).status_code == 200
    learner_page = reverse("web:teach_learner", args=[MODULE_SLUG, alice_learner.pk])
    assert client.get(learner_page).status_code == 200


@pytest.mark.parametrize("viewer", DOES_NOT_TEACH)
def test_learners_and_another_modules_instructor_are_refused_the_instructor_pages(
    request: Any, web: Any, viewer: str, alice_learner: Any
) -> None:
    client = web(request.getfixturevalue(viewer))

    response = client.get(reverse("web:teach_module", args=[MODULE_SLUG]))
    assert response.status_code == 403
    # below the site header, whose "Signed in as" names the viewer (alice, refused here)
    assert "alice_learner" not in response.content.decode().split("</header>", 1)[-1]
    learner_page = reverse("web:teach_learner", args=[MODULE_SLUG, alice_learner.pk])
    assert client.get(learner_page).status_code == 403


def test_an_unknown_module_is_a_404_for_an_instructor_and_a_learner(
    web: Any, bob_instructor: Any, alice_learner: Any
) -> None:
    assert web(bob_instructor).get(reverse("web:teach_module", args=["nope"])).status_code == 404
    assert web(alice_learner).get(reverse("web:module", args=["nope"])).status_code == 404


def test_the_teach_link_is_shown_to_those_who_teach_and_hidden_from_learners(
    web: Any, sam_staff: Any, alice_learner: Any
) -> None:
    teach = reverse("web:teach_module", args=[MODULE_SLUG])
    module_page = reverse("web:module", args=[MODULE_SLUG])

    assert teach in web(sam_staff).get(module_page).content.decode()
    assert teach not in web(alice_learner).get(module_page).content.decode()


def test_the_api_lists_only_the_callers_own_submissions_even_for_staff(
    api: Any, sam_staff: Any, alices_submission: Any
) -> None:
    assert api(sam_staff).get(reverse("api:submission-list")).json()["count"] == 0
