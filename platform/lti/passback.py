"""Assignment and Grade Services: a learner's score goes to the LMS gradebook.

When a submission of a launched learner is graded (or regraded to another score), a
ScorePost row is written in the grade's transaction (the outbox) and a worker posts
`application/vnd.ims.lis.v1.score+json` to the line item's `/scores` (the line item URL's
query string kept, as Moodle's have one), with a token got by a signed client assertion.
A link launched without a line item gets one first when the platform allows it
(lti.lineitems).

The score is the learner's grade as gradlab counts it (submissions.late: late work only
where the exercise's late submissions count). When a due date, the late policy or an
extension changes what counts (submissions.signals.grades_changed), the grades that changed
are posted again the same way (`scores_repost`).

Each platform's rules, from their source:
- Timestamps: Moodle (`gradebookservices/.../scores.php`) keeps the score's time to the
  second and answers 409 to a timestamp not later than it; Canvas answers 400 to one before
  the result's. The timestamp is set when the score is sent, at millisecond precision and at
  least one second after the last one sent for that line item and learner (kept in the
  posts' payloads); such a refusal is sent again at once with a fresh, later timestamp, and
  retried with backoff after that: never dropped.
- Canvas's submission extension (`https://canvas.instructure.com/lti/submission`): every
  post is a new attempt unless `new_submission` is false, and past the allowed attempts a
  new one is refused (422). `new_submission` is true only for the first post of a learner's
  new submission that earned the posted score, false for a regrade or a re-post of a best
  score; `submitted_at` is the time of the submission that earned the score. No comment
  (Canvas adds each as a visible submission comment) unless GRADLAB_LTI_SCORE_COMMENT.
- A 401 gets a new token and is tried again at once; 429 (honouring Retry-After), 5xx and
  network errors are retried with exponential backoff; any other 4xx will never succeed (a
  test student, a deleted line item, the allowed attempts used): it is recorded with the
  platform's message and shown to the module's instructors (`score_failures`).
"""

from __future__ import annotations

import enum
import json
from dataclasses import dataclass
from datetime import datetime, timedelta
from http import HTTPStatus
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import requests  # type: ignore[import-untyped,unused-ignore]
from django.conf import settings
from django.db import transaction
from django.db.models import Exists, OuterRef
from django.utils import timezone
from django.utils.dateparse import parse_datetime
from lti_tool.models import LtiMembership, LtiRegistration

from common.jobs import retry_backoff_seconds
from common.outbox import Answer, Outbox, describe, error_text
from integrations import egress
from lti.compat import ServiceConnector, registration_of
from lti.lineitems import LineItemRefused, lineitem_ensure
from lti.models import ExerciseLink, GradeTarget, ScorePost
from submissions import late
from submissions.models import Submission

SCORE_CONTENT_TYPE = "application/vnd.ims.lis.v1.score+json"
SCORE_SCOPE = "https://purl.imsglobal.org/spec/lti-ags/scope/score"
CANVAS_SUBMISSION = "https://canvas.instructure.com/lti/submission"
SWEEP_GRACE_SECONDS = 60.0
# Prefixes the error of a refusal that a later timestamp fixes (retried, never dropped).
LATER_TIMESTAMP = "timestamp refused, sent again later: "
_CODES = {status.value for status in HTTPStatus}
Status = ScorePost.Status
OUTBOX = Outbox(
    name="LTI score",
    model=ScorePost,
    task_name="gradlab.lti_post_score",
    lock_seconds=lambda: settings.GRADLAB_LTI_HTTP_TIMEOUT_SECONDS * 4,
    sweep_grace_seconds=lambda: SWEEP_GRACE_SECONDS,
)


def scores_url(lineitem_url: str) -> str:
    """`{lineitem}/scores`, with the line item's query string kept."""
    parts = urlsplit(lineitem_url)
    return urlunsplit(parts._replace(path=parts.path.rstrip("/") + "/scores"))


def earning_submission(target: GradeTarget, submission: Submission) -> Submission | None:
    """The submission whose score is posted, among the learner's that count for a grade
    (submissions.late: late work counts only where the exercise's late submissions do):
    under the "last" policy this one if it counts, else their latest that does; under
    "best" their first with the best score. None: nothing of theirs counts (0 is posted)."""
    counted = Submission.objects.filter(
        late.COUNTED,
        learner_id=submission.learner_id,
        exercise_id=submission.exercise_id,
        score__isnull=False,
    )
    if target.link.score_policy == ExerciseLink.Policy.LAST:
        if submission.score is not None and late.counts(submission):
            return submission
        return counted.order_by("-created_at", "-id").first()
    return counted.order_by("-score", "created_at", "id").first()


