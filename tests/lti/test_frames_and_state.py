"""gradlab inside an LMS frame with no setting made and no third-party cookie: frame-ancestors
from the registrations, the OIDC state kept on the server (minutes, once), login starts
throttled, the platform-storage steps, the new-window fallback (deep linking included) and
the launched session's cookies (lti.oidc, lti.middleware, lti.views)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from html import unescape
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
import requests
from django.test import Client
from fake_platform import CLIENT_ID, DEPLOYMENT_ID, INSTRUCTOR, ISSUER, FakePlatform

EXERCISE_PAGE = "/modules/autograd-backprop/first-gradient/"


def _frame_ancestors(response: Any) -> list[str]:
    policy = response["Content-Security-Policy"]
    return policy.split("frame-ancestors")[1].split(";")[0].split()


def _login_params(**extra: str) -> dict[str, str]:
    return {
        "iss": ISSUER, "client_id": CLIENT_ID, "login_hint": "learner-1",
        "target_link_uri": "https://gradlab.example.org/lti/launch/",
        "lti_message_hint": json.dumps({}), "lti_deployment_id": DEPLOYMENT_ID, **extra,
    }  # fmt: skip


def _authorized(platform: FakePlatform, auth_url: str) -> dict[str, Any]:
    query = parse_qs(urlsplit(auth_url).query)
    return dict(requests.get(platform.auth_url, params=query, timeout=10).json())


# -- frame-ancestors -------------------------------------------------------------------------


def test_every_page_of_a_launched_session_may_be_framed_by_its_platform_with_no_setting(
    launch: Callable[..., Any], platform: FakePlatform, settings: Any
) -> None:
    settings.GRADLAB_LTI_FRAME_ANCESTORS = []
    browser = Client()
    launch(client=browser)

    page = browser.get(EXERCISE_PAGE)

    assert page.status_code == 200
    assert {platform.base_url, ISSUER} <= set(_frame_ancestors(page))
    assert "'none'" not in _frame_ancestors(page)
    assert not page.has_header("X-Frame-Options")


def test_the_lti_pages_may_be_framed_by_every_registered_platform(
    registration: Any, platform: FakePlatform, client: Client
) -> None:
    refused = client.post("/lti/launch/", {"id_token": "a.b.c", "state": "unknown"})

    assert refused.status_code == 403
    assert [ISSUER, platform.base_url] == [
        origin for origin in _frame_ancestors(refused) if origin != "'self'"
    ]


def test_a_session_no_lms_launched_keeps_its_pages_unframeable(
    registration: Any, client: Client, alice_learner: Any
) -> None:
    client.force_login(alice_learner)

    page = client.get(EXERCISE_PAGE)

    assert page.status_code == 200
    assert _frame_ancestors(page) == ["'none'"]
    assert page["X-Frame-Options"] == "DENY"


def test_a_canvas_cloud_registration_lets_its_institution_domains_frame_gradlab() -> None:
    from lti_tool.models import LtiRegistration

    from lti.middleware import registration_origins

    canvas = LtiRegistration(
        issuer="https://canvas.instructure.com",
        auth_url="https://sso.canvaslms.com/api/lti/authorize_redirect",
        token_url="https://sso.canvaslms.com/login/oauth2/token",
        keyset_url="https://sso.canvaslms.com/api/lti/security/jwks",
    )

    assert registration_origins(canvas) == [
        "https://canvas.instructure.com",
        "https://sso.canvaslms.com",
        "https://*.instructure.com",
    ]


@pytest.mark.parametrize(
    "url",
    ["javascript:alert(1)", "https://lms.example.org'; script-src *", "https://u:p@lms.example",
     "https://lms.example.org:99999/", "data:text/html,x", "https:///nohost", ""],
)  # fmt: skip
def test_only_parsed_http_origins_ever_reach_the_policy(url: str) -> None:
    from lti.middleware import origin_of

    assert origin_of(url) is None


def test_a_pages_own_frame_ancestors_are_extended_not_replaced() -> None:
    from lti.middleware import with_frame_ancestors

    policy = "default-src 'none'; frame-ancestors 'self' https://a.example; base-uri 'none'"

    assert with_frame_ancestors(policy, ["https://b.example"]) == (
        "default-src 'none'; frame-ancestors 'self' https://a.example https://b.example; "
        "base-uri 'none'"
    )
    assert with_frame_ancestors("frame-ancestors 'none'", ["https://b.example"]) == (
        "frame-ancestors 'self' https://b.example"
    )


# -- the login start ---------------------------------------------------------------------------


def test_a_login_start_without_lti1p3_new_window_goes_to_the_platform_and_sets_no_cookie(
    registration: Any, platform: FakePlatform, client: Client
) -> None:
    login = client.get(f"/lti/login/{registration.uuid}/", _login_params())

    assert login.status_code == 302
    assert login["Location"].startswith(platform.auth_url + "?")
    assert not login.cookies  # the state is the server's: nothing for a frame to lose


def test_a_login_start_posted_by_the_lms_works_too(
    registration: Any, platform: FakePlatform, client: Client
) -> None:
    login = client.post(f"/lti/login/{registration.uuid}/", _login_params())

    assert login.status_code == 302
    assert login["Location"].startswith(platform.auth_url + "?")


def test_login_starts_are_throttled_per_client_address(
    registration: Any, client: Client, settings: Any
) -> None:
    settings.GRADLAB_LTI_LOGIN_LIMIT = 3
    url = f"/lti/login/{registration.uuid}/"

    allowed = [client.get(url, _login_params(), REMOTE_ADDR="203.0.113.7") for _ in range(3)]
    refused = client.get(url, _login_params(), REMOTE_ADDR="203.0.113.7")
    elsewhere = client.get(url, _login_params(), REMOTE_ADDR="203.0.113.8")

    assert [response.status_code for response in allowed] == [302, 302, 302]
    assert refused.status_code == 429
    assert int(refused["Retry-After"]) >= 1
    assert b"Too many LTI sign-ins" in refused.content
    assert elsewhere.status_code == 302


def _cache_ttls() -> dict[bytes, int]:
    """Every key of the test process's cache (Redis) with its time to live in seconds."""
    from django.core.cache import cache

    redis = cache._cache.get_client(write=False)  # type: ignore[attr-defined]
    return {key: int(redis.ttl(key)) for key in redis.scan_iter(match="*")}


