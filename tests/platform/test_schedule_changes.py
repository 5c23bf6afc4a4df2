"""Every writer of an exercise's schedule (due date, release date, "late submissions
count") goes through authoring.services.exercise_schedule_set: the Django admin, the pages
and the authoring API alike mark the submissions late again and tell the apps whose grades
changed (submissions.signals.grades_changed; the LMS side is tests/lti/test_schedule_passback.py).
The API previews a change (who, from what to what) before it is applied. Django's test
client, on PostgreSQL and on SQLite."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta
from typing import Any

import pytest
from django.test import Client
from django.utils import timezone
from gradlab_fixtures import MODULE_SLUG, persona

from courses.models import Exercise
from submissions.models import Submission

pytestmark = pytest.mark.django_db

SLUG = "chain-rule"
DUE = timezone.now().replace(microsecond=0) - timedelta(days=1)
SCHEDULE = f"/api/v1/authoring/modules/{MODULE_SLUG}/exercises/{SLUG}/schedule/"
PREVIEW = f"{SCHEDULE}preview/"


@pytest.fixture
def told() -> Iterator[list[tuple[int, list[int]]]]:
    """What grades_changed said, as (exercise id, learner ids) per sending."""
    from submissions.signals import grades_changed

    heard: list[tuple[int, list[int]]] = []

    def receiver(sender: Any, *, exercise_id: int, learner_ids: list[int], **_: Any) -> None:
        heard.append((exercise_id, list(learner_ids)))

    grades_changed.connect(receiver, dispatch_uid="test_schedule_changes")
    yield heard
    grades_changed.disconnect(dispatch_uid="test_schedule_changes")


@pytest.fixture
def ada_admin(catalog: Any) -> Any:
    return persona("ada_admin", is_staff=True, is_superuser=True)


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
        late=due is not None and at > due,
    )  # fmt: skip
    Submission.objects.filter(pk=submission.pk).update(created_at=at)
    submission.refresh_from_db()
    return submission


def _late(submission: Submission) -> bool:
    submission.refresh_from_db()
    return submission.late


def _admin_form(exercise: Exercise, **changes: str) -> dict[str, str]:
    """The admin's change form of `exercise` as a browser posts it, with `changes`
    (datetime fields come as <name>_0 date and <name>_1 time)."""
    data = {
        "module": str(exercise.module_id), "slug": exercise.slug, "title": exercise.title,
        "kind": exercise.kind, "points": str(exercise.points), "order": str(exercise.order),
        "device": exercise.device, "current_version": str(exercise.current_version_id or ""),
        "draft_version": str(exercise.draft_version_id or ""), "is_published": "on",
        "release_at_0": "", "release_at_1": "", "due_at_0": "", "due_at_1": "",
    }  # fmt: skip
    if exercise.due_at is not None:
        data |= {
            "due_at_0": f"{exercise.due_at:%Y-%m-%d}",
            "due_at_1": f"{exercise.due_at:%H:%M:%S}",
        }
    if exercise.late_counts:
        data["late_counts"] = "on"
    data |= changes
    return {name: value for name, value in data.items() if value is not None}


def _admin_save(user: Any, exercise: Exercise, **changes: Any) -> Any:
    client = Client()
    client.force_login(user)
    return client.post(
        f"/admin/courses/exercise/{exercise.pk}/change/", _admin_form(exercise, **changes)
    )


# -- the Django admin --------------------------------------------------------------------


def test_a_due_date_moved_earlier_in_the_django_admin_marks_the_work_after_it_late(
    ada_admin: Any, alice_learner: Any
) -> None:
    exercise = _schedule(due_at=DUE + timedelta(days=2), late_counts=False)
    work = _graded(alice_learner, at=DUE + timedelta(hours=2))
    assert not _late(work)

    answer = _admin_save(
        ada_admin, exercise, due_at_0=f"{DUE:%Y-%m-%d}", due_at_1=f"{DUE:%H:%M:%S}"
    )

    assert answer.status_code == 302, answer.content.decode()[:2000]
    exercise.refresh_from_db()
    assert exercise.due_at == DUE
    assert _late(work)


def test_unticking_late_counts_in_the_django_admin_tells_the_apps_whose_grades_changed(
    ada_admin: Any, alice_learner: Any, dave_learner: Any, told: list[Any]
) -> None:
    exercise = _schedule(late_counts=True)
    _graded(alice_learner, at=DUE + timedelta(hours=2))
    _graded(dave_learner, at=DUE - timedelta(hours=2))
    told.clear()

    answer = _admin_save(ada_admin, exercise, late_counts=None)

    assert answer.status_code == 302
    assert told == [(exercise.pk, [alice_learner.pk])]
    assert Exercise.objects.get(pk=exercise.pk).late_counts is False


def test_an_admin_edit_that_leaves_the_schedule_alone_changes_no_late_mark_and_tells_no_one(
    ada_admin: Any, alice_learner: Any, told: list[Any]
) -> None:
    exercise = _schedule(late_counts=False)
    work = _graded(alice_learner, at=DUE + timedelta(hours=2))
    told.clear()

    answer = _admin_save(ada_admin, exercise, title="Chain rule, renamed")

    assert answer.status_code == 302
    assert Exercise.objects.get(pk=exercise.pk).title == "Chain rule, renamed"
    assert _late(work) and told == []


def test_the_django_admin_refuses_a_due_date_before_the_release_date(ada_admin: Any) -> None:
    exercise = _schedule(late_counts=True)
    release = DUE + timedelta(days=1)

    answer = _admin_save(
        ada_admin, exercise, release_at_0=f"{release:%Y-%m-%d}", release_at_1="00:00:00"
    )

    assert answer.status_code == 200  # the form again, with the error
    assert "The due date must come after the release date." in answer.content.decode()
    assert Exercise.objects.get(pk=exercise.pk).release_at is None


# -- the services tell the apps ------------------------------------------------------------


def test_a_moved_due_date_tells_the_apps_only_of_learners_whose_late_marks_changed(
    alice_learner: Any, dave_learner: Any, told: list[Any]
) -> None:
    exercise = _schedule(late_counts=False)
    _graded(alice_learner, at=DUE + timedelta(hours=2))
    _graded(dave_learner, at=DUE - timedelta(hours=2))
    told.clear()

    _schedule(due_at=DUE + timedelta(hours=3), late_counts=False)  # alice's work: on time now
    _schedule(due_at=DUE + timedelta(hours=3), late_counts=False)  # the same again: nothing

    assert told == [(exercise.pk, [alice_learner.pk])]


def test_granting_and_withdrawing_an_extension_tells_the_apps_of_that_learner(
    alice_learner: Any, dave_learner: Any, bob_instructor: Any, told: list[Any]
) -> None:
    from submissions.late import extension_grant, extension_withdraw

    exercise = _schedule(late_counts=False)
    _graded(alice_learner, at=DUE + timedelta(hours=2))
    _graded(dave_learner, at=DUE + timedelta(hours=2))
    told.clear()

    extension = extension_grant(
        exercise=exercise, learner=alice_learner, due_at=DUE + timedelta(days=1),
        granted_by=bob_instructor,
    )  # fmt: skip
    extension_withdraw(exercise=exercise, extension_id=extension.pk)

    assert told == [(exercise.pk, [alice_learner.pk])] * 2


# -- the authoring API: preview and apply --------------------------------------------------


def test_the_api_previews_whose_grades_a_schedule_change_changes_and_changes_nothing(
    api: Any, bob_instructor: Any, alice_learner: Any, dave_learner: Any, told: list[Any]
) -> None:
    exercise = _schedule(late_counts=True)
    work = _graded(alice_learner, at=DUE + timedelta(hours=2), score=10.0)
    _graded(alice_learner, at=DUE - timedelta(hours=2), score=4.0)
    _graded(dave_learner, at=DUE - timedelta(hours=2), score=7.0)
    told.clear()

    answer = api(bob_instructor).post(
        PREVIEW, {"due_at": DUE.isoformat(), "late_counts": False}, format="json"
    )

    assert answer.status_code == 200, answer.content
    body = answer.json()
    assert body["late_counts"] is False
    assert body["changes"] == [
        {"learner": "alice_learner", "before": 10.0, "after": 4.0, "late_submissions": 1}
    ]
    assert Exercise.objects.get(pk=exercise.pk).late_counts is True
    assert _late(work) and told == []


def test_a_preview_of_a_later_due_date_lists_the_late_work_it_would_count(
    api: Any, bob_instructor: Any, alice_learner: Any
) -> None:
    _schedule(late_counts=False)
    _graded(alice_learner, at=DUE + timedelta(hours=2), score=9.0)
    later = (DUE + timedelta(days=1)).isoformat()

    answer = api(bob_instructor).post(
        PREVIEW, {"due_at": later, "late_counts": False}, format="json"
    )

    assert answer.status_code == 200, answer.content
    body = answer.json()

    assert body["changes"] == [
        {"learner": "alice_learner", "before": None, "after": 9.0, "late_submissions": 0}
    ]


def test_a_schedule_applied_through_the_api_marks_late_work_and_tells_the_apps(
    api: Any, bob_instructor: Any, alice_learner: Any, told: list[Any]
) -> None:
    exercise = _schedule(due_at=None, late_counts=True)
    work = _graded(alice_learner, at=DUE + timedelta(hours=2))
    told.clear()

    answer = api(bob_instructor).put(
        SCHEDULE, {"due_at": DUE.isoformat(), "late_counts": False}, format="json"
    )

    assert answer.status_code == 200
    assert _late(work)
    assert told == [(exercise.pk, [alice_learner.pk])]


def test_a_preview_of_a_due_date_before_the_release_date_is_a_400(
    api: Any, bob_instructor: Any
) -> None:
    answer = api(bob_instructor).post(
        PREVIEW,
        {"release_at": DUE.isoformat(), "due_at": (DUE - timedelta(days=1)).isoformat()},
        format="json",
    )

    assert answer.status_code == 400 and "due_at" in answer.json()


def test_only_the_modules_instructors_may_preview_a_schedule_change(
    api: Any, alice_learner: Any, carol_other_course: Any, catalog: Any
) -> None:
    reviewer = persona("rita_reviewer", module_slug=MODULE_SLUG, role="reviewer")

    answers = [api(user).post(PREVIEW, {}, format="json") for user in
               (alice_learner, carol_other_course, reviewer, None)]  # fmt: skip

    assert [a.status_code for a in answers] == [403, 403, 403, 401]
