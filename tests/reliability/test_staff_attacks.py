"""Who may read and act on what, through the API and the pages alike: the learner who owns
a submission, another learner of the module, the module's instructor and co-instructor,
staff (who teach every module), an instructor of another module (a stranger here) and an
anonymous caller. Refusals (401/403/404, a login redirect) carry no data of the
submission, and a refused action changes nothing."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client
from django.urls import reverse
from gradlab_fixtures import MODULE_SLUG
from rest_framework.test import APIClient

pytestmark = pytest.mark.django_db

SLUG = "chain-rule"
SECRET = "alices-private-attempt-5150"
TEACH = ["bob_instructor", "erin_co_instructor", "sam_staff"]
STRANGERS = ["dave_learner", "carol_other_course"]
ANONYMOUS = "anonymous"


@pytest.fixture
def alices(alice_learner: Any, settings: Any) -> Any:
    """Alice's graded submission, held for review (no worker: an unconsumed queue)."""
    from submissions.models import Submission
    from submissions.services import submission_create

    settings.GRADLAB_QUEUE_CPU = "grading-unconsumed-staff-attack-test"
    submission, _ = submission_create(learner=alice_learner, exercise_slug=SLUG,
                                      code=f"x = '{SECRET}'\n")  # fmt: skip
    Submission.objects.filter(pk=submission.pk).update(
        status="graded", score=7.0, max_score=10.0, passed=False, review="held",
        report={"status": "graded", "score": 7.0, "passed": False, "message": SECRET},
        error_message=SECRET,
    )  # fmt: skip
    return Submission.objects.get(pk=submission.pk)


def _user(request: Any, who: str) -> Any:
    return None if who == ANONYMOUS else request.getfixturevalue(who)


def _api(request: Any, who: str) -> APIClient:
    from accounts.services import token_issue

    client = APIClient()
    user = _user(request, who)
    if user is not None:
        client.credentials(HTTP_AUTHORIZATION=f"Token {token_issue(user=user)}")
    return client


def _page(request: Any, who: str) -> Client:
    client = Client()
    user = _user(request, who)
    if user is not None:
        client.force_login(user)
    return client


def _assert_tells_nothing(response: Any) -> None:
    body = _told(response)
    for secret in (SECRET, "alice_learner", '"score"', "7.0"):
        assert secret not in body, (response.status_code, secret, body[:500])


def _told(response: Any) -> str:
    """What a response tells: its whole body, but of a page only what is below the site
    header, whose "Signed in as <name>" names the viewer (alice, refused another's page)."""
    body = str(response.content.decode("utf-8", errors="replace"))
    return body.split("</header>", 1)[-1]


def _refused(response: Any, *, anonymous: bool) -> None:
    if anonymous:
        assert response.status_code in (401, 403, 302), response.status_code
        if response.status_code == 302:
            assert response["Location"].startswith(reverse("web:login"))
    else:
        assert response.status_code in (403, 404), response.status_code
    _assert_tells_nothing(response)


# -- reading a submission ----------------------------------------------------------------


def _reads(submission_id: int) -> dict[str, str]:
    return {
        "api": reverse("api:submission-detail", args=[submission_id]),
        "page": reverse("web:submission", args=[submission_id]),
        "status": reverse("web:submission_status", args=[submission_id]),
        "course-api": reverse("integrations:course-submission-list", args=[MODULE_SLUG]),
        "grades.csv": reverse("web:grades_csv", args=[MODULE_SLUG]),
        "teach-learner": "",  # filled in below: needs alice's id
    }


def _read(request: Any, who: str, kind: str, alices: Any) -> Any:
    urls = _reads(alices.pk)
    urls["teach-learner"] = reverse("web:teach_learner", args=[MODULE_SLUG, alices.learner_id])
    url = urls[kind]
    client = _api(request, who) if "api" in kind else _page(request, who)
    return client.get(url)


KINDS = ["api", "page", "status", "course-api", "grades.csv", "teach-learner"]


@pytest.mark.parametrize("who", TEACH)
@pytest.mark.parametrize("kind", KINDS)
def test_instructors_and_staff_read_a_learners_held_submission_everywhere(
    request: Any, alices: Any, who: str, kind: str
) -> None:
    response = _read(request, who, kind, alices)

    assert response.status_code == 200, (kind, response.status_code)
    body = response.content.decode()
    if kind == "status":  # the page's polling endpoint: the submission's own state
        assert response.json()["id"] == alices.pk and response.json()["status"] == "graded"
    else:
        assert "alice_learner" in body


