"""An attempt compared with another of the learner's, or with their unsent draft
(/submissions/<id>/compare/?with=<id|draft>, Django's test client, on PostgreSQL and on
SQLite): a server-rendered line diff, escaped, each line marked added or removed in words;
only the learner's own attempts, and any learner's for whoever teaches the module."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone
from gradlab_fixtures import MODULE_SLUG, persona

from courses.models import Exercise
from submissions.compare import DIFF_MAX_LINES, line_diff
from submissions.models import Draft, Submission

pytestmark = pytest.mark.django_db

SLUG = "chain-rule"
MINUS = "\u2212"  # the sign the page marks a removed line with
FIRST = "import torch\nx = torch.tensor(2.0)\ny = x * x\nprint(y)\n"
SECOND = "import torch\nx = torch.tensor(2.0, requires_grad=True)\ny = x * x\ny.backward()\n"


def _client(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


def _attempt(learner: Any, code: str, *, minutes_ago: int = 0, slug: str = SLUG) -> Submission:
    exercise = Exercise.objects.get(slug=slug)
    submission = Submission.objects.create(
        learner=learner, exercise=exercise, version=exercise.current_version, code=code,
        status=Submission.Status.GRADED, score=1.0, max_score=10.0, passed=False,
        report={"status": "graded", "score": 1.0, "max_score": 10.0, "checks": []},
    )  # fmt: skip
    created = timezone.now() - timedelta(minutes=minutes_ago)
    Submission.objects.filter(pk=submission.pk).update(created_at=created)
    submission.refresh_from_db()
    return submission


def _compare(client: Client, submission: Submission, other: str | None = None) -> Any:
    query = {} if other is None else {"with": other}
    return client.get(reverse("web:compare", args=[submission.pk]), query)


def _rows(html: str) -> list[tuple[str, str]]:
    """(kind, the row's text without tags) of every line of the diff table."""
    rows = re.findall(r'<tr class="diff-\w+" data-kind="(\w+)">(.*?)</tr>', html, re.S)
    return [(kind, " ".join(re.sub(r"<[^>]+>", " ", body).split())) for kind, body in rows]


def test_two_attempts_show_the_lines_added_and_removed_marked_in_words(
    alice_learner: Any,
) -> None:
    first = _attempt(alice_learner, FIRST, minutes_ago=5)
    second = _attempt(alice_learner, SECOND)

    response = _compare(_client(alice_learner), second, str(first.pk))
    html = response.content.decode()
    rows = _rows(html)

    assert response.status_code == 200
    assert ("removed", f"2 {MINUS} removed x = torch.tensor(2.0)") in rows
    assert ("added", "2 + added x = torch.tensor(2.0, requires_grad=True)") in rows
    assert ("removed", f"4 {MINUS} removed print(y)") in rows
    assert ("added", "4 + added y.backward()") in rows
    assert ("context", "3 3 y = x * x") in rows
    assert "2 lines added and 2 removed" in html
    assert f"From #{first.pk}" in html and f"to #{second.pk}" in html


def test_the_older_attempt_is_the_starting_side_whichever_is_named_first(
    alice_learner: Any,
) -> None:
    first = _attempt(alice_learner, FIRST, minutes_ago=5)
    second = _attempt(alice_learner, SECOND)

    from_older = _rows(_compare(_client(alice_learner), first, str(second.pk)).content.decode())
    from_newer = _rows(_compare(_client(alice_learner), second, str(first.pk)).content.decode())

    assert from_older == from_newer
    assert ("added", "4 + added y.backward()") in from_older


def test_without_a_choice_an_attempt_is_compared_with_the_one_before_it(
    alice_learner: Any,
) -> None:
    _attempt(alice_learner, "x = 'oldest'\n", minutes_ago=10)
    before = _attempt(alice_learner, FIRST, minutes_ago=5)
    latest = _attempt(alice_learner, SECOND)

    html = _compare(_client(alice_learner), latest).content.decode()

    assert f'<option value="{before.pk}" selected>' in html
    assert f"From #{before.pk}" in html and "oldest" not in "".join(t for _, t in _rows(html))


def test_an_attempt_is_compared_with_the_learners_unsent_draft(alice_learner: Any) -> None:
    attempt = _attempt(alice_learner, FIRST, minutes_ago=5)
    client = _client(alice_learner)
    client.post(
        reverse("web:exercise_draft", args=[MODULE_SLUG, SLUG]), {"code": FIRST + "z = 3\n"}
    )

    html = _compare(client, attempt, "draft").content.decode()

    assert ("added", "5 + added z = 3") in _rows(html)
    assert "to your unsent draft" in html and "1 line added and 0 removed" in html


def test_the_only_attempt_with_no_draft_says_there_is_nothing_to_compare(
    alice_learner: Any,
) -> None:
    attempt = _attempt(alice_learner, FIRST)

    response = _compare(_client(alice_learner), attempt)

    assert response.status_code == 200
    assert "nothing to compare it with yet" in response.content.decode()


def test_identical_attempts_say_there_is_no_difference(alice_learner: Any) -> None:
    first = _attempt(alice_learner, FIRST, minutes_ago=5)
    second = _attempt(alice_learner, FIRST)

    html = _compare(_client(alice_learner), second, str(first.pk)).content.decode()

    assert "No difference: both hold the same code." in html and not _rows(html)


def test_code_is_shown_escaped_never_as_markup(alice_learner: Any) -> None:
    first = _attempt(alice_learner, FIRST, minutes_ago=5)
    second = _attempt(alice_learner, FIRST + "s = '<script>alert(1)</script>'\n")

    html = _compare(_client(alice_learner), second, str(first.pk)).content.decode()

    assert "<script>alert(1)" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html


def test_another_learners_attempt_is_not_found_either_way(
    alice_learner: Any, dave_learner: Any
) -> None:
    alices = _attempt(alice_learner, FIRST, minutes_ago=5)
    daves = _attempt(dave_learner, SECOND)
    alice = _client(alice_learner)

    assert _compare(alice, daves).status_code == 404
    assert _compare(alice, alices, str(daves.pk)).status_code == 404
    assert SECOND not in _compare(alice, alices, str(daves.pk)).content.decode()


def test_an_attempt_at_another_exercise_is_not_offered_nor_compared(alice_learner: Any) -> None:
    here = _attempt(alice_learner, FIRST)
    elsewhere = _attempt(alice_learner, SECOND, slug="first-gradient")

    html = _compare(_client(alice_learner), here).content.decode()

    assert f'value="{elsewhere.pk}"' not in html
    assert _compare(_client(alice_learner), here, str(elsewhere.pk)).status_code == 404


def test_an_instructor_compares_a_learners_attempts_but_never_sees_their_draft(
    alice_learner: Any, bob_instructor: Any
) -> None:
    first = _attempt(alice_learner, FIRST, minutes_ago=5)
    second = _attempt(alice_learner, SECOND)
    Draft.objects.create(
        learner=alice_learner, exercise=first.exercise, code="secret\n", updated_at=timezone.now()
    )
    bob = _client(bob_instructor)

    page = _compare(bob, second, str(first.pk))

    assert page.status_code == 200 and ("added", "4 + added y.backward()") in _rows(
        page.content.decode()
    )
    assert 'value="draft"' not in page.content.decode()
    assert _compare(bob, second, "draft").status_code == 404


def test_those_who_do_not_teach_the_module_get_a_404(
    alice_learner: Any, carol_other_course: Any
) -> None:
    attempt = _attempt(alice_learner, FIRST)
    # A reviewer reads drafts of exercises, never learners' submissions (courses.access).
    rita = persona("rita_reviewer", module_slug=MODULE_SLUG, role="reviewer")

    assert _compare(_client(carol_other_course), attempt).status_code == 404
    assert _compare(_client(rita), attempt).status_code == 404


def test_a_signed_out_visitor_is_sent_to_sign_in(alice_learner: Any) -> None:
    attempt = _attempt(alice_learner, FIRST)

    response = _compare(Client(), attempt)

    assert response.status_code == 302 and "/accounts/login/" in response["Location"]


@pytest.mark.parametrize(
    ("other", "status"),
    [("abc", 400), ("-1", 400), ("1.5", 400), ("\u0663", 400), ("9" * 40, 404)],
    ids=["word", "negative", "decimal", "arabic-indic-digit", "beyond-bigint"],
)
def test_a_with_that_is_no_attempt_number_is_refused_with_a_reason(
    alice_learner: Any, other: str, status: int
) -> None:
    attempt = _attempt(alice_learner, FIRST)

    response = _compare(_client(alice_learner), attempt, other)

    assert response.status_code == status and "attempt" in response.content.decode()


def test_the_submission_page_and_the_history_link_to_the_comparison(alice_learner: Any) -> None:
    attempt = _attempt(alice_learner, FIRST)
    client = _client(alice_learner)
    link = reverse("web:compare", args=[attempt.pk])

    submission_page = client.get(reverse("web:submission", args=[attempt.pk])).content.decode()
    exercise_page = client.get(reverse("web:exercise", args=[MODULE_SLUG, SLUG])).content.decode()

    assert f'href="{link}"' in submission_page and "Compare with…" in submission_page
    assert f'href="{link}"' in exercise_page


def test_code_longer_than_the_bound_is_not_diffed_and_the_page_says_so(
    alice_learner: Any,
) -> None:
    first = _attempt(alice_learner, FIRST, minutes_ago=5)
    long = _attempt(alice_learner, "x = 1\n" * (DIFF_MAX_LINES + 1))

    html = _compare(_client(alice_learner), long, str(first.pk)).content.decode()
    compared = line_diff("x = 1\n", "x = 1\n" * DIFF_MAX_LINES)

    assert "Too long to compare here" in html and f"{DIFF_MAX_LINES:,}" in html
    assert not _rows(html)
    assert not compared.too_long and compared.added == DIFF_MAX_LINES - 1
