"""GRADLAB_LTI_FRAME_ANCESTORS: origins that may frame every page, beyond the registered
LMSs' own (tests/lti/test_frames_and_state.py), with every session's cookies SameSite=None;
Secure. Unset, a page no LMS launch led to cannot be framed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
CANVAS = "https://canvas.example.edu"


def test_pages_cannot_be_framed_by_default(client: Any) -> None:
    response = client.get("/accounts/login/")

    assert "frame-ancestors 'none'" in response["Content-Security-Policy"]
    assert response["X-Frame-Options"] == "DENY"


def test_the_named_lms_may_frame_the_pages(client: Any, settings: Any) -> None:
    settings.GRADLAB_LTI_FRAME_ANCESTORS = [CANVAS]

    response = client.get("/accounts/login/")

    policy = response["Content-Security-Policy"]
    assert f"frame-ancestors 'self' {CANVAS}" in policy
    assert "frame-ancestors 'none'" not in policy
    assert "script-src 'self'" in policy  # the rest of the policy is untouched
    assert not response.has_header("X-Frame-Options")


def _settings_with(env: dict[str, str]) -> dict[str, Any]:
    code = (
        "import json, django; from django.conf import settings; django.setup(); "
        "print(json.dumps({k: getattr(settings, k) for k in ('SESSION_COOKIE_SAMESITE', "
        "'CSRF_COOKIE_SAMESITE', 'SESSION_COOKIE_SECURE', 'CSRF_COOKIE_SECURE', "
        "'SECURE_PROXY_SSL_HEADER')}))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env={
            **os.environ,
            "PYTHONPATH": f"{ROOT / 'platform'}{os.pathsep}{ROOT}",
            "DJANGO_SETTINGS_MODULE": "config.settings.prod",
            "SECRET_KEY": "x" * 50,
            **env,
        },
        capture_output=True,
        text=True,
        check=True,
    )
    return dict(json.loads(result.stdout.strip().splitlines()[-1]))


@pytest.mark.processes  # two fresh interpreters (tests/lanes.py)
def test_iframe_launches_make_the_cookies_samesite_none_and_secure_behind_the_tls_proxy() -> None:
    framed = _settings_with({"GRADLAB_LTI_FRAME_ANCESTORS": CANVAS})
    plain = _settings_with({})

    assert framed["SESSION_COOKIE_SAMESITE"] == framed["CSRF_COOKIE_SAMESITE"] == "None"
    assert framed["SESSION_COOKIE_SECURE"] and framed["CSRF_COOKIE_SECURE"]
    assert framed["SECURE_PROXY_SSL_HEADER"] == ["HTTP_X_FORWARDED_PROTO", "https"]
    assert plain["SESSION_COOKIE_SAMESITE"] == "Lax"
