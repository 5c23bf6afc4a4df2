"""Each gap of PyLTI1p3 2.0.0 that lti/compat.py closes, shown against the fake platform."""

from __future__ import annotations

import time
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

from fake_platform import FakePlatform

ROSTER_SCOPE = "https://purl.imsglobal.org/spec/lti-nrps/scope/contextmembership.readonly"


def test_gap_1_a_replayed_launch_is_refused_because_its_nonce_was_consumed(
    launch: Callable[..., Any],
) -> None:
    from django.test import Client

    from lti.models import UsedNonce

    browser = Client()
    kept: dict[str, Any] = {}
    first = launch(client=browser, tamper=kept.update)

    replay = browser.post("/lti/launch/", {"id_token": kept["id_token"], "state": kept["state"]})

    assert first.response.status_code == 302
    assert UsedNonce.objects.filter(nonce=kept["claims"]["nonce"]).exists()
    assert replay.status_code == 403
    assert b"already used" in replay.content  # its state first (lti.oidc), then its nonce


def test_gap_2_a_token_that_expired_within_the_clock_skew_is_accepted(
    launch: Callable[..., Any], platform: FakePlatform, settings: Any
) -> None:
    settings.GRADLAB_LTI_CLOCK_SKEW_SECONDS = 60
    now = int(time.time())

    def late(answer: dict[str, Any]) -> None:  # the platform's clock is 20 s behind
        claims = {**answer["claims"], "exp": now - 20, "iat": now - 320}
        answer["id_token"] = platform.sign(claims)

    assert launch(tamper=late).response.status_code == 302


def test_gap_2_an_iat_slightly_in_the_future_is_accepted_but_far_is_not(
    launch: Callable[..., Any], platform: FakePlatform
) -> None:
    now = int(time.time())

    def ahead(seconds: int) -> Callable[[dict[str, Any]], None]:
        def tamper(answer: dict[str, Any]) -> None:
            claims = {**answer["claims"], "iat": now + seconds, "exp": now + 300}
            answer["id_token"] = platform.sign(claims)

        return tamper

    assert launch(tamper=ahead(30)).response.status_code == 302
    assert launch(tamper=ahead(600)).response.status_code == 403


def test_gap_3_roster_paging_follows_link_urls_with_their_case(
    registration: Any, platform: FakePlatform
) -> None:
    from pylti1p3.service_connector import ServiceConnector as Original

    from lti.compat import ServiceConnector, registration_of

    platform.roster = [{"user_id": f"u{n}", "roles": []} for n in range(5)]
    url = f"{platform.base_url}/courses/7/memberships"
    connector = ServiceConnector(registration_of(registration))

    members, pages = [], []
    while url:
        page = connector.make_service_request([ROSTER_SCOPE], url)
        members += page["body"]["members"]
        pages.append(url)
        url = page["next_page_url"]
    original = Original(registration_of(registration)).make_service_request(
        [ROSTER_SCOPE], pages[0]
    )

    assert [m["user_id"] for m in members] == ["u0", "u1", "u2", "u3", "u4"]
    assert pages[1].endswith("?Page=2&Cursor=AbC2")
    assert original["next_page_url"].endswith("?page=2&cursor=abc2")  # what 2.0.0 does


def test_gap_4_a_platform_key_rotation_is_picked_up_on_the_unknown_kid(
    launch: Callable[..., Any], platform: FakePlatform
) -> None:
    first = launch()
    platform.rotate()  # the platform signs with a kid the tool's cached key set lacks

    second = launch()

    assert first.response.status_code == second.response.status_code == 302
    assert platform.jwks_fetches == 2


def test_gap_5_an_access_token_is_reused_until_it_expires_then_renewed(
    registration: Any, platform: FakePlatform, monkeypatch: Any
) -> None:
    from lti import compat
    from lti.compat import TOKEN_MARGIN_S, ServiceConnector, registration_of

    platform.token_lifetime = int(TOKEN_MARGIN_S) + 60
    clock = [1000.0]  # the connector's monotonic clock, moved by the test, never slept on
    fake_time = SimpleNamespace(monotonic=lambda: clock[0], time=time.time)
    monkeypatch.setattr(compat, "time", fake_time)
    connector = ServiceConnector(registration_of(registration))

    first = connector.get_access_token([ROSTER_SCOPE])
    clock[0] += 59.0
    again = connector.get_access_token([ROSTER_SCOPE])
    clock[0] += 1.5
    renewed = connector.get_access_token([ROSTER_SCOPE])

    assert first == again != renewed
    assert len(platform.token_requests) == 2


def test_gap_5_a_401_forgets_the_token_so_the_next_request_gets_a_new_one(
    registration: Any, platform: FakePlatform
) -> None:
    import pytest
    from pylti1p3.exception import LtiServiceException

    from lti.compat import ServiceConnector, registration_of

    platform.roster = [{"user_id": "u0", "roles": []}]
    url = f"{platform.base_url}/courses/7/memberships"
    connector = ServiceConnector(registration_of(registration))
    connector.make_service_request([ROSTER_SCOPE], url)
    platform.revoke_tokens()

    with pytest.raises(LtiServiceException):
        connector.make_service_request([ROSTER_SCOPE], url)
    page = connector.make_service_request([ROSTER_SCOPE], url)

    assert page["body"]["members"] == platform.roster
    assert len(platform.token_requests) == 2


def test_the_client_assertion_is_signed_with_a_key_of_the_tools_jwks(
    registration: Any, platform: FakePlatform
) -> None:
    from lti.compat import ServiceConnector, registration_of

    ServiceConnector(registration_of(registration)).get_access_token([ROSTER_SCOPE])

    [request] = platform.token_requests
    assert request["kid"] in {key["kid"] for key in platform.tool_jwks["keys"]}
    assert request["claims"]["aud"] == platform.token_url