def score_payload(
    target: GradeTarget, submission: Submission, *, regrade: bool = False
) -> dict[str, Any]:
    """The score to post, less its timestamp (set when it is sent). `regrade`: this
    submission's score was posted before (or the grade is posted again, not earned anew)."""
    earned = earning_submission(target, submission)
    maximum = float(submission.max_score or submission.exercise.points or 0)
    given = float(earned.score or 0) if earned is not None else 0.0
    shown = earned or submission
    submitted_at = shown.created_at.isoformat()
    payload: dict[str, Any] = {
        "userId": target.sub,
        "scoreGiven": given,
        "scoreMaximum": maximum,
        "activityProgress": "Completed",
        "gradingProgress": "FullyGraded",
        # AGS 2.0: when the work was submitted, so that the LMS applies its late policy.
        "submission": {"submittedAt": submitted_at},
        CANVAS_SUBMISSION: {
            "new_submission": shown.pk == submission.pk and earned is not None and not regrade,
            "submitted_at": submitted_at,
        },
    }
    if settings.GRADLAB_LTI_SCORE_COMMENT:
        lms_late = " (late)" if target.link.is_late(shown.created_at) else ""
        uncounted = " (late: does not count)" if earned is None else ""
        payload["comment"] = f"gradlab submission {shown.pk}{lms_late or uncounted}"
    return payload


def submission_graded(sender: Any, *, submission_id: int, **kwargs: Any) -> None:
    """A submission got a (new) grade (submissions.signals.graded): its score posts."""
    scores_record(submission_id=submission_id)


def scores_record(*, submission_id: int) -> list[int]:
    """In the grade's transaction: one ScorePost per line item the learner launched the
    exercise from (or per link whose line item gradlab may create); posted once the grade
    commits. A score held for integrity review has no score yet: nothing is posted until an
    instructor releases (or rejects) it. Part of every grading's transaction: a learner
    not launched from an LMS costs three narrow queries, the submission is loaded in full
    only for a line item."""
    row = Submission.objects.values("status", "score", "learner_id", "exercise_id").get(
        pk=submission_id
    )
    if row["status"] != Submission.Status.GRADED or row["score"] is None:
        return []  # held for integrity review (posted once released), or not graded
    _targets_to_create(learner_id=row["learner_id"], exercise_id=row["exercise_id"])
    targets = list(
        GradeTarget.objects.filter(
            user_id=row["learner_id"], link__exercise_id=row["exercise_id"]
        ).select_related("link")
    )
    if not targets:
        return []
    submission = Submission.objects.select_related("exercise").get(pk=submission_id)
    now = timezone.now()
    created = []
    for target in targets:
        regrade = ScorePost.objects.filter(target=target, submission=submission).exists()
        post = ScorePost.objects.create(
            target=target,
            submission=submission,
            payload=score_payload(target, submission, regrade=regrade),
            next_attempt_at=now,
        )
        created.append(post.pk)
    OUTBOX.enqueue_on_commit(created)
    return created


def _targets_to_create(*, learner_id: int, exercise_id: int) -> None:
    """Grade targets on the links of the exercise that came without a line item, in the
    course contexts where the learner was launched as a learner, when the platform lets
    gradlab create the line item (created by the worker, before the first score)."""
    links = (
        ExerciseLink.objects.filter(
            exercise_id=exercise_id,
            lineitem_url="",
            resource_link__context__can_manage_lineitems=True,
            resource_link__context__memberships__user__auth_user_id=learner_id,
            resource_link__context__memberships__is_instructor=False,
            resource_link__context__memberships__is_administrator=False,
            resource_link__context__memberships__is_content_developer=False,
        )
        .exclude(resource_link__context__lineitems_url="")
        .exclude(targets__user_id=learner_id)
        .values_list("pk", "resource_link__context_id")
    )
    for link_id, context_id in links:
        sub = LtiMembership.objects.filter(
            context_id=context_id, user__auth_user_id=learner_id
        ).values_list("user__sub", flat=True)[:1]
        GradeTarget.objects.get_or_create(
            user_id=learner_id, link_id=link_id, defaults={"sub": sub[0]}
        )


def grades_changed(sender: Any, *, exercise_id: int, learner_ids: list[int], **kwargs: Any) -> None:
    """What counts for these learners' grades changed (submissions.signals.grades_changed:
    a due date, the late policy, an extension): their grades post again."""
    scores_repost(exercise_id=exercise_id, learner_ids=learner_ids)


