"""Deep Linking: an instructor picks exercises in gradlab and returns them to the LMS as
LTI resource links with line items, in a response the fake platform verifies."""

from __future__ import annotations

import re
from collections.abc import Callable
from html import unescape
from typing import Any

import requests
from fake_platform import INSTRUCTOR, FakePlatform

DL = "https://purl.imsglobal.org/spec/lti-dl/claim/"


def _form(html: str) -> tuple[str, str]:
    action = unescape(re.search(r'<form method="post" action="([^"]+)"', html).group(1))  # type: ignore[union-attr]
    token = unescape(re.search(r'name="JWT" value="([^"]+)"', html).group(1))  # type: ignore[union-attr]
    return action, token


def test_an_instructor_picks_exercises_and_the_lms_gets_signed_resource_links(
    launch: Callable[..., Any], platform: FakePlatform
) -> None:
    from django.test import Client

    browser = Client()
    flow = launch(
        client=browser, roles=[INSTRUCTOR], sub="teacher-1", **platform.deep_link_claims()
    )
    picker = flow.response.content.decode()

    answer = browser.post("/lti/deep-link/", {"exercise": ["chain-rule", "first-gradient"]})
    action, token = _form(answer.content.decode())
    back = requests.post(action, data={"JWT": token}, timeout=10)

    assert flow.response.status_code == 200
    assert 'value="first-gradient"' in picker and 'value="chain-rule"' in picker
    assert "frame-ancestors 'self' http://127.0.0.1" in flow.response["Content-Security-Policy"]
    assert answer.status_code == 200
    assert action == f"{platform.base_url}/deep_link_return"
    assert back.status_code == 200, back.text
    [claims] = platform.deep_link_responses
    assert claims["https://purl.imsglobal.org/spec/lti/claim/message_type"] == (
        "LtiDeepLinkingResponse"
    )
    assert claims[DL + "data"] == "opaque-platform-data"
    items = claims[DL + "content_items"]
    assert [item["custom"]["exercise"] for item in items] == ["first-gradient", "chain-rule"]
    assert all(item["type"] == "ltiResourceLink" for item in items)
    assert all(item["url"] == "http://testserver/lti/launch/" for item in items)
    assert items[0]["lineItem"]["scoreMaximum"] > 0
    assert items[0]["lineItem"]["resourceId"] == "first-gradient"


def test_a_learner_cannot_open_the_picker(
    launch: Callable[..., Any], platform: FakePlatform
) -> None:
    flow = launch(**platform.deep_link_claims())

    assert flow.response.status_code == 403
    assert b"Only instructors" in flow.response.content


def test_a_selection_is_answered_once(launch: Callable[..., Any], platform: FakePlatform) -> None:
    from django.test import Client

    browser = Client()
    launch(client=browser, roles=[INSTRUCTOR], sub="teacher-1", **platform.deep_link_claims())
    browser.post("/lti/deep-link/", {"exercise": ["chain-rule"]})

    again = browser.post("/lti/deep-link/", {"exercise": ["chain-rule"]})

    assert again.status_code == 400


def test_an_unknown_or_empty_selection_is_a_clear_400(
    launch: Callable[..., Any], platform: FakePlatform
) -> None:
    from django.test import Client

    browser = Client()
    launch(client=browser, roles=[INSTRUCTOR], sub="teacher-1", **platform.deep_link_claims())

    for picked in ([], ["no-such-exercise"]):
        response = browser.post("/lti/deep-link/", {"exercise": picked})

        assert response.status_code == 400
        assert b"Pick at least one exercise" in response.content


def test_the_picker_needs_the_instructors_session(client: Any, db: None) -> None:
    response = client.post("/lti/deep-link/", {"exercise": ["chain-rule"]})

    assert response.status_code == 302  # to the login page
