"""Where signing in lands, and the header's links: an instructor who learns nowhere lands
on the Teach page of the module they teach; a `next` always wins; of several Teach links,
only the current module's says it is the current page."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse
from gradlab_fixtures import MODULE_SLUG, OTHER_MODULE_SLUG, PASSWORD, persona

pytestmark = pytest.mark.django_db


def _sign_in(username: str, next_url: str = "") -> Any:
    url = reverse("web:login") + (f"?next={next_url}" if next_url else "")
    return Client().post(url, {"username": username, "password": PASSWORD})


def test_an_instructor_who_learns_nowhere_lands_on_the_teach_page(bob_instructor: Any) -> None:
    response = _sign_in("bob_instructor")

    assert response.status_code == 302
    assert response["Location"] == reverse("web:teach_module", args=[MODULE_SLUG])


def test_a_learner_lands_on_their_exercises(alice_learner: Any) -> None:
    response = _sign_in("alice_learner")

    assert response["Location"] == reverse("web:home")


def test_someone_who_teaches_one_module_and_learns_in_another_lands_on_their_exercises(
    catalog: Any,
) -> None:
    persona("tina_both", module_slug=MODULE_SLUG, role="instructor")
    persona("tina_both", module_slug=OTHER_MODULE_SLUG, role="learner")

    assert _sign_in("tina_both")["Location"] == reverse("web:home")


def test_a_next_address_wins_over_the_teach_page(bob_instructor: Any) -> None:
    wanted = reverse("web:module", args=[MODULE_SLUG])

    assert _sign_in("bob_instructor", wanted)["Location"] == wanted


def test_of_two_teach_links_only_the_current_modules_is_the_current_page(
    web: Any, catalog: Any
) -> None:
    persona("tom_two_modules", module_slug=MODULE_SLUG, role="instructor")
    teacher = persona("tom_two_modules", module_slug=OTHER_MODULE_SLUG, role="instructor")

    page = web(teacher).get(reverse("web:teach_module", args=[MODULE_SLUG])).content.decode()

    header = page.split("<header", 1)[1].split("</header>", 1)[0]
    current = re.findall(r'<a href="([^"]+)" aria-current="page">Teach', header)
    assert current == [reverse("web:teach_module", args=[MODULE_SLUG])]
    assert header.count(">Teach: ") == 2
