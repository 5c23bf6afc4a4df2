"""Fixtures of the reliability tests; the catalog, personas and real worker come from
tests/gradlab_fixtures.py."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from rest_framework.test import APIClient


@pytest.fixture
def api() -> Callable[[Any], APIClient]:
    """api(user) -> a client authenticated with the user's API token."""
    from accounts.services import token_issue

    def make(user: Any) -> APIClient:
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Token {token_issue(user=user)}")
        return client

    return make