def scores_repost(*, exercise_id: int, learner_ids: list[int]) -> list[int]:
    """In the transaction that changed what counts: one ScorePost per line item of each
    learner whose grade there is no longer the one last recorded for it (posted once the
    change commits, by the worker, as any score). A learner the LMS never got a score of
    from gradlab gets none here. Idempotent: a second call records nothing."""
    targets = GradeTarget.objects.filter(
        user_id__in=learner_ids, link__exercise_id=exercise_id
    ).select_related("link")
    created = []
    for target in targets:
        last = ScorePost.objects.filter(target=target).order_by("-created_at", "-id").first()
        latest = _latest_graded(learner_id=target.user_id, exercise_id=exercise_id)
        if last is None or latest is None:
            continue
        payload = score_payload(target, latest, regrade=True)
        if _grade_of(payload) == _grade_of(last.payload):
            continue
        post = ScorePost.objects.create(
            target=target, submission=latest, payload=payload, next_attempt_at=timezone.now()
        )
        created.append(post.pk)
    OUTBOX.enqueue_on_commit(created)
    return created


def _latest_graded(*, learner_id: int, exercise_id: int) -> Submission | None:
    return (
        Submission.objects.filter(
            learner_id=learner_id,
            exercise_id=exercise_id,
            status=Submission.Status.GRADED,
            preview=False,
            score__isnull=False,
        )
        .select_related("exercise")
        .order_by("-created_at", "-id")
        .first()
    )


def _grade_of(payload: dict[str, Any]) -> tuple[Any, ...]:
    """What the LMS's gradebook shows of a score: the score, its maximum, its time."""
    submitted = payload.get("submission")
    when = submitted.get("submittedAt") if isinstance(submitted, dict) else None
    return payload.get("scoreGiven"), payload.get("scoreMaximum"), when


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
    answer = _deliver(post)
    code = answer.status_code
    if answer.succeeded:
        OUTBOX.finish(post_id, attempt, Status.POSTED, answer)
        return Outcome.POSTED
    permanent = (
        code is not None
        and 400 <= code < 500
        and code not in (401, 408, 429)
        and not answer.error.startswith(LATER_TIMESTAMP)
    )
    if permanent or attempt >= settings.GRADLAB_LTI_MAX_ATTEMPTS:
        OUTBOX.finish(post_id, attempt, Status.FAILED, answer)
        return Outcome.FAILED
    countdown = max(backoff_seconds(attempt), answer.retry_after or 0)
    if OUTBOX.finish(post_id, attempt, Status.PENDING, answer, retry_in=countdown):
        OUTBOX.enqueue(post_id, countdown=countdown)
    return Outcome.RETRY


def _deliver(post: ScorePost) -> Answer:
    """One attempt: the line item (created when the link has none), then the score with a
    fresh timestamp; a new token on a 401, a later timestamp on a timestamp refusal."""
    link = post.target.link
    try:
        lineitem_url = link.lineitem_url or lineitem_ensure(link_id=link.pk)
    except LineItemRefused as refused:
        return Answer(refused.status_code, error_text(str(refused)))
    connector = ServiceConnector(registration_of(_registration_of(post)))
    url = scores_url(lineitem_url)
    answer = _send(connector, url, _stamped(post))
    if answer.status_code == 401:  # the token expired or was revoked: a new one, once
        connector.forget_access_token([SCORE_SCOPE])
        answer = _send(connector, url, post.payload)
    if answer.error.startswith(LATER_TIMESTAMP):  # another score came first: a later one
        answer = _send(connector, url, _stamped(post))
    return answer


