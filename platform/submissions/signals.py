"""What submissions tell the apps that build on them, without knowing those apps.

`graded` is sent (keyword `submission_id`) inside the transaction that gives a
submission a (new) grade, so that whatever a receiver writes commits with the grade:
integrations records the course's webhook events, lti the LMS score posts. Receivers
connect in their AppConfig.ready, in INSTALLED_APPS order."""

from __future__ import annotations

from django.dispatch import Signal

from submissions.models import Submission

graded = Signal()


def submission_graded(*, submission_id: int) -> None:
    """A submission got a (new) grade: every receiver of `graded`, in order. An error of
    a receiver is raised (the grade's transaction rolls back with it)."""
    graded.send(sender=Submission, submission_id=submission_id)
