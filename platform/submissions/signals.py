"""What submissions tell the apps that build on them, without knowing those apps.

`graded` is sent (keyword `submission_id`) inside the transaction that gives a
submission a (new) grade, so that whatever a receiver writes commits with the grade:
integrations records the course's webhook events, lti the LMS score posts.

`grades_changed` is sent (keywords `exercise_id`, `learner_ids`) inside the transaction
that changed what counts for those learners' grades of an exercise without grading
anything: a due date moved, "late submissions count" changed, an extension was granted or
withdrawn (submissions.late). lti posts the learners' grades to the LMS again where they
changed. Receivers connect in their AppConfig.ready, in INSTALLED_APPS order."""

from __future__ import annotations

from collections.abc import Iterable

from django.dispatch import Signal

from submissions.models import Submission

graded = Signal()
grades_changed = Signal()


def submission_graded(*, submission_id: int) -> None:
    """A submission got a (new) grade: every receiver of `graded`, in order. An error of
    a receiver is raised (the grade's transaction rolls back with it)."""
    graded.send(sender=Submission, submission_id=submission_id)


def submission_grades_changed(*, exercise_id: int, learner_ids: Iterable[int]) -> None:
    """What counts for these learners' grades of the exercise changed (late marks or the
    late policy): every receiver of `grades_changed`; an error rolls the change back."""
    ids = sorted(set(learner_ids))
    if ids:
        grades_changed.send(sender=Submission, exercise_id=exercise_id, learner_ids=ids)
