"""Due dates from the LMS: the line item's endDateTime becomes the exercise's due date in
that course context, and a score of a late submission says so (with its submission time,
for the LMS's own late policy)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

from fake_platform import FakePlatform


def _link() -> Any:
    from lti.models import ExerciseLink

    return ExerciseLink.objects.get()


def test_a_launch_reads_the_line_items_end_date_as_the_due_date(
    launch: Callable[..., Any], platform: FakePlatform, django_capture_on_commit_callbacks: Any
) -> None:
    from lti.lineitems import lineitem_sync

    platform.lineitem_end = "2026-12-24T23:59:00Z"
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        launch()

    due_at = lineitem_sync(link_id=_link().pk)

    assert callbacks  # the launch queued this read
    assert due_at is not None and due_at.isoformat() == "2026-12-24T23:59:00+00:00"
    assert _link().due_at == due_at
    assert _link().lineitem_checked_at is not None


def test_a_line_item_without_an_end_date_means_no_due_date(
    launch: Callable[..., Any], platform: FakePlatform
) -> None:
    from lti.lineitems import lineitem_stale, lineitem_sync

    launch()

    assert lineitem_sync(link_id=_link().pk) is None
    assert _link().due_at is None
    assert not lineitem_stale(_link())  # read now: not again before the refresh interval


def test_a_score_of_a_late_submission_is_marked_late_with_its_submission_time(
    launch: Callable[..., Any], platform: FakePlatform, settings: Any
) -> None:
    from django.contrib.auth.models import User
    from django.utils import timezone

    from courses.models import Exercise
    from lti.models import ExerciseLink, GradeTarget
    from lti.passback import score_payload
    from submissions.models import Submission

    settings.GRADLAB_LTI_SCORE_COMMENT = True  # comments are off unless turned on
    launch()
    learner = User.objects.get(lti_users__sub="learner-1")
    exercise = Exercise.objects.get(slug="first-gradient")
    submission = Submission.objects.create(
        learner=learner, exercise=exercise, version=exercise.current_version, code="x",
        status="graded", score=5.0, max_score=10.0, graded_at=timezone.now(),
    )  # fmt: skip
    target = GradeTarget.objects.select_related("link").get()

    on_time = score_payload(target, submission)
    ExerciseLink.objects.update(due_at=submission.created_at - timedelta(minutes=1))
    target.refresh_from_db()
    target.link.refresh_from_db()
    late = score_payload(target, submission)

    assert "late" not in on_time["comment"]
    assert late["comment"].endswith("(late)")
    assert late["submission"]["submittedAt"] == submission.created_at.isoformat()
