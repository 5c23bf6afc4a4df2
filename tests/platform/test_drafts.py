"""The learner's unsent code (Django's test client, on PostgreSQL and on SQLite): the page
posts it as a draft, kept per learner and exercise on the server, and the exercise page
opens with it (on any device, in any session) while it is newer than the last
submission; the page carries the starter (to reset to) and each attempt's code."""

from __future__ import annotations

import json
import re
from datetime import timedelta
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone
from gradlab_fixtures import MODULE_SLUG, OTHER_MODULE_SLUG

from courses.models import Exercise
from submissions.models import Draft, Submission

pytestmark = pytest.mark.django_db

SLUG = "chain-rule"
UNSENT = "import torch\nx = torch.tensor(2.0, requires_grad=True)  # half done\n"


def _client(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


def _draft_url(slug: str = SLUG) -> str:
    return reverse("web:exercise_draft", args=[MODULE_SLUG, slug])


def _editor_text(client: Client) -> str:
    page = client.get(reverse("web:exercise", args=[MODULE_SLUG, SLUG])).content.decode()
    match = re.search(r'<textarea id="id_code"[^>]*>\n?(.*?)</textarea>', page, re.S)
    assert match is not None
    return match.group(1).replace("&quot;", '"').replace("&#x27;", "'")


def _submission(learner: Any, code: str) -> Submission:
    exercise = Exercise.objects.get(slug=SLUG)
    return Submission.objects.create(
        learner=learner, exercise=exercise, version=exercise.current_version, code=code,
        status=Submission.Status.GRADED, score=1.0, max_score=10.0, passed=False,
        report={"status": "graded", "score": 1.0, "max_score": 10.0, "checks": []},
    )  # fmt: skip


def test_a_saved_draft_opens_on_another_device_in_a_new_session(alice_learner: Any) -> None:
    saved = _client(alice_learner).post(_draft_url(), {"code": UNSENT})

    elsewhere = _client(alice_learner)  # a new session: another device, or after sign-in
    page = elsewhere.get(reverse("web:exercise", args=[MODULE_SLUG, SLUG])).content.decode()

    assert saved.status_code == 200 and "saved_at" in saved.json()
    assert _editor_text(elsewhere) == UNSENT
    assert "Restored your unsent code" in page


def test_a_draft_newer_than_the_last_submission_wins_over_it(alice_learner: Any) -> None:
    _submission(alice_learner, "x = 'submitted'\n")
    _client(alice_learner).post(_draft_url(), {"code": UNSENT})

    assert _editor_text(_client(alice_learner)) == UNSENT


def test_a_submission_newer_than_the_draft_wins_over_it(alice_learner: Any) -> None:
    _client(alice_learner).post(_draft_url(), {"code": UNSENT})
    Draft.objects.update(updated_at=timezone.now() - timedelta(minutes=5))
    _submission(alice_learner, "x = 'submitted'\n")

    page = _client(alice_learner).get(reverse("web:exercise", args=[MODULE_SLUG, SLUG]))

    assert _editor_text(_client(alice_learner)) == "x = 'submitted'\n"
    assert "Restored from your last submission." in page.content.decode()


def test_a_draft_is_saved_again_in_place_one_per_learner_and_exercise(
    alice_learner: Any, dave_learner: Any
) -> None:
    alice = _client(alice_learner)
    alice.post(_draft_url(), {"code": "first\n"})
    alice.post(_draft_url(), {"code": UNSENT})
    alice.post(_draft_url("first-gradient"), {"code": "other exercise\n"})

    assert Draft.objects.filter(learner=alice_learner).count() == 2
    assert Draft.objects.get(learner=alice_learner, exercise__slug=SLUG).code == UNSENT
    assert UNSENT not in _editor_text(_client(dave_learner))


def test_an_empty_editor_is_a_draft_too(alice_learner: Any) -> None:
    _client(alice_learner).post(_draft_url(), {"code": ""})

    assert _editor_text(_client(alice_learner)) == ""


def test_a_draft_post_without_the_csrf_token_is_refused(alice_learner: Any) -> None:
    client = Client(enforce_csrf_checks=True)
    client.force_login(alice_learner)

    response = client.post(_draft_url(), {"code": UNSENT})

    assert response.status_code == 403 and not Draft.objects.exists()


def test_a_signed_out_draft_post_goes_to_the_sign_in_page_and_saves_nothing(
    client: Client, catalog: Any
) -> None:
    response = client.post(_draft_url(), {"code": UNSENT})

    assert response.status_code == 302 and "/accounts/login/" in response["Location"]
    assert not Draft.objects.exists()


def test_no_draft_is_kept_for_an_exercise_the_user_may_not_see(carol_other_course: Any) -> None:
    response = _client(carol_other_course).post(_draft_url(), {"code": UNSENT})
    other = reverse("web:exercise_draft", args=[OTHER_MODULE_SLUG, SLUG])

    assert response.status_code == 404
    assert _client(carol_other_course).post(other, {"code": UNSENT}).status_code == 404
    assert not Draft.objects.exists()


@pytest.mark.parametrize(
    ("code", "problem"),
    [("x = 1\x00\n", "NUL"), ("#" * (64 * 1024 + 1), "the limit is")],
    ids=["nul-byte", "too-big"],
)
def test_a_draft_that_is_not_code_is_refused_with_the_reason(
    alice_learner: Any, code: str, problem: str
) -> None:
    response = _client(alice_learner).post(_draft_url(), {"code": code})

    assert response.status_code == 400 and problem in json.dumps(response.json())
    assert not Draft.objects.exists()


def test_the_page_carries_the_starter_to_reset_to_and_each_attempts_code_to_load(
    alice_learner: Any,
) -> None:
    submission = _submission(alice_learner, "x = 'attempt one'\n")
    _client(alice_learner).post(_draft_url(), {"code": UNSENT})
    exercise = Exercise.objects.get(slug=SLUG)

    page = _client(alice_learner).get(reverse("web:exercise", args=[MODULE_SLUG, SLUG]))
    html = page.content.decode()

    starter = re.search(r'<script id="starter-code" type="application/json">(.*?)</script>', html)
    assert starter is not None
    assert json.loads(starter.group(1)) == exercise.current_version.starter_code
    assert f'data-attempt="{submission.pk}"' in html and 'id="reset-starter"' in html
    assert f'data-draft-url="{_draft_url()}"' in html