def test_what_a_login_start_keeps_expires_in_minutes(
    registration: Any, client: Client, settings: Any
) -> None:
    before = set(_cache_ttls())

    login = client.get(f"/lti/login/{registration.uuid}/", _login_params())

    written = {key: ttl for key, ttl in _cache_ttls().items() if key not in before}
    assert login.status_code == 302
    assert written  # the state (and the address's throttle count)
    assert all(0 < ttl <= settings.GRADLAB_LTI_STATE_SECONDS <= 600 for ttl in written.values())


def test_a_state_opens_one_launch_once_and_only_from_its_own_login(
    registration: Any, platform: FakePlatform
) -> None:
    first, second = Client(), Client()
    login_a = first.get(f"/lti/login/{registration.uuid}/", _login_params())
    login_b = second.get(f"/lti/login/{registration.uuid}/", _login_params())
    answer_a = _authorized(platform, login_a["Location"])
    answer_b = _authorized(platform, login_b["Location"])

    crossed = first.post("/lti/launch/", {"id_token": answer_a["id_token"],
                                           "state": answer_b["state"]})  # fmt: skip
    good = first.post("/lti/launch/", {"id_token": answer_a["id_token"],
                                        "state": answer_a["state"]})  # fmt: skip

    assert crossed.status_code == 403 and b"Invalid nonce" in crossed.content
    assert good.status_code == 302 and good["Location"].startswith("/lti/continue/")


