"""Deep Linking: an instructor picks exercises in gradlab and returns them to the LMS as
LTI resource links with line items, in a response the fake platform verifies."""

from __future__ import annotations

import re
from collections.abc import Callable
from html import unescape
from typing import Any

import pytest
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
    framers = flow.response["Content-Security-Policy"].split("frame-ancestors")[1].split(";")[0]
    assert platform.base_url in framers.split()  # the LMS's dialog may show the picker
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


HOSTILE_RETURNS = [
    "javascript:alert(document.domain)//",
    "data:text/html,<script>alert(1)</script>",
    "https://user:pw@lms.example.org/return",
    "https://lms.example.org/return'; script-src *",
    'https://lms.example.org/return" onfocus="x',
    "//lms.example.org/return",
    "https://lms.example.org:0/return",
    "",
]


@pytest.mark.parametrize("return_url", HOSTILE_RETURNS)
def test_a_deep_link_return_url_that_is_not_a_plain_https_address_is_refused(
    launch: Callable[..., Any], platform: FakePlatform, return_url: str
) -> None:
    from django.test import Client

    claims = platform.deep_link_claims()
    claims[DL + "deep_linking_settings"]["deep_link_return_url"] = return_url
    browser = Client()

    flow = launch(client=browser, roles=[INSTRUCTOR], sub="teacher-1", **claims)

    assert flow.response.status_code == 400
    page = flow.response.content.decode()
    assert "no usable address to return the selection to" in page
    assert return_url == "" or return_url not in page
    assert "_auth_user_id" not in browser.session  # refused before signing anyone in


def test_a_plain_http_return_url_is_refused_unless_allowed_for_test_platforms(
    settings: Any,
) -> None:
    from lti.deep_linking import DeepLinkError, checked_return_url

    settings.GRADLAB_LTI_ALLOW_HTTP = False
    with pytest.raises(DeepLinkError):
        checked_return_url("http://lms.example.org/return")
    # Canvas returns on the institution's domain, not its issuer's
    canvas = "https://school.instructure.com/courses/1/deep_linking_response?x=1"
    assert checked_return_url(canvas) == canvas
    settings.GRADLAB_LTI_ALLOW_HTTP = True
    assert checked_return_url("http://127.0.0.1:8080/return") == "http://127.0.0.1:8080/return"


def test_the_pickers_policy_names_the_return_origin_rebuilt_from_its_parts() -> None:
    from lti.deep_linking import origin_of

    assert origin_of("https://LMS.example.org:8443/a/b?c=d#e") == "https://lms.example.org:8443"
    assert origin_of("https://[2001:db8::1]/return") == "https://[2001:db8::1]"


def _single_choice_claims(platform: FakePlatform) -> dict[str, Any]:
    """A content dialog that takes one item (Canvas's assignment selection)."""
    claims = platform.deep_link_claims()
    claims[DL + "deep_linking_settings"] = {
        **claims[DL + "deep_linking_settings"],
        "accept_multiple": False,
    }
    return claims


def test_a_dialog_that_takes_one_item_is_offered_one_choice_and_answered_with_one(
    launch: Callable[..., Any], platform: FakePlatform
) -> None:
    from django.test import Client

    browser = Client()
    flow = launch(
        client=browser, roles=[INSTRUCTOR], sub="teacher-1", **_single_choice_claims(platform)
    )
    picker = flow.response.content.decode()

    answer = browser.post("/lti/deep-link/", {"exercise": ["chain-rule"]})
    action, token = _form(answer.content.decode())
    requests.post(action, data={"JWT": token}, timeout=10)

    assert 'type="radio" name="exercise"' in picker and 'type="checkbox"' not in picker
    [claims] = platform.deep_link_responses
    assert [item["custom"]["exercise"] for item in claims[DL + "content_items"]] == ["chain-rule"]


def test_two_items_for_a_dialog_that_takes_one_are_refused_and_nothing_is_bound(
    launch: Callable[..., Any], platform: FakePlatform
) -> None:
    from django.test import Client

    from lti.models import ContextBinding

    browser = Client()
    launch(client=browser, roles=[INSTRUCTOR], sub="teacher-1", **_single_choice_claims(platform))
    bound_before = ContextBinding.objects.count()

    answer = browser.post("/lti/deep-link/", {"exercise": ["chain-rule", "first-gradient"]})

    assert answer.status_code == 400
    assert b"takes one exercise here" in answer.content
    assert ContextBinding.objects.count() == bound_before
    assert platform.deep_link_responses == []


def test_a_return_url_on_a_host_that_is_not_the_platforms_is_refused(
    launch: Callable[..., Any], platform: FakePlatform
) -> None:
    from django.test import Client

    claims = platform.deep_link_claims()
    claims[DL + "deep_linking_settings"]["deep_link_return_url"] = "https://elsewhere.test/r"
    browser = Client()

    flow = launch(client=browser, roles=[INSTRUCTOR], sub="teacher-1", **claims)

    assert flow.response.status_code == 400
    assert "not its own" in flow.response.content.decode()
    assert "_auth_user_id" not in browser.session


@pytest.mark.parametrize(
    ("url", "issuer", "allowed"),
    [
        ("https://lms.example.test/return", "https://lms.example.test", True),
        ("https://lms.example.test:8443/return", "https://lms.example.test", False),
        ("https://school.instructure.com/courses/1/dl", "https://canvas.instructure.com", True),
        ("https://instructure.com.evil.test/r", "https://canvas.instructure.com", False),
        ("http://school.instructure.com/r", "https://canvas.instructure.com", False),
        ("https://school.instructure.com/r", "https://lms.example.test", False),
    ],
)
def test_a_return_url_must_be_on_the_registrations_origins_or_canvas_clouds_schools(
    url: str, issuer: str, allowed: bool
) -> None:
    from integrations import egress
    from lti.deep_linking import return_url_is_the_platforms

    origins = frozenset({egress.origin_of(issuer)})

    assert return_url_is_the_platforms(url, origins, issuer) is allowed
