"""The same launch and passback against `lti1p3platform`, a second, independently written
LTI 1.3 platform (tests/lti/second_platform.py), over real HTTP."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
import requests
from django.test import Client
from second_platform import (
    CLIENT_ID,
    DEPLOYMENT_ID,
    ISSUER,
    SecondPlatform,
    running_second_platform,
)


@pytest.fixture
def second(catalog: Any, tool_key_pems: tuple[str, str]) -> Iterator[SecondPlatform]:
    from django.core.cache import cache
    from lti_tool.models import Key, LtiDeployment, LtiRegistration

    from lti.keys import jwks, keys_ensure
    from lti.models import ContextBinding

    cache.clear()
    public_pem, private_pem = tool_key_pems  # the tool's first key (tests/lti/conftest.py)
    Key.objects.create(public_key=public_pem, private_key=private_pem)
    keys_ensure()
    with running_second_platform("http://testserver", jwks()) as platform:
        registration = LtiRegistration.objects.create(
            name="Second LMS", issuer=ISSUER, client_id=CLIENT_ID,
            auth_url=f"{platform.base_url}/auth", token_url=f"{platform.base_url}/token",
            keyset_url=f"{platform.base_url}/jwks",
        )  # fmt: skip
        deployment = LtiDeployment.objects.create(registration=registration,
                                                  deployment_id=DEPLOYMENT_ID,
                                                  is_active=True)  # fmt: skip
        ContextBinding.objects.create(deployment=deployment, context_id="second-course",
                                      module=catalog, origin="operator")  # fmt: skip
        yield platform


def _authorized(platform: SecondPlatform, browser: Client) -> dict[str, str]:
    """The platform starts the login at the tool; the tool redirects the browser to the
    platform's authorization endpoint, whose form (id_token, state) goes to the launch."""
    login_url = urlsplit(platform.login_url("grace-1", "first-gradient"))
    params = {k: v[0] for k, v in parse_qs(login_url.query).items()}
    login = browser.get(login_url.path, params)
    assert login.status_code == 302, login.content[:300]
    query = parse_qs(urlsplit(login["Location"]).query)
    form = requests.get(f"{platform.base_url}/auth", params=query, timeout=10).json()
    assert form["launch_url"] == "http://testserver/lti/launch/"
    return {"id_token": form["id_token"], "state": form["state"]}


def _launch(platform: SecondPlatform, browser: Client) -> Any:
    """The launch, and the continue page it leads to (a browser that keeps cookies)."""
    launched = browser.post("/lti/launch/", _authorized(platform, browser))
    assert launched.status_code == 302 and "/lti/continue/" in launched["Location"]
    return browser.get(launched["Location"])


def test_a_launch_from_the_second_platform_lands_on_the_exercise(second: SecondPlatform) -> None:
    from django.contrib.auth.models import User

    from lti.models import ExerciseLink

    response = _launch(second, Client())

    assert response.status_code == 302
    assert response["Location"].endswith("/first-gradient/")
    assert User.objects.filter(lti_users__sub="grace-1").exists()
    assert ExerciseLink.objects.get().lineitem_url.endswith("/lineitems/9/lineitem?course=2")


def test_the_second_platform_accepts_our_client_assertion_and_score(
    second: SecondPlatform, django_capture_on_commit_callbacks: Any
) -> None:
    from django.contrib.auth.models import User
    from django.db import transaction
    from django.utils import timezone

    from courses.models import Exercise
    from lti.models import ScorePost
    from lti.passback import score_post_attempt
    from submissions.models import Submission
    from submissions.signals import submission_graded

    _launch(second, Client())
    learner = User.objects.get(lti_users__sub="grace-1")
    exercise = Exercise.objects.get(slug="first-gradient")
    with django_capture_on_commit_callbacks(execute=False), transaction.atomic():
        submission = Submission.objects.create(
            learner=learner, exercise=exercise, version=exercise.current_version, code="x",
            status="graded", score=6.0, max_score=10.0, passed=False, graded_at=timezone.now(),
        )  # fmt: skip
        submission_graded(submission_id=submission.pk)

    outcome = score_post_attempt(post_id=ScorePost.objects.get().pk)

    assert outcome.value == "posted", second.refused
    [score] = second.scores
    assert score["path"] == "/lineitems/9/lineitem/scores?course=2"
    assert score["userId"] == "grace-1" and score["scoreGiven"] == 6.0
    assert score["gradingProgress"] == "FullyGraded"


def test_a_replayed_launch_from_the_second_platform_is_refused(second: SecondPlatform) -> None:
    browser = Client()
    fields = _authorized(second, browser)

    first = browser.post("/lti/launch/", fields)
    replay = browser.post("/lti/launch/", fields)

    assert first.status_code == 302
    assert replay.status_code == 403
