"""The instructor's gradebook on the Teach page (a column per exercise, sorted by any
column, searched, a page at a time, in a bounded number of queries) and the list of one
exercise's submissions (filtered, paginated, for the module's instructors only). Django's
test client, on PostgreSQL and on SQLite."""

from __future__ import annotations

import csv
import io
import re
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone
from gradlab_fixtures import MODULE_SLUG, OTHER_MODULE_SLUG

from accounts.models import Enrollment
from courses.models import Exercise
from submissions.models import Submission

pytestmark = pytest.mark.django_db

SLUG = "chain-rule"
DASH = "\u2013"
NOW = timezone.now().replace(microsecond=0)


def _client(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


def _submit(
    learner: Any,
    slug: str = SLUG,
    *,
    score: float | None = 4.0,
    status: str = Submission.Status.GRADED,
    at: Any = None,
    late: bool = False,
    review: str = "",
) -> Submission:
    exercise = Exercise.objects.get(slug=slug)
    submission = Submission.objects.create(
        learner=learner, exercise=exercise, version=exercise.current_version, code="x = 1\n",
        status=status, score=score, max_score=float(exercise.points),
        passed=None if score is None else score >= float(exercise.points),
        report={"status": "graded", "score": score, "checks": [], "message": ""},
        late=late, review=review,
    )  # fmt: skip
    if at is not None:
        Submission.objects.filter(pk=submission.pk).update(created_at=at)
    return submission


def _learner(username: str, **fields: Any) -> Any:
    user = get_user_model().objects.create(username=username, **fields)
    Enrollment.objects.create(
        user=user, module=Exercise.objects.get(slug=SLUG).module, role=Enrollment.Role.LEARNER
    )
    return user


def _teach(user: Any, query: str = "") -> str:
    response = _client(user).get(reverse("web:teach_module", args=[MODULE_SLUG]) + query)
    assert response.status_code == 200
    return response.content.decode()


def _gradebook(page: str) -> str:
    return page.split('id="gradebook"')[1].split("</section>")[0]


def _order(page: str) -> list[str]:
    """The learners of the gradebook's rows, top to bottom."""
    return re.findall(r'<tr data-learner="([^"]+)"', _gradebook(page))


def _row(page: str, username: str) -> str:
    return _gradebook(page).split(f'<tr data-learner="{username}">')[1].split("</tr>")[0]


def _cell(row: str, column: str) -> str:
    found = re.search(rf'data-col="{re.escape(column)}"[^>]*>(.*?)</td>', row, re.S)
    assert found is not None, f"no cell {column}"
    return found.group(1)


def _header(page: str, key: str) -> str:
    found = re.search(rf'<th [^>]*data-sort="{re.escape(key)}".*?</th>', _gradebook(page), re.S)
    assert found is not None, f"no heading {key}"
    return found.group(0)


# -- columns -----------------------------------------------------------------------------


def test_the_gradebook_has_a_column_per_exercise_with_each_learners_counted_best_score(
    alice_learner: Any, dave_learner: Any, bob_instructor: Any
) -> None:
    _submit(alice_learner, score=4.0)
    _submit(alice_learner, score=7.0)
    _submit(alice_learner, score=10.0, review=Submission.Review.HELD)  # counts for nothing yet
    _submit(dave_learner, "first-gradient", score=3.0)

    page = _teach(bob_instructor)

    alice, dave = _row(page, "alice_learner"), _row(page, "dave_learner")
    assert _cell(alice, f"ex-{SLUG}").startswith("7")
    assert _cell(alice, "ex-first-gradient") == DASH
    assert _cell(dave, "ex-first-gradient") == "3"
    assert _cell(dave, f"ex-{SLUG}") == DASH
    assert _cell(alice, "total") == "7" and _cell(dave, "total") == "3"
    for slug in ("first-gradient", SLUG, "training-loop"):
        assert f'data-sort="ex-{slug}"' in _gradebook(page)


def test_a_gradebook_cell_marks_work_held_for_review_and_a_late_last_submission(
    alice_learner: Any, dave_learner: Any, bob_instructor: Any
) -> None:
    _submit(alice_learner, score=10.0, review=Submission.Review.HELD)
    _submit(dave_learner, score=5.0, late=True)

    page = _teach(bob_instructor)

    alice_cell = _cell(_row(page, "alice_learner"), f"ex-{SLUG}")
    dave_cell = _cell(_row(page, "dave_learner"), f"ex-{SLUG}")
    assert alice_cell.startswith(DASH) and "held for review</span>" in alice_cell
    assert dave_cell.startswith("5") and 'badge-late">late</span>' in dave_cell
    assert "held" not in dave_cell and "late" not in alice_cell


# -- sorting -----------------------------------------------------------------------------


@pytest.fixture
def tied(catalog: Any) -> None:
    """Learners scoring 4 in chain-rule but one with 9 and one who never tried it."""
    for username in ("zoe", "amy", "mia"):
        _submit(_learner(username), score=4.0)
    _submit(_learner("kit"), score=9.0)
    _learner("bea")


def test_sorting_by_an_exercise_orders_by_its_score_either_way_with_ties_by_username(
    tied: None, bob_instructor: Any
) -> None:
    descending = _teach(bob_instructor, f"?sort=ex-{SLUG}&dir=desc")
    ascending = _teach(bob_instructor, f"?sort=ex-{SLUG}&dir=asc")

    assert _order(descending) == ["kit", "amy", "mia", "zoe", "bea"]
    assert _order(ascending) == ["bea", "amy", "mia", "zoe", "kit"]


def test_the_sorted_heading_carries_aria_sort_and_links_to_the_other_direction(
    tied: None, bob_instructor: Any
) -> None:
    page = _teach(bob_instructor, f"?sort=ex-{SLUG}&dir=desc")

    heading = _header(page, f"ex-{SLUG}")
    assert 'aria-sort="descending"' in heading
    assert f'href="?sort=ex-{SLUG}&amp;dir=asc#gradebook"' in heading
    assert "aria-sort" not in _header(page, "learner") + _header(page, "total")
    assert 'href="?sort=total&amp;dir=desc#gradebook"' in _header(page, "total")


def test_sorting_by_learner_total_and_tried_follows_the_query_and_defaults_to_username(
    tied: None, bob_instructor: Any
) -> None:
    _submit(get_user_model().objects.get(username="zoe"), "first-gradient", score=1.0)

    assert _order(_teach(bob_instructor)) == ["amy", "bea", "kit", "mia", "zoe"]
    assert 'aria-sort="ascending"' in _header(_teach(bob_instructor), "learner")
    assert _order(_teach(bob_instructor, "?dir=desc")) == ["zoe", "mia", "kit", "bea", "amy"]
    assert _order(_teach(bob_instructor, "?sort=total&dir=desc")) == [
        "kit", "zoe", "amy", "mia", "bea"
    ]  # fmt: skip
    assert _order(_teach(bob_instructor, "?sort=tried&dir=desc"))[:1] == ["zoe"]
    assert _order(_teach(bob_instructor, "?sort=nonsense&dir=sideways")) == _order(
        _teach(bob_instructor)
    )


# -- search ------------------------------------------------------------------------------


def test_the_search_matches_username_name_or_email_ignoring_case(
    tied: None, bob_instructor: Any
) -> None:
    get_user_model().objects.filter(username="mia").update(first_name="Ada", last_name="Lovelace")
    get_user_model().objects.filter(username="kit").update(email="Kit.Marlowe@Example.org")

    assert _order(_teach(bob_instructor, "?q=AMY")) == ["amy"]
    assert _order(_teach(bob_instructor, "?q=ada+LOVE")) == ["mia"]
    assert _order(_teach(bob_instructor, "?q=marlowe%40example")) == ["kit"]
    page = _teach(bob_instructor, "?q=nobody-like-this")
    assert _order(page) == [] and "No learner matches" in page
    assert "1 of 5 learners match" in _teach(bob_instructor, "?q=amy")


def test_a_search_keeps_the_sort_and_its_scores(tied: None, bob_instructor: Any) -> None:
    page = _teach(bob_instructor, f"?q=m&sort=ex-{SLUG}&dir=desc")

    assert _order(page) == ["amy", "mia"]
    assert _cell(_row(page, "amy"), f"ex-{SLUG}") == "4"
    assert 'name="sort"' in page and f'value="ex-{SLUG}" selected' in page


def test_the_csv_is_the_whole_gradebook_by_username_whatever_the_search_and_sort(
    tied: None, bob_instructor: Any
) -> None:
    url = reverse("web:grades_csv", args=[MODULE_SLUG]) + f"?q=kit&sort=ex-{SLUG}&dir=desc"
    rows = list(csv.DictReader(io.StringIO(_client(bob_instructor).get(url).content.decode())))

    assert [r["username"] for r in rows] == ["amy", "bea", "kit", "mia", "zoe"]


# -- many learners -----------------------------------------------------------------------


def _class_of(count: int, start: int = 0) -> None:
    learners = [
        _learner(f"learner{n:03d}", email=f"l{n}@example.org") for n in range(start, start + count)
    ]
    for n, learner in enumerate(learners):
        _submit(learner, score=float(n % 10))
        _submit(learner, "first-gradient", score=1.0, late=n % 2 == 0)
        if n % 3 == 0:
            _submit(learner, "training-loop", score=2.0, review=Submission.Review.HELD)


def test_the_teach_page_makes_as_many_queries_for_many_learners_as_for_a_few(
    catalog: Any, bob_instructor: Any
) -> None:
    _class_of(3)
    client = _client(bob_instructor)
    url = reverse("web:teach_module", args=[MODULE_SLUG]) + f"?sort=ex-{SLUG}&dir=desc&q=learner"
    client.get(url)  # the session and caches, once
    with CaptureQueriesContext(connection) as few:
        client.get(url)

    _class_of(40, start=3)
    with CaptureQueriesContext(connection) as many:
        page = client.get(url).content.decode()

    assert len(_order(page)) == 43
    assert len(many) <= len(few), [q["sql"] for q in many.captured_queries]


def test_the_gradebook_shows_a_page_of_learners_at_a_time(
    catalog: Any, bob_instructor: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("web.gradebook.GRADEBOOK_PAGE_SIZE", 4)
    _class_of(10)

    first = _teach(bob_instructor)
    last = _teach(bob_instructor, "?page=3")

    assert _order(first) == [f"learner{n:03d}" for n in range(4)]
    assert _order(last) == ["learner008", "learner009"]
    assert 'aria-label="Gradebook pages"' in first and 'href="?page=2#gradebook"' in first
    assert f"Showing 9{DASH}10." in last and "Page 3 of 3" in last
    assert _order(_teach(bob_instructor, "?page=99")) == _order(last)


# -- one exercise's submissions ----------------------------------------------------------


def _list_url(slug: str = SLUG, module: str = MODULE_SLUG, query: str = "") -> str:
    return reverse("web:exercise_submissions", args=[module, slug]) + query


def _listed(page: str) -> list[int]:
    return [int(n) for n in re.findall(r'<tr data-submission="(\d+)"', page)]


def _list(user: Any, query: str = "") -> str:
    response = _client(user).get(_list_url(query=query))
    assert response.status_code == 200
    return response.content.decode()


def test_an_exercises_submissions_are_listed_newest_first_with_learner_score_and_flags(
    alice_learner: Any, dave_learner: Any, bob_instructor: Any
) -> None:
    old = _submit(alice_learner, score=4.0, at=NOW - timedelta(hours=3))
    late = _submit(dave_learner, score=10.0, late=True, at=NOW - timedelta(hours=2))
    held = _submit(alice_learner, score=10.0, review=Submission.Review.HELD, at=NOW)
    other = _submit(alice_learner, "first-gradient", score=1.0)

    page = _list(bob_instructor)

    assert _listed(page) == [held.pk, late.pk, old.pk]
    assert other.pk not in _listed(page)
    row = {
        s.pk: page.split(f'data-submission="{s.pk}">')[1].split("</tr>")[0]
        for s in (old, late, held)
    }
    assert "alice_learner" in row[old.pk] and "4 / 10" in row[old.pk] and "failing" in row[old.pk]
    assert "dave_learner" in row[late.pk] and "10 / 10" in row[late.pk]
    assert 'data-testid="late">late</span>' in row[late.pk]
    assert "held for review" in row[held.pk] and f">{DASH}</td>" in row[held.pk]
    assert f'href="{reverse("web:submission", args=[held.pk])}"' in row[held.pk]


def test_the_submissions_list_filters_by_learner_status_and_lateness(
    alice_learner: Any, dave_learner: Any, bob_instructor: Any
) -> None:
    dave_learner.first_name = "Dorothy"
    dave_learner.save(update_fields=["first_name"])
    failing = _submit(alice_learner, score=4.0)
    passed = _submit(dave_learner, score=10.0, late=True)
    held = _submit(alice_learner, score=10.0, review=Submission.Review.HELD)
    failed = _submit(dave_learner, score=None, status=Submission.Status.FAILED)

    assert _listed(_list(bob_instructor, "?q=DOROTHY")) == [failed.pk, passed.pk]
    assert _listed(_list(bob_instructor, "?status=passed")) == [passed.pk]
    assert _listed(_list(bob_instructor, "?status=failing")) == [failing.pk]
    assert _listed(_list(bob_instructor, "?status=held")) == [held.pk]
    assert _listed(_list(bob_instructor, "?status=failed&q=dave")) == [failed.pk]
    assert _listed(_list(bob_instructor, "?late=1")) == [passed.pk]
    assert "No submission matches." in _list(bob_instructor, "?q=alice&status=failed")


def test_the_submissions_list_is_paginated(
    alice_learner: Any, bob_instructor: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("web.gradebook.SUBMISSIONS_PAGE_SIZE", 2)
    made = [_submit(alice_learner, at=NOW - timedelta(minutes=n)) for n in range(5)]

    first, third = _list(bob_instructor, "?q=alice"), _list(bob_instructor, "?q=alice&page=3")

    assert _listed(first) == [made[0].pk, made[1].pk]
    assert _listed(third) == [made[4].pk]
    assert 'href="?q=alice&amp;page=2#submissions"' in first
    assert "5 submissions match." in first and "Page 3 of 3" in third


def test_the_submissions_list_makes_as_many_queries_for_many_submissions_as_for_one(
    alice_learner: Any, dave_learner: Any, bob_instructor: Any
) -> None:
    _submit(alice_learner)
    client = _client(bob_instructor)
    client.get(_list_url())
    with CaptureQueriesContext(connection) as one:
        client.get(_list_url())

    for n in range(12):
        _submit(dave_learner if n % 2 else alice_learner, late=n % 3 == 0)
    with CaptureQueriesContext(connection) as many:
        page = client.get(_list_url()).content.decode()

    assert len(_listed(page)) == 13
    assert len(many) <= len(one), [q["sql"] for q in many.captured_queries]


def test_the_gradebook_heading_and_the_exercise_page_link_to_its_submissions(
    alice_learner: Any, bob_instructor: Any
) -> None:
    href = f'href="{_list_url()}"'

    assert href in _header(_teach(bob_instructor), f"ex-{SLUG}")
    exercise_page = _client(bob_instructor).get(
        reverse("web:teach_exercise", args=[MODULE_SLUG, SLUG])
    )
    assert href in exercise_page.content.decode()


def test_the_submissions_list_is_refused_to_learners_and_to_instructors_of_other_modules(
    alice_learner: Any, carol_other_course: Any, client: Client
) -> None:
    _submit(alice_learner)

    assert _client(alice_learner).get(_list_url()).status_code == 403
    carol = _client(carol_other_course)
    assert carol.get(_list_url()).status_code == 403
    assert carol.get(_list_url(module=OTHER_MODULE_SLUG)).status_code == 404
    assert client.get(_list_url()).status_code == 302  # signed out: to the sign-in page


def test_the_submissions_list_is_open_to_co_instructors_and_staff_and_404_for_no_exercise(
    alice_learner: Any, erin_co_instructor: Any, sam_staff: Any
) -> None:
    submission = _submit(alice_learner)

    assert _listed(_list(erin_co_instructor)) == [submission.pk]
    assert _listed(_list(sam_staff)) == [submission.pk]
    missing = _client(erin_co_instructor).get(_list_url(slug="no-such-exercise"))
    assert missing.status_code == 404
