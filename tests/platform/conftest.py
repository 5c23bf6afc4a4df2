"""Fixtures of the platform tests. The catalog, the personas and the real Celery worker
come from tests/gradlab_fixtures.py (shared with the browser tests)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from rest_framework.test import APIClient


@pytest.fixture
def api() -> Callable[[Any], APIClient]:
    """api(user) -> a client authenticated with the user's API token (None: anonymous)."""
    from accounts.services import token_issue

    def make(user: Any) -> APIClient:
        client = APIClient()
        if user is not None:
            client.credentials(HTTP_AUTHORIZATION=f"Token {token_issue(user=user)}")
        return client

    return make


@pytest.fixture
def web() -> Callable[[Any], Any]:
    """web(user) -> Django's test client signed in as the user (None: anonymous)."""
    from django.test import Client

    def make(user: Any) -> Client:
        client = Client()
        if user is not None:
            client.force_login(user)
        return client

    return make
