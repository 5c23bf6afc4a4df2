"""Fixtures of the integration tests, on top of the shared ones (tests/gradlab_fixtures.py:
catalog, personas, a real worker): the other course gets an exercise of its own, and API
clients for each kind of credential."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth.models import User
from integration_helpers import COURSE, OTHER_COURSE, OTHER_EXERCISE, ROOT
from rest_framework.test import APIClient


@pytest.fixture
def courses(catalog: Any) -> dict[str, Any]:
    """{slug: Module} of the course (shared catalog) and of the other course, which holds
    OTHER_EXERCISE so that a request can reach across courses."""
    from django.db import transaction

    from courses.models import Module
    from courses.services import exercise_sync
    from grader import spec

    other = Module.objects.get(slug=OTHER_COURSE)
    package = spec.load_package(ROOT / "exercises" / OTHER_EXERCISE)
    with transaction.atomic():
        exercise_sync(module=other, package=package, order=0)
    return {COURSE: catalog, OTHER_COURSE: other}


@pytest.fixture
def carol_other(courses: dict[str, Any], carol_other_course: User) -> User:
    """The instructor of the other course only (with its exercise loaded)."""
    return carol_other_course


@pytest.fixture
def user_client() -> Callable[[User], APIClient]:
    """user_client(user) -> a client with the user's own API token (`Token ...`)."""
    from accounts.services import token_issue

    def make(user: User) -> APIClient:
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Token {token_issue(user=user)}")
        return client

    return make


@pytest.fixture
def course_token(
    courses: dict[str, Any], bob_instructor: User, user_client: Callable[[User], APIClient]
) -> Callable[..., str]:
    """course_token(scopes, course=COURSE) -> a new token's secret, made through the API."""

    def make(scopes: list[str], course: str = COURSE) -> str:
        response = user_client(bob_instructor).post(
            f"/api/v1/courses/{course}/tokens/",
            {"name": "grading script", "scopes": scopes},
            format="json",
        )
        assert response.status_code == 201, response.json()
        return str(response.json()["token"])

    return make
