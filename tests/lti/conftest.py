"""Fixtures of the LTI tests: the fake platform (a real HTTP peer), the tool's key and a
registration of that platform, on the shared catalog (tests/gradlab_fixtures.py)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
import requests
from django.test import Client
from fake_platform import (
    CLIENT_ID,
    COURSE_ID,
    DEPLOYMENT_ID,
    ISSUER,
    FakePlatform,
    running_platform,
)
from jwcrypto.jwk import JWK


@pytest.fixture
def platform() -> Iterator[FakePlatform]:
    with running_platform() as running:
        yield running


@pytest.fixture(scope="session")
def tool_key_pems() -> tuple[str, str]:
    """The tool's first key pair (public and private PEM), generated once per test process
    as `keys_ensure` would on a fresh install (Key.objects.generate: RSA 2048 via jwcrypto,
    some 0.1-0.4 s a key); each test stores it as a row of its own. Keys a test rotates in
    are still generated (tests/lti/test_keys.py covers keys_ensure's own generation)."""
    key = JWK.generate(kty="RSA", size=2048)
    private = key.export_to_pem(private_key=True, password=None).decode("utf-8")
    return key.export_to_pem().decode("utf-8"), private


@pytest.fixture
def registration(
    catalog: Any, platform: FakePlatform, settings: Any, tool_key_pems: tuple[str, str]
) -> Any:
    """The fake platform registered with the tool (one deployment), its course
    (COURSE_ID) bound to the catalog module, and the tool's JWKS handed to the platform,
    as an LMS administrator and the gradlab operator would."""
    from django.core.cache import cache
    from lti_tool.models import Key, LtiDeployment, LtiRegistration

    from lti.keys import jwks, keys_ensure
    from lti.models import ContextBinding

    cache.clear()
    public_pem, private_pem = tool_key_pems
    Key.objects.create(public_key=public_pem, private_key=private_pem)
    keys_ensure()
    registration = LtiRegistration.objects.create(
        name="Fake LMS", issuer=ISSUER, client_id=CLIENT_ID, auth_url=platform.auth_url,
        token_url=platform.token_url, keyset_url=platform.keyset_url,
    )  # fmt: skip
    deployment = LtiDeployment.objects.create(registration=registration,
                                              deployment_id=DEPLOYMENT_ID,
                                              is_active=True)  # fmt: skip
    ContextBinding.objects.create(deployment=deployment, context_id=COURSE_ID, module=catalog,
                                  origin="operator")  # fmt: skip
    platform.tool_jwks = jwks()
    return registration


@dataclass
class Flow:
    """One browser's trip: the tool's login redirect, the platform's answer, the launch's own
    response (`launched`) and where the browser lands after it (`response`)."""

    login: Any
    answer: dict[str, Any]
    response: Any
    launched: Any = None


@pytest.fixture
def launch(registration: Any, platform: FakePlatform) -> Callable[..., Flow]:
    """launch(client=None, tamper=None, login_url=None, client_id=CLIENT_ID, follow=True,
    **claims) -> Flow. `claims` go to the platform through lti_message_hint (which the tool
    passes back); `tamper(answer)` may change the id_token or state before the browser posts
    them; `follow=False` stops at the launch's own response."""

    def run(
        client: Client | None = None,
        tamper: Callable[[dict[str, Any]], None] | None = None,
        login_url: str | None = None,
        client_id: str = CLIENT_ID,
        follow: bool = True,
        **claims: Any,
    ) -> Flow:
        client = client or Client()
        if client_id != CLIENT_ID:
            claims.setdefault("aud", client_id)
        login = client.get(
            login_url or f"/lti/login/{registration.uuid}/",
            {
                "iss": ISSUER, "client_id": client_id, "login_hint": "learner-1",
                "target_link_uri": "https://gradlab.example.org/lti/launch/",
                "lti_message_hint": json.dumps(claims), "lti_deployment_id": DEPLOYMENT_ID,
            },
        )  # fmt: skip
        assert login.status_code == 302, login.content[:500]
        location = urlsplit(login["Location"])
        assert f"{location.scheme}://{location.netloc}{location.path}" == platform.auth_url
        answer = requests.get(platform.auth_url, params=parse_qs(location.query), timeout=10).json()
        if tamper is not None:
            tamper(answer)
        launched = client.post(
            "/lti/launch/", {"id_token": answer["id_token"], "state": answer["state"]}
        )
        landed = _continued(client, launched) if follow else launched
        return Flow(login=login, answer=answer, response=landed, launched=launched)

    return run


def _continued(client: Client, response: Any) -> Any:
    """Where a browser that keeps cookies lands after the launch: the continue page sends it
    on to the exercise (a redirect, returned as is) or to the deep-linking picker (200)."""
    if response.status_code != 302 or not response["Location"].startswith("/lti/continue/"):
        return response
    response = client.get(response["Location"])
    if response.status_code == 302 and response["Location"] == "/lti/deep-link/":
        return client.get(response["Location"])
    return response
