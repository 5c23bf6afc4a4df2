"""The LMS gradebook follows gradlab's late policy: a score posted to the fake platform's
line item is the learner's best score that counts (late work only where the exercise's
late submissions count), and when a due date, the late policy or an extension changes
which work counts, the learners whose grade changed get their grade posted again, through
the outbox (recorded in the change's transaction, sent by the worker: no HTTP in the
request), once per change and never when the grade is what the LMS already has."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from fake_platform import FakePlatform

EXERCISE = "first-gradient"
DUE = datetime.now(UTC).replace(microsecond=0) - timedelta(days=1)


@pytest.fixture
def learner(launch: Callable[..., Any], worker_queue: str) -> Any:
    """A learner launched from the LMS (their grade target on the link's line item), on a
    private queue that no worker consumes."""
    from django.contrib.auth.models import User

    assert launch().response.status_code == 302
    return User.objects.get(lti_users__sub="learner-1")


def _exercise() -> Any:
    from courses.models import Exercise

    return Exercise.objects.get(slug=EXERCISE)


def _schedule(*, due_at: datetime | None = DUE, late_counts: bool) -> None:
    from authoring.services import exercise_schedule_set

    exercise_schedule_set(
        exercise=_exercise(), release_at=None, due_at=due_at, late_counts=late_counts
    )


def _graded(learner: Any, *, at: datetime, score: float) -> list[int]:
    """A submission made at `at` (late or not by the dates now) graded `score` / 10, as
    the grading service does it: the ScorePost ids its grade recorded."""
    from django.db import transaction
    from django.utils import timezone

    from lti.models import ScorePost
    from submissions.late import due_for
    from submissions.models import Submission
    from submissions.signals import submission_graded

    exercise = _exercise()
    due = due_for(exercise=exercise, learner_id=learner.pk)
    with transaction.atomic():
        submission = Submission.objects.create(
            learner=learner, exercise=exercise, version=exercise.current_version, code="x = 1",
            status="graded", score=score, max_score=10.0, passed=score == 10.0,
            graded_at=timezone.now(), late=due is not None and at > due,
        )  # fmt: skip
        Submission.objects.filter(pk=submission.pk).update(created_at=at)
        submission_graded(submission_id=submission.pk)
    return list(ScorePost.objects.filter(submission=submission).values_list("pk", flat=True))


def _send_all() -> list[str]:
    """What the worker does with every post waiting (oldest first)."""
    from lti.models import ScorePost
    from lti.passback import score_post_attempt

    waiting = ScorePost.objects.filter(status="pending").order_by("id").values_list("pk", flat=True)
    return [score_post_attempt(post_id=pk).value for pk in waiting]


def _posts() -> int:
    from lti.models import ScorePost

    return ScorePost.objects.count()


def test_a_late_submission_whose_late_work_does_not_count_posts_the_score_that_counts(
    learner: Any, platform: FakePlatform
) -> None:
    _schedule(late_counts=False)
    _graded(learner, at=DUE - timedelta(hours=1), score=4.0)
    _graded(learner, at=DUE + timedelta(hours=1), score=10.0)

    _send_all()

    assert [s.body["scoreGiven"] for s in platform.scores] == [4.0, 4.0]


def test_unticking_late_counts_posts_the_grade_again_without_the_late_work(
    learner: Any, platform: FakePlatform, django_capture_on_commit_callbacks: Any
) -> None:
    _schedule(late_counts=True)
    [on_time] = _graded(learner, at=DUE - timedelta(hours=1), score=4.0)
    _graded(learner, at=DUE + timedelta(hours=1), score=10.0)
    _send_all()
    posted_before = len(platform.scores)

    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        _schedule(late_counts=False)

    assert len(platform.scores) == posted_before  # nothing sent in the request itself
    assert callbacks  # the post is sent once the change commits
    assert _send_all() == ["posted"]
    resent = platform.scores[-1].body
    assert (resent["scoreGiven"], resent["scoreMaximum"]) == (4.0, 10.0)
    on_time_at = _submission_of(on_time).created_at.isoformat()
    assert resent["submission"]["submittedAt"] == on_time_at
    assert resent["https://canvas.instructure.com/lti/submission"]["new_submission"] is False


def test_a_learner_whose_only_work_no_longer_counts_gets_zero_in_the_lms(
    learner: Any, platform: FakePlatform
) -> None:
    _schedule(late_counts=True)
    _graded(learner, at=DUE + timedelta(hours=1), score=9.0)
    _send_all()

    _schedule(late_counts=False)
    _send_all()

    assert [s.body["scoreGiven"] for s in platform.scores] == [9.0, 0.0]


def test_an_extension_that_makes_late_work_count_posts_the_grade_again(
    learner: Any, platform: FakePlatform, bob_instructor: Any
) -> None:
    from submissions.late import extension_grant, extension_withdraw

    _schedule(late_counts=False)
    _graded(learner, at=DUE + timedelta(hours=1), score=9.0)
    _send_all()

    extension = extension_grant(
        exercise=_exercise(), learner=learner, due_at=DUE + timedelta(days=1),
        granted_by=bob_instructor,
    )  # fmt: skip
    _send_all()
    extension_withdraw(exercise=_exercise(), extension_id=extension.pk)
    _send_all()

    assert [s.body["scoreGiven"] for s in platform.scores] == [0.0, 9.0, 0.0]


def test_a_change_that_leaves_the_grade_as_it_was_posts_nothing_again(
    learner: Any, platform: FakePlatform
) -> None:
    _schedule(late_counts=False)
    _graded(learner, at=DUE - timedelta(hours=1), score=8.0)
    _graded(learner, at=DUE + timedelta(hours=1), score=5.0)  # late, lower: no matter
    posts = _posts()

    _schedule(late_counts=True)  # the late 5 counts now, the best is still the 8
    _schedule(late_counts=True)  # the same again
    _schedule(due_at=DUE - timedelta(minutes=30), late_counts=True)  # a date that moves none

    assert _posts() == posts


def test_applying_the_same_change_twice_posts_the_new_grade_once(
    learner: Any, platform: FakePlatform
) -> None:
    from lti.models import ScorePost
    from lti.passback import scores_repost

    _schedule(late_counts=True)
    _graded(learner, at=DUE + timedelta(hours=1), score=9.0)
    posts = _posts()

    _schedule(late_counts=False)
    again = scores_repost(exercise_id=_exercise().pk, learner_ids=[learner.pk])

    assert _posts() == posts + 1 and again == []
    assert ScorePost.objects.latest("id").payload["scoreGiven"] == 0.0


def test_a_learner_the_lms_never_got_a_score_of_gets_none_from_a_schedule_change(
    learner: Any, platform: FakePlatform
) -> None:
    from lti.models import ScorePost

    _schedule(late_counts=True)
    _graded(learner, at=DUE + timedelta(hours=1), score=9.0)
    ScorePost.objects.all().delete()  # as if graded before they came from the LMS

    _schedule(late_counts=False)

    assert _posts() == 0


def _submission_of(post_id: int) -> Any:
    from lti.models import ScorePost

    return ScorePost.objects.select_related("submission").get(pk=post_id).submission