# -- platform storage (lti_storage_target) -----------------------------------------------------


def test_with_platform_storage_the_login_page_puts_the_state_then_goes_to_the_platform(
    registration: Any, platform: FakePlatform, client: Client
) -> None:
    login = client.post(
        f"/lti/login/{registration.uuid}/",
        _login_params(lti_storage_target="post_message_forwarding"),
    )

    page = login.content.decode()
    assert login.status_code == 200
    data = dict(re.findall(r'data-([a-z-]+)="([^"]*)"', page))
    assert data["mode"] == "put" and data["target"] == "post_message_forwarding"
    assert data["origin"] == platform.base_url  # the postMessage target origin
    assert unescape(data["next"]).startswith(platform.auth_url + "?")
    state = parse_qs(urlsplit(unescape(data["next"])).query)["state"][0]
    assert data["state"] == state and data["state-key"].endswith(state)
    assert re.search(r"<script src=\"[^\"]+lti/platform_storage\.js\"></script>", page)
    assert "<script>" not in page and "style=" not in page  # the strict CSP holds
    assert _frame_ancestors(login)[1:] == [ISSUER, platform.base_url]


def _storage_launch(registration: Any, platform: FakePlatform, browser: Client) -> Any:
    login = browser.post(
        f"/lti/login/{registration.uuid}/",
        _login_params(lti_storage_target="post_message_forwarding"),
    )
    data = dict(re.findall(r'data-([a-z-]+)="([^"]*)"', login.content.decode()))
    answer = _authorized(platform, unescape(data["next"]))
    check = browser.post("/lti/launch/", {"id_token": answer["id_token"],
                                          "state": answer["state"]})  # fmt: skip
    return data, answer, check


def test_with_platform_storage_the_launch_reads_the_state_back_before_it_is_accepted(
    registration: Any, platform: FakePlatform
) -> None:
    browser = Client()
    put, answer, check = _storage_launch(registration, platform, browser)
    got = dict(re.findall(r'data-([a-z-]+)="([^"]*)"', check.content.decode()))
    form = {"id_token": answer["id_token"], "state": answer["state"]}

    wrong = browser.post("/lti/launch/", {**form, "platform_state": answer["state"],
                                          "platform_nonce": "not-the-nonce"})  # fmt: skip
    right = browser.post("/lti/launch/", {**form, "platform_state": put["state"],
                                          "platform_nonce": put["nonce"]})  # fmt: skip

    assert check.status_code == 200
    assert got["mode"] == "get" and got["state-key"] == put["state-key"]
    assert got["nonce-key"] == put["nonce-key"] and got["origin"] == platform.base_url
    assert 'name="platform_state"' in check.content.decode()
    assert wrong.status_code == 403 and b"storage does not hold" in wrong.content
    assert right.status_code == 302 and right["Location"].startswith("/lti/continue/")


# -- the continue page: the same frame, or a new window ----------------------------------------


def test_a_frame_that_kept_the_cookie_goes_straight_to_the_exercise(
    launch: Callable[..., Any],
) -> None:
    flow = launch(client=Client())

    assert flow.launched["Location"].startswith("/lti/continue/")
    assert flow.response.status_code == 302
    assert flow.response["Location"] == EXERCISE_PAGE


def test_a_frame_that_kept_no_cookie_offers_a_new_window_that_signs_in_once(
    launch: Callable[..., Any],
) -> None:
    flow = launch(client=Client(), follow=False)
    continue_url = flow.launched["Location"]
    frame, window, later = Client(), Client(), Client()  # the frame's cookie jar is empty

    offer = frame.get(continue_url)
    link = unescape(re.search(r'id="lti-new-window" href="([^"]+)"', offer.content.decode())[1])  # type: ignore[index]
    opened = window.get(continue_url + link)
    again = later.get(continue_url + link)

    assert offer.status_code == 200
    assert b"Open gradlab in a new window" in offer.content
    assert 'target="_blank"' in offer.content.decode()
    assert "_auth_user_id" not in frame.session
    assert opened.status_code == 302 and opened["Location"] == EXERCISE_PAGE
    assert window.get(EXERCISE_PAGE).status_code == 200
    assert again.status_code == 410


