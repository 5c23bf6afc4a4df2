"""Hostile requests to the API: a session request without its CSRF token is refused, an
oversized body or field is a plain 4xx with no internals, a learner cannot read another's
submission (404, nothing of it in the body)."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

pytestmark = pytest.mark.django_db

URL = "/api/v1/submissions/"


def test_a_session_request_without_its_csrf_token_is_refused(
    alice_learner: Any, worker_queue: str
) -> None:
    from submissions.models import Submission

    client = Client(enforce_csrf_checks=True)
    client.force_login(alice_learner)

    response = client.post(URL, {"exercise": "chain-rule", "code": "x = 1"},
                           content_type="application/json")  # fmt: skip

    assert response.status_code == 403
    assert "CSRF" in response.json()["detail"]
    assert not Submission.objects.exists()


@pytest.mark.parametrize("size", [64 * 1024 + 1, 3 * 1024 * 1024])
def test_an_oversized_body_is_a_plain_client_error_without_internals(
    api: Any, alice_learner: Any, worker_queue: str, size: int
) -> None:
    from submissions.models import Submission

    response = api(alice_learner).post(URL, {"exercise": "chain-rule", "code": "x" * size},
                                       format="json")  # fmt: skip

    assert 400 <= response.status_code < 500, response.status_code
    body = response.content.decode()
    assert "Traceback" not in body and "/work/" not in body and "site-packages" not in body
    assert not Submission.objects.exists()


def test_a_learner_cannot_read_another_learners_submission(
    api: Any, alice_learner: Any, dave_learner: Any, worker_queue: str
) -> None:
    created = api(alice_learner).post(URL, {"exercise": "chain-rule", "code": "secret = 42"},
                                      format="json").json()  # fmt: skip

    response = api(dave_learner).get(created["url"])
    listed = api(dave_learner).get(URL).json()

    assert response.status_code == 404
    assert "secret" not in response.content.decode()
    assert listed["count"] == 0
