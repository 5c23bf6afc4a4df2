"""Sign-in throttling (django-axes, config.settings.base AXES_*): failed sign-ins are
counted per account and per address; past the limit every attempt, the right password
included, is refused with 429 and a page saying for how long."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client
from django.urls import reverse
from gradlab_fixtures import PASSWORD

pytestmark = pytest.mark.django_db

LIMIT = 10  # config.settings.base: GRADLAB_LOGIN_FAILURE_LIMIT's default


def _sign_in(username: str, password: str, address: str = "198.51.100.7") -> Any:
    client = Client(REMOTE_ADDR=address)
    response = client.post(reverse("web:login"), {"username": username, "password": password})
    response.signed_in = "_auth_user_id" in client.session
    return response


def test_the_right_password_after_the_limit_of_wrong_ones_is_refused_saying_for_how_long(
    bob_instructor: Any,
) -> None:
    for _ in range(LIMIT - 1):
        assert _sign_in("bob_instructor", "wrong").status_code == 200  # the form again

    assert _sign_in("bob_instructor", "wrong").status_code == 429
    locked = _sign_in("bob_instructor", PASSWORD)

    assert locked.status_code == 429 and not locked.signed_in
    page = locked.content.decode()
    assert f"paused after {LIMIT} failed attempts" in page and "Try again in 15 minutes" in page


def test_an_account_locked_from_one_address_is_locked_from_every_address(
    bob_instructor: Any,
) -> None:
    for number in range(LIMIT):
        _sign_in("bob_instructor", "wrong", address=f"203.0.113.{number + 1}")

    assert _sign_in("bob_instructor", PASSWORD, address="192.0.2.99").status_code == 429


def test_an_address_that_failed_for_many_accounts_is_refused_for_any_other(
    alice_learner: Any, dave_learner: Any
) -> None:
    for number in range(LIMIT):
        _sign_in(f"guess-{number}", "wrong", address="203.0.113.50")

    refused = _sign_in("alice_learner", PASSWORD, address="203.0.113.50")
    elsewhere = _sign_in("dave_learner", PASSWORD, address="192.0.2.10")

    assert refused.status_code == 429 and not refused.signed_in
    assert elsewhere.signed_in  # another address is not locked


def test_a_successful_sign_in_below_the_limit_starts_the_count_again(alice_learner: Any) -> None:
    for _ in range(LIMIT - 1):
        _sign_in("alice_learner", "wrong")
    assert _sign_in("alice_learner", PASSWORD).signed_in

    for _ in range(LIMIT - 1):
        _sign_in("alice_learner", "wrong")

    assert _sign_in("alice_learner", PASSWORD).signed_in


def test_an_api_token_is_not_throttled_by_failed_sign_ins(api: Any, bob_instructor: Any) -> None:
    for _ in range(LIMIT + 2):
        _sign_in("bob_instructor", "wrong")

    assert api(bob_instructor).get("/api/v1/exercises/").status_code == 200
