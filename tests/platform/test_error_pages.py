"""Error pages: a refusal or a missing page is a styled page of ours that says what went
wrong, never Django's debug page, even with DEBUG on (`make run`'s default): the page a
learner gets for a module they are not in, an instructor page they may not open, a flood
of instructor jobs; and with DEBUG off, Django's own 404 and 500 use our templates."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client
from django.urls import reverse
from gradlab_fixtures import MODULE_SLUG, OTHER_MODULE_SLUG

pytestmark = pytest.mark.django_db

DEBUG_PAGE = ("Using the URLconf", "Traceback", "technical_404", "Django tried these URL")


def _assert_our_page(response: Any, status: int, title: str) -> str:
    body = str(response.content.decode())
    assert response.status_code == status
    assert response["Content-Type"].startswith("text/html")
    assert f"<h1>{title}</h1>" in body and 'class="skip-link"' in body  # the site's layout
    assert not [leak for leak in DEBUG_PAGE if leak in body]
    return body


@pytest.mark.parametrize("debug", [True, False], ids=["debug-on", "debug-off"])
def test_a_learner_opening_a_module_they_are_not_in_gets_a_styled_404(
    web: Any, alice_learner: Any, catalog: Any, settings: Any, debug: bool
) -> None:
    settings.DEBUG = debug

    response = web(alice_learner).get(reverse("web:module", args=[OTHER_MODULE_SLUG]))

    _assert_our_page(response, 404, "Page not found")


@pytest.mark.parametrize("debug", [True, False], ids=["debug-on", "debug-off"])
def test_a_learner_opening_an_instructor_page_gets_a_styled_403_saying_why(
    web: Any, alice_learner: Any, settings: Any, debug: bool
) -> None:
    settings.DEBUG = debug

    response = web(alice_learner).get(reverse("web:teach_module", args=[MODULE_SLUG]))

    body = _assert_our_page(response, 403, "Not allowed")
    assert "Only the module&#x27;s instructors may open this page." in body


def test_an_unknown_address_with_debug_off_is_our_404(web: Any, alice_learner: Any) -> None:
    response = web(alice_learner).get("/no-such-page/")

    _assert_our_page(response, 404, "Page not found")


def test_a_crash_with_debug_off_is_our_500_that_says_it_is_our_fault() -> None:
    from django.views import defaults

    response = defaults.server_error(Client().get("/").wsgi_request)

    body = response.content.decode()
    assert response.status_code == 500
    assert "Something went wrong on our side" in body and "never counts against you" in body


def test_a_flood_of_regrades_on_the_page_is_a_styled_429_with_retry_after(
    web: Any, bob_instructor: Any, catalog: Any, settings: Any
) -> None:
    from courses.models import Exercise

    settings.GRADLAB_QUEUE_CPU = "grading-unconsumed-error-pages-test"
    settings.GRADLAB_JOB_RATE_LIMIT_COUNT = 1
    client = web(bob_instructor)
    slugs = list(Exercise.objects.filter(module__slug=MODULE_SLUG).values_list("slug", flat=True))
    assert (
        client.post(reverse("web:regrade_exercise", args=[MODULE_SLUG, slugs[0]])).status_code
        == 302
    )

    response = client.post(reverse("web:regrade_exercise", args=[MODULE_SLUG, slugs[1]]))

    body = _assert_our_page(response, 429, "Too many requests")
    assert "Too many validations and regrades: at most 1 per 600 s" in body
    assert 1 <= int(response["Retry-After"]) <= 600
