"""LTI Dynamic Registration: an administrator pastes one URL into Moodle or Canvas and the
two register each other (lti/registration.py), against platforms that check our
registration as Moodle's and Canvas's source do (registering_platform.py). Also Canvas's
JSON configuration (the manual fallback) and the scheduled rotation of the tool's key."""

from __future__ import annotations

from datetime import timedelta
from io import StringIO
from typing import Any
from urllib.parse import urlsplit

import pytest
from django.core.management import call_command
from django.test import Client
from registering_platform import CANVAS_PLACEMENTS, CANVAS_SCOPES, registering_platform


@pytest.fixture
def reach_test_peers(settings: Any) -> None:
    """The peers listen on 127.0.0.1 over plain http, which production refuses (the test
    settings name 127.0.0.1 in GRADLAB_EGRESS_INSECURE_HOSTS)."""
    assert "127.0.0.1" in settings.GRADLAB_EGRESS_INSECURE_HOSTS


def _registration_url() -> str:
    out = StringIO()
    call_command(
        "lti_dynamic_registration", "--base-url", "https://gradlab.example.org", stdout=out
    )
    return out.getvalue().splitlines()[0]


def _open(client: Client, url: str, platform: Any) -> Any:
    """What the LMS does with the pasted URL: opens it with its two parameters."""
    return client.get(
        urlsplit(url).path,
        {
            "openid_configuration": platform.configuration_url,
            "registration_token": platform.registration_token,
        },
    )


@pytest.mark.parametrize("mode", ["moodle", "canvas"])
def test_one_pasted_url_registers_gradlab_with_the_lms_and_keeps_the_platform(
    mode: str, db: None, reach_test_peers: None
) -> None:
    from lti_tool.models import Key, LtiDeployment, LtiRegistration

    with registering_platform(mode) as platform:
        response = _open(Client(), _registration_url(), platform)

    assert response.status_code == 200, response.content[:500]
    assert b"gradlab is registered" in response.content
    assert b"lti/registered.js" in response.content  # tells the LMS's dialog to close
    registration = LtiRegistration.objects.get()
    configuration = platform.configuration()
    assert registration.issuer == configuration["issuer"]
    assert registration.auth_url == configuration["authorization_endpoint"]
    assert registration.token_url == configuration["token_endpoint"]
    assert registration.keyset_url == configuration["jwks_uri"]
    assert registration.is_active
    assert Key.objects.filter(is_active=True).exists()  # our JWKS has a key to publish
    sent = platform.registrations[0]
    assert sent["initiate_login_uri"] == "http://testserver/lti/login/"
    assert sent["redirect_uris"] == ["http://testserver/lti/launch/"]
    assert sent["jwks_uri"] == "http://testserver/lti/jwks.json"
    deployments = list(LtiDeployment.objects.values_list("deployment_id", flat=True))
    assert deployments == (["42"] if mode == "moodle" else [])  # Canvas: at first launch


def test_the_registration_asks_canvas_only_for_scopes_and_placements_it_knows(
    db: None, reach_test_peers: None
) -> None:
    with registering_platform("canvas") as platform:
        _open(Client(), _registration_url(), platform)

    sent = platform.registrations[0]
    assert set(sent["scope"].split()) <= CANVAS_SCOPES
    tool = sent["https://purl.imsglobal.org/spec/lti-tool-configuration"]
    picking = [m for m in tool["messages"] if m["type"] == "LtiDeepLinkingRequest"]
    assert picking and set(picking[0]["placements"]) <= CANVAS_PLACEMENTS
    assert platform.configuration_requests == [f"Bearer {platform.registration_token}"]


def test_a_registration_url_works_once(db: None, reach_test_peers: None) -> None:
    from lti_tool.models import LtiRegistration

    url = _registration_url()
    with registering_platform("moodle") as platform:
        first = _open(Client(), url, platform)
    with registering_platform("moodle") as other:
        second = _open(Client(), url, other)

    assert first.status_code == 200
    assert second.status_code == 400
    assert b"already used" in second.content
    assert other.registrations == []
    assert LtiRegistration.objects.count() == 1


def test_an_expired_or_forged_registration_url_registers_nothing(
    db: None, reach_test_peers: None, settings: Any
) -> None:
    from lti_tool.models import LtiRegistration

    url = _registration_url()
    forged = "/lti/register/not-a-token/"
    settings.GRADLAB_LTI_REGISTRATION_URL_HOURS = -1  # every token is past its age
    with registering_platform("moodle") as platform:
        expired = _open(Client(), url, platform)
        made_up = _open(Client(), forged, platform)

    assert expired.status_code == 400 and b"expired" in expired.content
    assert made_up.status_code == 400 and b"not a gradlab registration URL" in made_up.content
    assert platform.configuration_requests == []
    assert not LtiRegistration.objects.exists()