@pytest.mark.parametrize("who", [*STRANGERS, ANONYMOUS])
@pytest.mark.parametrize("kind", KINDS)
def test_strangers_and_anonymous_callers_read_nothing_anywhere(
    request: Any, alices: Any, who: str, kind: str
) -> None:
    _refused(_read(request, who, kind, alices), anonymous=who == ANONYMOUS)


@pytest.mark.parametrize("kind", ["course-api", "grades.csv", "teach-learner"])
def test_the_owner_is_refused_the_instructor_views_of_their_own_module(
    request: Any, alices: Any, kind: str
) -> None:
    response = _read(request, "alice_learner", kind, alices)
    assert response.status_code in (403, 404)
    assert SECRET not in response.content.decode()


def test_a_held_submission_keeps_its_score_from_its_owner_until_reviewed(
    request: Any, alices: Any
) -> None:
    body = _api(request, "alice_learner").get(_reads(alices.pk)["api"]).json()
    assert body["held_for_review"] is True
    assert body["score"] is None and SECRET not in str(body)


# -- acting: regrade, validate, review, course tokens, webhooks --------------------------


def _jobs() -> int:
    from courses.models import ExerciseJob

    return ExerciseJob.objects.count()


@pytest.mark.parametrize("action", ["regrade_exercise", "validate_exercise"])
@pytest.mark.parametrize("who", ["alice_learner", *STRANGERS, ANONYMOUS])
def test_only_those_who_teach_start_a_regrade_or_a_validation(
    request: Any, alices: Any, who: str, action: str
) -> None:
    url = reverse(f"web:{action}", args=[MODULE_SLUG, SLUG])

    response = _page(request, who).post(url)

    _refused(response, anonymous=who == ANONYMOUS)
    assert _jobs() == 0


@pytest.mark.parametrize("who", TEACH)
def test_instructors_and_staff_start_a_regrade(request: Any, alices: Any, who: str) -> None:
    url = reverse("web:regrade_exercise", args=[MODULE_SLUG, SLUG])

    response = _page(request, who).post(url)

    assert response.status_code in (302, 303)
    assert _jobs() == 1


@pytest.mark.parametrize("who", ["alice_learner", *STRANGERS, ANONYMOUS])
def test_only_those_who_teach_release_a_held_submission(
    request: Any, alices: Any, who: str
) -> None:
    url = reverse("web:review_submission", args=[MODULE_SLUG, alices.pk])

    response = _page(request, who).post(url, {"decision": "release"})

    _refused(response, anonymous=who == ANONYMOUS)
    alices.refresh_from_db()
    assert (alices.review, alices.score) == ("held", 7.0)


@pytest.mark.parametrize("who", ["alice_learner", *STRANGERS, ANONYMOUS])
def test_only_those_who_teach_list_or_mint_course_tokens_and_webhooks(
    request: Any, alices: Any, who: str
) -> None:
    from integrations.models import CourseToken, WebhookEndpoint

    client = _api(request, who)
    tokens = reverse("integrations:token-list", args=[MODULE_SLUG])
    hooks = reverse("integrations:webhook-list", args=[MODULE_SLUG])

    for response in (
        client.get(tokens),
        client.post(tokens, {"name": "steal", "scopes": ["submissions:read"]}, format="json"),
        client.get(hooks),
        client.post(hooks, {"url": "https://evil.example.org/h", "events": ["submission.graded"]},
                    format="json"),
    ):  # fmt: skip
        _refused(response, anonymous=who == ANONYMOUS)
    assert not CourseToken.objects.exists() and not WebhookEndpoint.objects.exists()


def test_an_instructor_of_another_module_cannot_use_its_own_course_token_here(
    request: Any, alices: Any, carol_other_course: Any
) -> None:
    from gradlab_fixtures import OTHER_MODULE_SLUG

    minted = _api(request, "carol_other_course").post(
        reverse("integrations:token-list", args=[OTHER_MODULE_SLUG]),
        {"name": "mine", "scopes": ["submissions:read"]}, format="json",
    )  # fmt: skip
    assert minted.status_code == 201, minted.content
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {minted.json()['token']}")

    response = client.get(reverse("integrations:course-submission-list", args=[MODULE_SLUG]))

    _refused(response, anonymous=False)
