"""Webhooks of a course, sent as the Standard Webhooks format says
(https://www.standardwebhooks.com, spec/standard-webhooks.md):

- the body is JSON `{"type": ..., "timestamp": ..., "data": {...}}`;
- headers `webhook-id` (the message id, the same on every retry of a message),
  `webhook-timestamp` (integer seconds of this attempt) and `webhook-signature`
  (`v1,<base64 HMAC-SHA256 of "<id>.<timestamp>.<body>">`);
- the secret is `whsec_<base64 of 32 random bytes>`; the HMAC key is those bytes.

Delivery is an outbox: an event's rows are written in the transaction that makes the event
(the grade), then a worker sends each one, retries with exponential backoff, and gives up
after GRADLAB_WEBHOOK_MAX_ATTEMPTS. A 2xx is success; `410 Gone` disables the endpoint; a
redirect is not followed (it counts as a failure). The sweep re-sends what a lost message or a
dead worker left behind.
"""

from __future__ import annotations

import base64
import enum
import hashlib
import hmac
import json
import secrets
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import urlsplit

import requests  # type: ignore[import-untyped,unused-ignore]
from django.conf import settings
from django.contrib.auth.models import User
from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone

from common.errors import InvalidInput, NotFound
from common.jobs import retry_backoff_seconds
from common.outbox import Answer, Outbox, error_text
from courses.models import Module
from integrations import egress
from integrations.models import WebhookDelivery, WebhookEndpoint
from integrations.tokens import teaches

SUBMISSION_GRADED = "submission.graded"
EVENTS = {SUBMISSION_GRADED: "a submission was graded (or regraded to another score)"}
SECRET_PREFIX = "whsec_"
SIGNATURE_VERSION = "v1"
USER_AGENT = "gradlab-webhooks/1"
Status = WebhookDelivery.Status
OUTBOX = Outbox(
    name="webhook delivery",
    model=WebhookDelivery,
    task_name="gradlab.deliver_webhook",
    lock_seconds=lambda: settings.GRADLAB_WEBHOOK_TIMEOUT_SECONDS * 3,
    sweep_grace_seconds=lambda: settings.GRADLAB_WEBHOOK_SWEEP_GRACE_SECONDS,
)


# -- signing -----------------------------------------------------------------------------


def secret_generate() -> str:
    return SECRET_PREFIX + base64.b64encode(secrets.token_bytes(32)).decode("ascii")


def secret_key(secret: str) -> bytes:
    return base64.b64decode(secret.removeprefix(SECRET_PREFIX))


def signature(*, secret: str, message_id: str, timestamp: int, body: bytes) -> str:
    signed = f"{message_id}.{timestamp}.".encode() + body
    digest = hmac.new(secret_key(secret), signed, hashlib.sha256).digest()
    return f"{SIGNATURE_VERSION},{base64.b64encode(digest).decode('ascii')}"