def test_deep_linking_completes_from_a_new_window(
    launch: Callable[..., Any], platform: FakePlatform
) -> None:
    flow = launch(client=Client(), follow=False, roles=[INSTRUCTOR], sub="teacher-1",
                  **platform.deep_link_claims())  # fmt: skip
    window = Client()

    opened = window.get(flow.launched["Location"] + "?window=new")
    picker = window.get(opened["Location"])
    answer = window.post("/lti/deep-link/", {"exercise": ["chain-rule"]})
    returned = answer.content.decode()
    action = unescape(re.search(r'<form method="post" action="([^"]+)"', returned)[1])  # type: ignore[index]
    token = unescape(re.search(r'name="JWT" value="([^"]+)"', returned)[1])  # type: ignore[index]
    back = requests.post(action, data={"JWT": token}, timeout=10)  # the top-level form post

    assert opened["Location"] == "/lti/deep-link/"
    assert picker.status_code == 200 and 'value="chain-rule"' in picker.content.decode()
    assert action == f"{platform.base_url}/deep_link_return"
    assert back.status_code == 200
    [claims] = platform.deep_link_responses
    items = claims["https://purl.imsglobal.org/spec/lti-dl/claim/content_items"]
    assert [item["custom"]["exercise"] for item in items] == ["chain-rule"]
    # the window keeps its opener, gradlab's page in the LMS's frame, to hand the answer back
    assert answer["Cross-Origin-Opener-Policy"] == "unsafe-none"
    assert picker["Cross-Origin-Opener-Policy"] == "unsafe-none"


def test_a_selection_made_in_a_new_window_is_posted_once_from_the_lms_frame(
    launch: Callable[..., Any], platform: FakePlatform
) -> None:
    flow = launch(client=Client(), follow=False, roles=[INSTRUCTOR], sub="teacher-1",
                  **platform.deep_link_claims())  # fmt: skip
    window, frame = Client(), Client()  # the frame keeps no cookie
    window.get(flow.launched["Location"] + "?window=new")
    answer = window.post("/lti/deep-link/", {"exercise": ["chain-rule"]}).content.decode()
    frame_url = unescape(re.search(r'data-frame-url="([^"]+)"', answer)[1])  # type: ignore[index]

    in_frame = frame.get(frame_url)
    again = frame.get(frame_url)

    page = in_frame.content.decode()
    token = re.search(r'name="JWT" value="([^"]+)"', answer)[1]  # type: ignore[index]
    assert in_frame.status_code == 200
    assert f'action="{platform.base_url}/deep_link_return"' in page
    assert f'name="JWT" value="{token}"' in page and "data-frame-url" not in page
    assert f"form-action {platform.base_url}" in in_frame["Content-Security-Policy"]
    assert again.status_code == 410


def test_a_launched_session_s_cookies_are_kept_by_a_frame_in_a_secure_context(
    launch: Callable[..., Any],
) -> None:
    flow = launch(client=Client(), follow=False)
    window = Client()

    opened = window.get(flow.launched["Location"] + "?window=new", secure=True)

    session = opened.cookies["sessionid"].output()
    assert "SameSite=None" in session and "Secure" in session and "Partitioned" in session


def test_a_session_no_lms_launched_keeps_lax_cookies(
    client: Client, alice_learner: Any, db: None
) -> None:
    from gradlab_fixtures import PASSWORD

    signed = client.post(
        "/accounts/login/",
        {"username": alice_learner.username, "password": PASSWORD},
        secure=True,
    )

    session = signed.cookies["sessionid"].output()
    assert "SameSite=Lax" in session and "Partitioned" not in session
