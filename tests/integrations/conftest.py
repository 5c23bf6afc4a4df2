"""Fixtures of the integration tests: two course modules loaded from real exercise
packages, personas, and API clients for each kind of credential.

Personas: alice_learner learns in the course; bob_instructor teaches it; carol_other
teaches only the other course (which holds one exercise of its own).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from integration_helpers import COURSE, COURSE_EXERCISE, OTHER_COURSE, OTHER_EXERCISE, write_module
from rest_framework.test import APIClient


@pytest.fixture
def courses(db: None, tmp_path: Path) -> dict[str, Any]:
    from courses.models import Module
    from courses.services import exercises_load

    exercises_load(exercises_dir=write_module(tmp_path / "a", COURSE, (COURSE_EXERCISE,)))
    exercises_load(exercises_dir=write_module(tmp_path / "b", OTHER_COURSE, (OTHER_EXERCISE,)))
    return {m.slug: m for m in Module.objects.all()}


def _persona(username: str, module: Any, role: str) -> User:
    from accounts.models import Enrollment

    user = User.objects.create_user(username=username, password="not-a-real-password")
    Enrollment.objects.create(user=user, module=module, role=role)
    return user


@pytest.fixture
def alice_learner(courses: dict[str, Any]) -> User:
    return _persona("alice_learner", courses[COURSE], "learner")


@pytest.fixture
def bob_instructor(courses: dict[str, Any]) -> User:
    return _persona("bob_instructor", courses[COURSE], "instructor")


@pytest.fixture
def carol_other(courses: dict[str, Any]) -> User:
    return _persona("carol_other", courses[OTHER_COURSE], "instructor")


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
    bob_instructor: User, user_client: Callable[[User], APIClient]
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
