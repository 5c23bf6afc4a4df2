"""Due dates and late work on the pages (Django's test client, on PostgreSQL and on SQLite):
what learners are told (module page, exercise page, feedback, history, the status JSON),
what instructors see (gradebook, CSV), a late-policy change previewed before it applies,
and per-learner extensions."""

from __future__ import annotations

import csv
import io
from datetime import datetime, timedelta
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone
from gradlab_fixtures import MODULE_SLUG

from courses.models import Exercise, Extension
from submissions.models import Submission

pytestmark = pytest.mark.django_db

DASH = "\u2013"  # the pages' en dash: no value

SLUG = "chain-rule"
DUE = timezone.now().replace(microsecond=0) - timedelta(days=1)


def _client(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


def _schedule(*, due_at: datetime | None = DUE, late_counts: bool) -> Exercise:
    from authoring.services import exercise_schedule_set

    exercise = Exercise.objects.get(slug=SLUG)
    exercise_schedule_set(
        exercise=exercise, release_at=None, due_at=due_at, late_counts=late_counts
    )
    return exercise


def _graded(learner: Any, *, at: datetime, score: float = 10.0) -> Submission:
    """A graded submission made at `at`, late or not by the dates as they are now."""
    from submissions.late import due_for

    exercise = Exercise.objects.get(slug=SLUG)
    due = due_for(exercise=exercise, learner_id=learner.pk)
    submission = Submission.objects.create(
        learner=learner, exercise=exercise, version=exercise.current_version, code="x = 1\n",
        status=Submission.Status.GRADED, score=score, max_score=10.0, passed=score == 10.0,
        report={"status": "graded", "score": score, "max_score": 10.0, "passed": score == 10.0,
                "checks": [], "message": ""},
        late=due is not None and at > due,
    )  # fmt: skip
    Submission.objects.filter(pk=submission.pk).update(created_at=at)
    submission.refresh_from_db()
    return submission


def _page(user: Any, name: str, *args: Any) -> str:
    response = _client(user).get(reverse(name, args=[MODULE_SLUG, *args]))
    assert response.status_code == 200
    return response.content.decode()


# -- learners ----------------------------------------------------------------------------


def test_a_learner_whose_only_work_was_late_sees_why_it_does_not_count_on_the_module_page(
    alice_learner: Any,
) -> None:
    _schedule(late_counts=False)
    _graded(alice_learner, at=DUE + timedelta(hours=2))

    page = _page(alice_learner, "web:module")

    assert "late: does not count" in page
    assert "1 late submission not counted" in page
    assert "not tried" not in page.split(f'data-exercise="{SLUG}"')[1].split("</tr>")[0]
    assert f"was due {DUE:%b} {DUE.day}, {DUE:%Y, %H:%M} UTC" in page


def test_the_module_page_shows_a_due_date_still_to_come(alice_learner: Any) -> None:
    due = timezone.now().replace(microsecond=0) + timedelta(days=3)
    _schedule(due_at=due, late_counts=True)

    row = _page(alice_learner, "web:module").split(f'data-exercise="{SLUG}"')[1].split("</tr>")[0]

    assert f"{due:%b} {due.day}, {due:%Y, %H:%M} UTC" in row and "was due" not in row


def test_the_exercise_page_says_when_it_was_due_and_what_late_work_gets(
    alice_learner: Any,
) -> None:
    _schedule(late_counts=False)

    page = _page(alice_learner, "web:exercise", SLUG)

    assert 'data-testid="deadline"' in page
    assert "Was due" in page and "do not count" in page


def test_a_late_submission_that_does_not_count_says_so_in_its_feedback_history_and_status(
    alice_learner: Any,
) -> None:
    _schedule(late_counts=False)
    late = _graded(alice_learner, at=DUE + timedelta(hours=2))

    page = _page(alice_learner, "web:exercise", SLUG)
    status = _client(alice_learner).get(reverse("web:submission_status", args=[late.pk])).json()

    assert "this submission does not count towards your grade" in page
    assert "Full marks" not in page and "it came after the due date: it does not count" in page
    assert 'class="score-banner late"' in page and 'class="score-banner passed"' not in page
    assert 'data-testid="late">late: does not count' in page
    assert (status["late"], status["late_counts"]) == (True, False)


def test_a_late_submission_that_counts_is_marked_late_but_keeps_its_score(
    alice_learner: Any,
) -> None:
    _schedule(late_counts=True)
    _graded(alice_learner, at=DUE + timedelta(hours=2))

    module = _page(alice_learner, "web:module")
    exercise = _page(alice_learner, "web:exercise", SLUG)

    assert "Late submissions count." in exercise and 'data-testid="late">late<' in exercise
    assert "late: does not count" not in module and "10 / 10" in module


def test_an_on_time_submission_carries_no_late_mark(alice_learner: Any) -> None:
    _schedule(late_counts=False)
    _graded(alice_learner, at=DUE - timedelta(hours=2))

    page = _page(alice_learner, "web:exercise", SLUG)

    assert 'data-testid="late"' not in page and 'data-testid="late-note"' not in page


# -- instructors -------------------------------------------------------------------------


def test_the_grade_csv_has_each_exercises_last_submission_time_and_late_flag(
    alice_learner: Any, dave_learner: Any, bob_instructor: Any
) -> None:
    _schedule(late_counts=False)
    late = _graded(alice_learner, at=DUE + timedelta(hours=2))
    on_time = _graded(dave_learner, at=DUE - timedelta(hours=2), score=4.0)

    response = _client(bob_instructor).get(reverse("web:grades_csv", args=[MODULE_SLUG]))
    rows = {r["username"]: r for r in csv.DictReader(io.StringIO(response.content.decode()))}

    alice, dave = rows["alice_learner"], rows["dave_learner"]
    assert (alice[SLUG], alice[f"{SLUG} late"]) == ("", "yes")
    assert alice[f"{SLUG} last submitted (UTC)"] == late.created_at.isoformat(timespec="seconds")
    assert (dave[SLUG], dave[f"{SLUG} late"]) == ("4", "no")
    assert dave[f"{SLUG} last submitted (UTC)"] == on_time.created_at.isoformat(timespec="seconds")
    assert rows["alice_learner"]["first-gradient late"] == ""


def test_the_gradebook_marks_a_learner_whose_last_submission_was_late(
    alice_learner: Any, dave_learner: Any, bob_instructor: Any
) -> None:
    _schedule(late_counts=True)
    _graded(alice_learner, at=DUE + timedelta(hours=2))
    _graded(dave_learner, at=DUE - timedelta(hours=2))

    page = _page(bob_instructor, "web:teach_module")

    alice = page.split(">alice_learner</a>")[1].split("</tr>")[0]
    dave = page.split(">dave_learner</a>")[1].split("</tr>")[0]
    assert "1 late</span>" in alice and 'data-testid="late-count">' + DASH in dave


def test_unticking_late_counts_on_the_author_page_shows_whose_scores_change_before_applying(
    alice_learner: Any, dave_learner: Any, bob_instructor: Any
) -> None:
    exercise = _schedule(late_counts=True)
    _graded(alice_learner, at=DUE + timedelta(hours=2))
    _graded(dave_learner, at=DUE - timedelta(hours=2), score=4.0)
    bob = _client(bob_instructor)
    posted = {"release_at": "", "due_at": f"{DUE:%Y-%m-%dT%H:%M}"}  # late_counts unticked

    answer = bob.post(reverse("web:author_schedule", args=[MODULE_SLUG, SLUG]), posted)
    exercise.refresh_from_db()
    preview = bob.get(answer["Location"]).content.decode()

    assert answer.status_code == 302 and "late-policy" in answer["Location"]
    assert exercise.late_counts is True  # nothing applied yet
    changes = preview.split('id="late-policy-changes"')[1].split("</table>")[0]
    assert "alice_learner" in changes and "dave_learner" not in changes
    assert f"{DASH} (nothing counts)" in changes
    confirmed = bob.post(
        reverse("web:late_policy", args=[MODULE_SLUG, SLUG]), posted | {"confirm": "yes"}
    )
    exercise.refresh_from_db()
    assert confirmed.status_code == 302 and exercise.late_counts is False


def test_a_policy_change_that_changes_no_score_applies_from_the_author_page_at_once(
    alice_learner: Any, bob_instructor: Any
) -> None:
    exercise = _schedule(late_counts=True)
    _graded(alice_learner, at=DUE - timedelta(hours=2))

    answer = _client(bob_instructor).post(
        reverse("web:author_schedule", args=[MODULE_SLUG, SLUG]),
        {"release_at": "", "due_at": f"{DUE:%Y-%m-%dT%H:%M}"},
    )
    exercise.refresh_from_db()

    assert "late-policy" not in answer["Location"] and exercise.late_counts is False


def test_moving_the_due_date_later_marks_earlier_late_work_on_time(alice_learner: Any) -> None:
    _schedule(late_counts=False)
    submission = _graded(alice_learner, at=DUE + timedelta(hours=2))

    _schedule(due_at=DUE + timedelta(days=1), late_counts=False)
    submission.refresh_from_db()

    assert submission.late is False


def test_an_extension_moves_only_that_learners_due_date(
    alice_learner: Any, dave_learner: Any, bob_instructor: Any
) -> None:
    _schedule(late_counts=False)
    alice_work = _graded(alice_learner, at=DUE + timedelta(hours=2))
    dave_work = _graded(dave_learner, at=DUE + timedelta(hours=2))
    alice_id = str(alice_learner.pk)
    new_due = DUE + timedelta(days=2)

    answer = _client(bob_instructor).post(
        reverse("web:extension_grant", args=[MODULE_SLUG, SLUG]),
        {"learner": alice_id, "due_at": f"{new_due:%Y-%m-%dT%H:%M}"},
    )
    alice_work.refresh_from_db()
    dave_work.refresh_from_db()

    assert answer.status_code == 302
    assert (alice_work.late, dave_work.late) == (False, True)
    assert "(your extension)" in _page(alice_learner, "web:exercise", SLUG)
    assert "alice_learner: due" in _page(bob_instructor, "web:teach_exercise", SLUG)


def test_a_new_submission_before_the_extended_due_date_is_not_late(
    alice_learner: Any, bob_instructor: Any
) -> None:
    from submissions.late import extension_grant
    from submissions.services import submission_create

    exercise = _schedule(late_counts=False)
    due_at = timezone.now() + timedelta(days=1)
    extension_grant(
        exercise=exercise, learner=alice_learner, due_at=due_at, granted_by=bob_instructor
    )

    submission, _ = submission_create(learner=alice_learner, exercise_slug=SLUG, code="x = 1\n")

    assert submission.late is False


def test_withdrawing_an_extension_marks_the_work_late_again(
    alice_learner: Any, bob_instructor: Any
) -> None:
    from submissions.late import extension_grant

    exercise = _schedule(late_counts=False)
    work = _graded(alice_learner, at=DUE + timedelta(hours=2))
    extension = extension_grant(
        exercise=exercise, learner=alice_learner, due_at=DUE + timedelta(days=1),
        granted_by=bob_instructor,
    )  # fmt: skip

    _client(bob_instructor).post(
        reverse("web:extension_withdraw", args=[MODULE_SLUG, SLUG, extension.pk])
    )
    work.refresh_from_db()

    assert work.late is True and not Extension.objects.exists()


@pytest.mark.parametrize(
    ("name", "args", "method"),
    [
        ("web:late_policy", [SLUG], "get"),
        ("web:late_policy", [SLUG], "post"),
        ("web:extension_grant", [SLUG], "post"),
    ],
)
def test_only_the_modules_instructors_may_change_dates_or_grant_extensions(
    alice_learner: Any, carol_other_course: Any, name: str, args: list[str], method: str
) -> None:
    _schedule(late_counts=True)
    url = reverse(name, args=[MODULE_SLUG, *args])
    data = {"due_at": "", "confirm": "yes", "learner": str(alice_learner.pk)}

    for user in (alice_learner, carol_other_course):
        assert getattr(_client(user), method)(url, data).status_code == 403
    assert Exercise.objects.get(slug=SLUG).due_at == DUE and not Extension.objects.exists()


def test_one_learners_page_marks_their_late_submissions_for_the_instructor(
    alice_learner: Any, bob_instructor: Any
) -> None:
    _schedule(late_counts=False)
    _graded(alice_learner, at=DUE + timedelta(hours=2))

    page = _page(bob_instructor, "web:teach_learner", alice_learner.pk)

    assert 'data-testid="late">late: does not count' in page