def score_timestamp(last: datetime | None, now: datetime) -> datetime:
    """max(now, last + 1 s), to the millisecond: later than `last`, and in a later second
    (Moodle compares seconds)."""
    stamp = now if last is None else max(now, last + timedelta(seconds=1))
    return stamp.replace(microsecond=stamp.microsecond // 1000 * 1000)


def _stamped(post: ScorePost) -> dict[str, Any]:
    """The post's payload with the next timestamp of its line item and learner, stored
    before it is sent (the learner's target row is locked meanwhile: two workers never
    take the same one)."""
    with transaction.atomic():
        GradeTarget.objects.select_for_update().filter(pk=post.target_id).first()
        sent = ScorePost.objects.filter(
            target_id=post.target_id, payload__has_key="timestamp"
        ).values_list("payload", flat=True)
        stamps = [parse_datetime(str(payload["timestamp"])) for payload in sent]
        last = max((s for s in stamps if s is not None), default=None)
        stamp = score_timestamp(last, timezone.now())
        payload = {**post.payload, "timestamp": stamp.isoformat(timespec="milliseconds")}
        ScorePost.objects.filter(pk=post.pk).update(payload=payload)
    post.payload = payload
    return payload


def backoff_seconds(attempt: int) -> float:
    return retry_backoff_seconds(
        attempt,
        base=settings.GRADLAB_LTI_BACKOFF_SECONDS,
        cap=settings.GRADLAB_LTI_BACKOFF_MAX_SECONDS,
    )


def _registration_of(post: ScorePost) -> LtiRegistration:
    context = post.target.link.resource_link.context
    return LtiRegistration.objects.get(deployments__contexts=context)


def _send(connector: ServiceConnector, url: str, payload: dict[str, Any]) -> Answer:
    try:
        token = connector.get_access_token([SCORE_SCOPE])
        # The egress guard: https, the registration's origins, public addresses, no redirect.
        response = connector.session.post(
            url,
            data=json.dumps(payload),
            headers={"Authorization": f"Bearer {token}", "Content-Type": SCORE_CONTENT_TYPE},
        )
    except requests.RequestException as error:  # no answer, or refused by the guard
        return Answer(None, egress.failure_text(error))
    except Exception as error:  # the token endpoint's refusal too
        status = getattr(getattr(error, "response", None), "status_code", None)
        if isinstance(status, int) and 400 <= status < 500:
            return Answer(None, error_text(f"token refused ({status}): {error}"))
        return Answer(None, describe(error))
    if egress.answered(response):
        return Answer(response.status_code, "", None)
    said = platform_message(response)
    if _timestamp_refused(response.status_code, said):
        said = f"{LATER_TIMESTAMP}{said}"
    return Answer(response.status_code, error_text(said), _retry_after(response))


def platform_message(response: requests.Response) -> str:
    """What the platform said: Canvas's `errors.message`, an OAuth-style `error_description`
    or `error`, Moodle's reason phrase (its body is `[]`), else the body."""
    try:
        body = response.json()
    except ValueError:
        body = None
    if isinstance(body, dict):
        errors = body.get("errors")
        if isinstance(errors, dict) and isinstance(errors.get("message"), str):
            return str(errors["message"])
        for key in ("error_description", "reason", "error", "message"):
            if isinstance(body.get(key), str) and body[key]:
                return str(body[key])
    standard = HTTPStatus(response.status_code).phrase if response.status_code in _CODES else ""
    if response.reason and response.reason != standard:
        return str(response.reason)
    return response.text.strip() or str(response.reason or response.status_code)


def _timestamp_refused(status: int, said: str) -> bool:
    """Moodle's 409 ("Refusing score with an earlier timestamp") and Canvas's 400
    ("... before last updated timestamp ..."): a later timestamp succeeds."""
    return status == 409 or (status == 400 and "before last updated timestamp" in said)


def _retry_after(response: requests.Response) -> float | None:
    value = response.headers.get("Retry-After", "")
    return float(value) if value.isdigit() else None


def scores_sweep(*, now: datetime | None = None) -> list[int]:
    """Re-sends due posts whose message was lost and frees those of a dead worker."""
    return OUTBOX.sweep(now=now)


@dataclass(frozen=True)
class ScoreFailure:
    """A score the LMS refused for good, as its instructors see it."""

    learner: str
    exercise: str
    status_code: int | None
    message: str
    at: datetime


def score_failures(*, module_id: int, limit: int = 50) -> list[ScoreFailure]:
    """The module's scores that never reached the LMS gradebook (and that no later score of
    the same learner and line item replaced), newest first, each with what the platform
    said."""
    replaced = ScorePost.objects.filter(
        target_id=OuterRef("target_id"), status=Status.POSTED, created_at__gt=OuterRef("created_at")
    )
    failed = (
        ScorePost.objects.filter(status=Status.FAILED, submission__exercise__module_id=module_id)
        .exclude(Exists(replaced))
        .select_related("submission__learner", "submission__exercise")
        .order_by("-created_at", "-id")[:limit]
    )
    return [
        ScoreFailure(
            learner=post.submission.learner.get_username(),
            exercise=post.submission.exercise.title,
            status_code=post.last_status_code,
            message=post.last_error,
            at=post.created_at,
        )
        for post in failed
    ]