def test_a_configuration_on_an_internal_address_is_not_fetched(db: None, settings: Any) -> None:
    from lti_tool.models import LtiRegistration

    settings.GRADLAB_LTI_ALLOW_HTTP = True  # http may pass: the address must stop it
    settings.GRADLAB_EGRESS_INSECURE_HOSTS = []
    with registering_platform("moodle") as platform:
        response = _open(Client(), _registration_url(), platform)

    assert response.status_code == 400
    assert b"could not reach the platform" in response.content
    assert platform.configuration_requests == []
    assert not LtiRegistration.objects.exists()


def test_a_platform_refusing_the_registration_is_reported_with_its_words(
    db: None, reach_test_peers: None
) -> None:
    from lti_tool.models import LtiRegistration

    with registering_platform("moodle") as platform:
        platform.registration_token = "another"  # the LMS expects a token we were not given
        response = Client().get(
            urlsplit(_registration_url()).path,
            {"openid_configuration": platform.configuration_url, "registration_token": "mine"},
        )

    assert response.status_code == 400
    assert b"answered 401" in response.content
    assert b"missing_registration_token" in response.content
    assert not LtiRegistration.objects.exists()


def test_the_registration_page_may_be_framed_by_the_lms_only(
    db: None, reach_test_peers: None
) -> None:
    with registering_platform("moodle") as platform:
        response = _open(Client(), _registration_url(), platform)

    policy = response["Content-Security-Policy"]
    assert f"frame-ancestors 'self' {platform.base_url}" in policy
    assert "script-src 'self'" in policy and "unsafe-inline" not in policy


def test_a_registration_url_opened_without_the_lms_says_where_to_use_it(db: None) -> None:
    response = Client().get(urlsplit(_registration_url()).path)

    assert response.status_code == 400
    assert b"from your LMS" in response.content


def test_canvas_json_configuration_has_what_canvas_requires(db: None) -> None:
    response = Client().get("/lti/canvas.json")

    assert response.status_code == 200
    document = response.json()
    for required in ("title", "description", "target_link_uri", "oidc_initiation_url"):
        assert document[required]
    assert document["oidc_initiation_url"] == "http://testserver/lti/login/"
    assert document["public_jwk_url"] == "http://testserver/lti/jwks.json"
    assert set(document["scopes"]) <= CANVAS_SCOPES
    (extension,) = document["extensions"]
    assert extension["platform"] == "canvas.instructure.com"
    assert extension["privacy_level"] in ("public", "email_only", "name_only", "anonymous")
    placements = {p["placement"] for p in extension["settings"]["placements"]}
    assert placements == {"assignment_selection", "link_selection"}
    assert {p["message_type"] for p in extension["settings"]["placements"]} == {
        "LtiDeepLinkingRequest"
    }


# -- scheduled key rotation ------------------------------------------------------------------


def test_the_scheduler_rotates_the_tool_key_when_it_is_due_and_not_before(
    db: None, settings: Any
) -> None:
    from django.utils import timezone
    from lti_tool.models import Key

    from lti.keys import jwks, keys_rotate_if_due, signing_key

    first = keys_rotate_if_due()
    assert first is not None  # a fresh install: its first key
    assert keys_rotate_if_due() is None  # an hour later: nothing to do
    period = timedelta(seconds=settings.GRADLAB_LTI_KEY_ROTATE_SECONDS)
    later = timezone.now() + period + timedelta(minutes=1)

    second = keys_rotate_if_due(later)

    assert second is not None
    assert set(Key.objects.filter(is_active=True)) == {first.created, second.created}
    # The new key is in the key set at once but signs only after the publish lead.
    assert second.created.as_jwk()["kid"] in {key["kid"] for key in jwks()["keys"]}
    assert signing_key() == first.created


def test_key_rotation_runs_from_the_scheduler_without_a_cron_line() -> None:
    from django.conf import settings

    from config.celery_app import app

    entry = settings.CELERY_BEAT_SCHEDULE["rotate-lti-keys"]
    assert entry["task"] == "gradlab.lti_rotate_keys"
    app.loader.import_default_modules()
    assert "gradlab.lti_rotate_keys" in app.tasks
