"""Assignment and Grade Services: a learner's score goes to the LMS gradebook.

When a submission of a launched learner is graded (or regraded to another score), a
ScorePost row is written in the grade's transaction (the outbox) and a worker posts
`application/vnd.ims.lis.v1.score+json` to the line item's `/scores` (the line item URL's
query string kept, as Moodle's have one), with a token got by a signed client assertion.
A 401 gets a new token and is tried again at once; 429 (honouring Retry-After), 5xx and
network errors are retried with exponential backoff; any other 4xx will never succeed (a
test student, a deleted line item): it is recorded and not retried.
"""

from __future__ import annotations

import enum
import json
from datetime import datetime
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import requests  # type: ignore[import-untyped,unused-ignore]
from django.conf import settings
from django.db.models import Max
from django.utils import timezone
from lti_tool.models import LtiRegistration

from common.jobs import retry_backoff_seconds
from common.outbox import Answer, Outbox, describe, error_text
from lti.compat import ServiceConnector, registration_of
from lti.models import ExerciseLink, GradeTarget, ScorePost
from submissions.models import Submission

SCORE_CONTENT_TYPE = "application/vnd.ims.lis.v1.score+json"
SCORE_SCOPE = "https://purl.imsglobal.org/spec/lti-ags/scope/score"
SWEEP_GRACE_SECONDS = 60.0
Status = ScorePost.Status
OUTBOX = Outbox(
    name="LTI score",
    model=ScorePost,
    task_path="lti.tasks.post_score",
    lock_seconds=lambda: settings.GRADLAB_LTI_HTTP_TIMEOUT_SECONDS * 4,
    sweep_grace_seconds=lambda: SWEEP_GRACE_SECONDS,
)


def scores_url(lineitem_url: str) -> str:
    """`{lineitem}/scores`, with the line item's query string kept."""
    parts = urlsplit(lineitem_url)
    return urlunsplit(parts._replace(path=parts.path.rstrip("/") + "/scores"))


def score_given(target: GradeTarget, submission: Submission) -> tuple[float, float]:
    """(scoreGiven, scoreMaximum) by the link's policy: the best graded score of the
    learner for the exercise, or this submission's."""
    maximum = float(submission.max_score or submission.exercise.points or 0)
    if target.link.score_policy == ExerciseLink.Policy.LAST:
        return float(submission.score or 0), maximum
    best = Submission.objects.filter(
        learner_id=submission.learner_id,
        exercise_id=submission.exercise_id,
        status=Submission.Status.GRADED,
    ).aggregate(best=Max("score"))["best"]
    return float(best if best is not None else submission.score or 0), maximum


def score_payload(target: GradeTarget, submission: Submission) -> dict[str, Any]:
    given, maximum = score_given(target, submission)
    late = target.link.is_late(submission.created_at)
    comment = f"gradlab submission {submission.pk}" + (" (late)" if late else "")
    return {
        "userId": target.sub,
        "scoreGiven": given,
        "scoreMaximum": maximum,
        "activityProgress": "Completed",
        "gradingProgress": "FullyGraded",
        "timestamp": timezone.now().isoformat(),
        "comment": comment,
        # AGS 2.0: when the work was submitted, so that the LMS applies its late policy.
        "submission": {"submittedAt": submission.created_at.isoformat()},
    }


def scores_record(*, submission_id: int) -> list[int]:
    """In the grade's transaction: one ScorePost per line item the learner launched the
    exercise from; posted once the grade commits. A score held for integrity review has no
    score yet: nothing is posted until an instructor releases (or rejects) it. Part of
    every grading's transaction: a learner not launched from an LMS costs two narrow
    queries, the submission is loaded in full only for a line item."""
    row = Submission.objects.values("status", "score", "learner_id", "exercise_id").get(
        pk=submission_id
    )
    if row["status"] != Submission.Status.GRADED or row["score"] is None:
        return []  # held for integrity review (posted once released), or not graded
    targets = list(
        GradeTarget.objects.filter(
            user_id=row["learner_id"], link__exercise_id=row["exercise_id"]
        ).select_related("link")
    )
    if not targets:
        return []
    submission = Submission.objects.select_related("exercise").get(pk=submission_id)
    now = timezone.now()
    created = [
        ScorePost.objects.create(
            target=target,
            submission=submission,
            payload=score_payload(target, submission),
            next_attempt_at=now,
        ).pk
        for target in targets
    ]
    OUTBOX.enqueue_on_commit(created)
    return created


class Outcome(str, enum.Enum):
    POSTED = "posted"
    RETRY = "retry"
    FAILED = "failed"
    SKIPPED = "skipped"


def score_post_attempt(*, post_id: int) -> Outcome:
    attempt = OUTBOX.claim(post_id)
    if attempt is None:
        return Outcome.SKIPPED
    post = ScorePost.objects.select_related("target__link__resource_link__context").get(pk=post_id)
    connector = ServiceConnector(registration_of(_registration_of(post)))
    answer = _send(connector, post)
    if answer.status_code == 401:  # the token expired or was revoked: a new one, once
        connector.forget_access_token([SCORE_SCOPE])
        answer = _send(connector, post)
    code = answer.status_code
    if answer.succeeded:
        OUTBOX.finish(post_id, attempt, Status.POSTED, answer)
        return Outcome.POSTED
    permanent = code is not None and 400 <= code < 500 and code not in (401, 408, 429)
    if permanent or attempt >= settings.GRADLAB_LTI_MAX_ATTEMPTS:
        OUTBOX.finish(post_id, attempt, Status.FAILED, answer)
        return Outcome.FAILED
    countdown = max(backoff_seconds(attempt), answer.retry_after or 0)
    if OUTBOX.finish(post_id, attempt, Status.PENDING, answer, retry_in=countdown):
        OUTBOX.enqueue(post_id, countdown=countdown)
    return Outcome.RETRY


def backoff_seconds(attempt: int) -> float:
    return retry_backoff_seconds(
        attempt,
        base=settings.GRADLAB_LTI_BACKOFF_SECONDS,
        cap=settings.GRADLAB_LTI_BACKOFF_MAX_SECONDS,
    )


def _registration_of(post: ScorePost) -> LtiRegistration:
    context = post.target.link.resource_link.context
    return LtiRegistration.objects.get(deployments__contexts=context)


def _send(connector: ServiceConnector, post: ScorePost) -> Answer:
    url = scores_url(post.target.link.lineitem_url)
    try:
        token = connector.get_access_token([SCORE_SCOPE])
        response = requests.post(
            url,
            data=json.dumps(post.payload),
            headers={"Authorization": f"Bearer {token}", "Content-Type": SCORE_CONTENT_TYPE},
            timeout=settings.GRADLAB_LTI_HTTP_TIMEOUT_SECONDS,
            allow_redirects=False,
        )
    except Exception as error:  # the token endpoint's refusal too
        status = getattr(getattr(error, "response", None), "status_code", None)
        if isinstance(status, int) and 400 <= status < 500:
            return Answer(None, error_text(f"token refused ({status}): {error}"))
        return Answer(None, describe(error))
    said = "" if response.ok else error_text(response.text)
    return Answer(response.status_code, said, _retry_after(response))


def _retry_after(response: requests.Response) -> float | None:
    value = response.headers.get("Retry-After", "")
    return float(value) if value.isdigit() else None


def scores_sweep(*, now: datetime | None = None) -> list[int]:
    """Re-sends due posts whose message was lost and frees those of a dead worker."""
    return OUTBOX.sweep(now=now)
