"""The course's webhooks of what happens to submissions: receivers of submissions.signals,
sent inside the transaction that makes the event (the outbox rows commit with it)."""

from __future__ import annotations

from typing import Any

from django.utils import timezone

from integrations import webhooks
from submissions.models import Submission


def submission_graded(sender: Any, *, submission_id: int, **kwargs: Any) -> None:
    """A submission got a (new) grade (submissions.signals.graded): tell the course's
    webhooks. Part of every grading's transaction: the submission is loaded in full only
    when an endpoint wants the event (a course without webhooks costs one narrow query)."""
    module_id = Submission.objects.values_list("exercise__module_id", flat=True).get(
        pk=submission_id
    )
    webhooks.events_record(
        module_id=module_id,
        event_type=webhooks.SUBMISSION_GRADED,
        payload=lambda: webhooks.submission_graded_payload(_graded(submission_id), timezone.now()),
    )


def _graded(submission_id: int) -> Submission:
    """The submission with what its event names (not its version's package)."""
    return (
        Submission.objects.select_related("exercise__module", "version", "learner")
        .only(*GRADED_FIELDS)
        .get(pk=submission_id)
    )


GRADED_FIELDS = (
    "id", "status", "score", "max_score", "passed", "review", "graded_at",
    "exercise__slug", "exercise__module__slug", "version__number", "learner__username",
)  # fmt: skip