def body_of(payload: dict[str, Any]) -> bytes:
    return json.dumps(payload, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def signed_headers(
    *, secret: str, message_id: str, body: bytes, now: datetime, previous: str = ""
) -> dict[str, str]:
    """The Standard Webhooks headers; with `previous` (a secret being rotated out), two
    space-separated signatures, either of which a receiver accepts."""
    timestamp = int(now.timestamp())
    signatures = [
        signature(secret=key, message_id=message_id, timestamp=timestamp, body=body)
        for key in (secret, previous)
        if key
    ]
    return {
        "content-type": "application/json",
        "user-agent": USER_AGENT,
        "webhook-id": message_id,
        "webhook-timestamp": str(timestamp),
        "webhook-signature": " ".join(signatures),
    }


def previous_secret_of(endpoint: WebhookEndpoint, now: datetime) -> str:
    """The secret a rotation replaced, while its grace period lasts; "" otherwise."""
    expires = endpoint.previous_secret_expires_at
    return endpoint.previous_secret if expires is not None and now < expires else ""


# -- endpoints ---------------------------------------------------------------------------


def url_validate(url: object) -> str:
    if not isinstance(url, str) or len(url) > 2000:
        raise InvalidInput({"url": "Give the endpoint's URL (at most 2000 characters)."})
    parts = urlsplit(url)
    allowed = ("https", "http") if settings.GRADLAB_WEBHOOK_ALLOW_HTTP else ("https",)
    if parts.scheme not in allowed or not parts.hostname:
        raise InvalidInput({"url": f"The URL must be absolute with scheme {' or '.join(allowed)}."})
    if parts.username or parts.password:
        raise InvalidInput({"url": "Put no credentials in the URL; verify our signature instead."})
    return url


def events_validate(events: object) -> list[str]:
    if events is None:
        return sorted(EVENTS)
    if not isinstance(events, list) or not events or any(e not in EVENTS for e in events):
        raise InvalidInput({"events": f"Give a non-empty list among {sorted(EVENTS)}."})
    return sorted(set(events))


def endpoints_of(*, user: User, module: Module) -> QuerySet[WebhookEndpoint]:
    if not teaches(user, module.pk):
        raise NotFound(f"You do not teach {module.slug!r}.")
    return WebhookEndpoint.objects.filter(module=module)


def endpoint_get(*, user: User, module: Module, endpoint_id: int) -> WebhookEndpoint:
    endpoint = endpoints_of(user=user, module=module).filter(pk=endpoint_id).first()
    if endpoint is None:
        raise NotFound(f"No webhook endpoint {endpoint_id} in {module.slug!r}.")
    return endpoint


def endpoint_create(
    *, user: User, module: Module, url: object, events: object = None
) -> WebhookEndpoint:
    endpoints_of(user=user, module=module)  # access check
    return WebhookEndpoint.objects.create(
        module=module,
        created_by=user,
        url=url_validate(url),
        events=events_validate(events),
        secret=secret_generate(),
    )


def endpoint_set_active(*, endpoint: WebhookEndpoint, active: bool) -> WebhookEndpoint:
    endpoint.active = active
    endpoint.disabled_reason = "" if active else "Disabled by an instructor."
    endpoint.save(update_fields=["active", "disabled_reason"])
    return endpoint


def endpoint_rotate_secret(*, endpoint: WebhookEndpoint) -> WebhookEndpoint:
    """A new secret, signing from now on; the one it replaces signs beside it for
    GRADLAB_WEBHOOK_SECRET_GRACE_SECONDS, while the receiver switches. Rotating again in
    the grace period ends the older secret's grace (only the last one is kept)."""
    now = timezone.now()
    endpoint.previous_secret = endpoint.secret
    endpoint.previous_secret_expires_at = now + timedelta(
        seconds=settings.GRADLAB_WEBHOOK_SECRET_GRACE_SECONDS
    )
    endpoint.secret = secret_generate()
    endpoint.save(update_fields=["secret", "previous_secret", "previous_secret_expires_at"])
    return endpoint


def endpoint_delete(*, endpoint: WebhookEndpoint) -> None:
    endpoint.delete()


# -- the outbox ----------------------------------------------------------------------------


def submission_graded_payload(submission: Any, now: datetime) -> dict[str, Any]:
    return {
        "type": SUBMISSION_GRADED,
        "timestamp": now.isoformat().replace("+00:00", "Z"),
        "data": {
            "submission": submission.pk,
            "course": submission.exercise.module.slug,
            "exercise": submission.exercise.slug,
            "version": submission.version.number,
            "learner": submission.learner.get_username(),
            "status": submission.status,
            "score": submission.score,
            "max_score": submission.max_score,
            "passed": submission.passed,
            "held_for_review": submission.review == submission.Review.HELD,
            "graded_at": submission.graded_at.isoformat() if submission.graded_at else None,
            "path": f"/api/v1/submissions/{submission.pk}/",
        },
    }


def events_record(
    *, module_id: int, event_type: str, payload: Callable[[], dict[str, Any]]
) -> list[int]:
    """Writes one outbox row per active endpoint of the course that wants `event_type`, in
    the caller's transaction, and sends them once it commits. Returns their ids. `payload`
    is called once, and only when an endpoint wants the event."""
    endpoints = WebhookEndpoint.objects.filter(module_id=module_id, active=True)
    interested = [e for e in endpoints.select_related("created_by") if event_type in e.events]
    wanted = [e for e in interested if _creator_may_receive(e)]
    if not wanted:
        return []
    body = payload()
    now = timezone.now()
    message_id = f"msg_{secrets.token_urlsafe(18)}"
    created = WebhookDelivery.objects.bulk_create(
        WebhookDelivery(
            endpoint=endpoint, message_id=message_id, event_type=event_type,
            payload=body, next_attempt_at=now,
        )
        for endpoint in wanted
    )  # fmt: skip
    ids = [delivery.pk for delivery in created]
    OUTBOX.enqueue_on_commit(ids)
    return ids


# -- one attempt -----------------------------------------------------------------------------


class Outcome(str, enum.Enum):
    DELIVERED = "delivered"
    RETRY = "retry"
    FAILED = "failed"
    SKIPPED = "skipped"  # not due, already delivered, or claimed by another worker


def delivery_attempt(*, delivery_id: int) -> Outcome:
    """Claims a due delivery (pending -> sending), posts it once, records the answer."""
    attempt = OUTBOX.claim(delivery_id)
    if attempt is None:
        return Outcome.SKIPPED
    delivery = WebhookDelivery.objects.select_related("endpoint").get(pk=delivery_id)
    endpoint = delivery.endpoint
    if not endpoint.active:
        OUTBOX.finish(
            delivery_id, attempt, Status.FAILED, Answer(None, "The endpoint is disabled.")
        )
        return Outcome.FAILED
    if not _creator_may_receive(endpoint):
        OUTBOX.finish(delivery_id, attempt, Status.FAILED, Answer(None, CREATOR_GONE))
        return Outcome.FAILED
    answer = _post(endpoint, delivery)
    if answer.succeeded:
        OUTBOX.finish(delivery_id, attempt, Status.DELIVERED, answer)
        return Outcome.DELIVERED
    if answer.status_code == 410:
        _disable(endpoint, "The receiver answered 410 Gone.")
        OUTBOX.finish(delivery_id, attempt, Status.FAILED, answer)
        return Outcome.FAILED
    if attempt >= settings.GRADLAB_WEBHOOK_MAX_ATTEMPTS:
        OUTBOX.finish(delivery_id, attempt, Status.FAILED, answer)
        return Outcome.FAILED
    countdown = backoff_seconds(attempt)
    if OUTBOX.finish(delivery_id, attempt, Status.PENDING, answer, retry_in=countdown):
        OUTBOX.enqueue(delivery_id, countdown=countdown)
    return Outcome.RETRY


def backoff_seconds(attempt: int) -> float:
    """After attempt n (1-based): base * 2**(n-1), capped; jitter spreads a burst."""
    delay = retry_backoff_seconds(
        attempt,
        base=settings.GRADLAB_WEBHOOK_BACKOFF_SECONDS,
        cap=settings.GRADLAB_WEBHOOK_BACKOFF_MAX_SECONDS,
    )
    return delay * (1 + secrets.randbelow(250) / 1000)


def _post(endpoint: WebhookEndpoint, delivery: WebhookDelivery) -> Answer:
    body = body_of(delivery.payload)
    now = timezone.now()
    headers = signed_headers(
        secret=endpoint.secret,
        message_id=delivery.message_id,
        body=body,
        now=now,
        previous=previous_secret_of(endpoint, now),
    )
    rules = egress.policy(
        allow_http=settings.GRADLAB_WEBHOOK_ALLOW_HTTP,
        allow_private=settings.GRADLAB_WEBHOOK_ALLOW_PRIVATE_HOSTS,
        timeout=settings.GRADLAB_WEBHOOK_TIMEOUT_SECONDS,
    )
    try:
        with egress.session(rules) as client:
            response = client.post(endpoint.url, data=body, headers=headers)
    except requests.RequestException as failure:
        return Answer(None, egress.failure_text(failure))
    ok = egress.answered(response)
    return Answer(response.status_code, "" if ok else error_text(response.text))


# An endpoint carries its creator's rights, as a course token does: once its creator no
# longer teaches the course (removed, made a learner or reviewer, deactivated), it is
# disabled and receives nothing more, queued deliveries included.
CREATOR_GONE = "Disabled: its creator no longer teaches this course."


def _creator_may_receive(endpoint: WebhookEndpoint) -> bool:
    """Whether the endpoint's creator still teaches its module; disables it if not."""
    creator = endpoint.created_by
    if creator.is_active and teaches(creator, endpoint.module_id):
        return True
    _disable(endpoint, CREATOR_GONE)
    return False


def _disable(endpoint: WebhookEndpoint, reason: str) -> None:
    WebhookEndpoint.objects.filter(pk=endpoint.pk).update(active=False, disabled_reason=reason)
    # Nothing more goes to an endpoint that is gone.
    WebhookDelivery.objects.filter(endpoint=endpoint, status=Status.PENDING).update(
        status=Status.FAILED, last_error=reason, next_attempt_at=None
    )


# -- redelivery and the sweep --------------------------------------------------------------


def delivery_redeliver(*, delivery: WebhookDelivery) -> WebhookDelivery:
    """A new attempt series of the same message (same webhook-id, so that a receiver that
    already has it can tell), to the same endpoint, which must be active."""
    if not delivery.endpoint.active:
        raise InvalidInput({"endpoint": "The endpoint is disabled: enable it first."})
    with transaction.atomic():
        again = WebhookDelivery.objects.create(
            endpoint=delivery.endpoint,
            message_id=delivery.message_id,
            event_type=delivery.event_type,
            payload=delivery.payload,
            next_attempt_at=timezone.now(),
        )
        OUTBOX.enqueue_on_commit([again.pk])
    return again


def deliveries_sweep(*, now: datetime | None = None) -> list[int]:
    """Re-sends due deliveries whose message was lost, and frees those whose worker died
    while sending (their lock expired). Returns the ids sent."""
    return OUTBOX.sweep(now=now)


def deliveries_of(*, endpoint: WebhookEndpoint) -> QuerySet[WebhookDelivery]:
    return WebhookDelivery.objects.filter(endpoint=endpoint).order_by("-created_at", "-id")
