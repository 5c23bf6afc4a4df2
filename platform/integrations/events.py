"""What the rest of the platform calls when something happens that integrations forward.
Called inside the transaction that makes the event: the outbox rows commit with it."""

from __future__ import annotations

from django.utils import timezone

from integrations import webhooks
from submissions.models import Submission


def submission_graded(*, submission_id: int) -> None:
    """A submission got a (new) grade: tell the course's webhooks and, for a learner
    launched from an LMS, post the score to its gradebook (lti.passback)."""
    from lti.passback import scores_record

    submission = Submission.objects.select_related("exercise__module", "version", "learner").get(
        pk=submission_id
    )
    webhooks.events_record(
        module_id=submission.exercise.module_id,
        event_type=webhooks.SUBMISSION_GRADED,
        payload=webhooks.submission_graded_payload(submission, timezone.now()),
    )
    scores_record(submission_id=submission_id)
