"""The Idempotency-Key header, as the IETF draft "The Idempotency-Key HTTP Header Field"
(draft-ietf-httpapi-idempotency-key-header) describes it, for unsafe API requests:

- a first request with a key is processed and its response stored;
- a retry with the same key and the same request replays the stored response
  (`Idempotent-Replayed: true`), without processing it again;
- the same key with another request body is a 422 (the key was reused);
- a retry while the first is still being processed is a 409;
- keys belong to one caller (a user, or one course token) and one operation, and expire
  GRADLAB_IDEMPOTENCY_KEY_TTL_SECONDS after first use; an expired key is a new key.

Only a successful response (2xx) is stored. An error (bad input, rate limit, our fault)
releases the key, so that the retry is processed again: a retry is never charged for a
failure it did not cause.
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, TypeVar

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone
from rest_framework.exceptions import APIException
from rest_framework.request import Request
from rest_framework.response import Response

from common.errors import Conflict, InvalidInput
from integrations.models import IdempotencyRecord
from integrations.tokens import CourseGrant

HEADER = "Idempotency-Key"
REPLAYED_HEADER = "Idempotent-Replayed"
KEY_MAX_LENGTH = 255
STORED_HEADERS = ("Location",)
State = IdempotencyRecord.State


class KeyReused(APIException):
    """The key was already used for a different request (HTTP 422)."""

    status_code = 422
    default_code = "idempotency_key_reused"


class StillProcessing(Conflict):
    """The first request with this key has not finished yet (HTTP 409)."""


@dataclass(frozen=True)
class Replay:
    status: int
    body: Any
    headers: dict[str, str]


def key_validate(key: str) -> str:
    if not key or len(key) > KEY_MAX_LENGTH or not key.isprintable():
        raise InvalidInput(
            {"idempotency_key": f"{HEADER} must be 1 to {KEY_MAX_LENGTH} printable characters."}
        )
    return key


def caller_of(request: Request) -> str:
    """Whose key space a request uses: one per course token, else one per user."""
    if isinstance(request.auth, CourseGrant):
        return f"course-token:{request.auth.token_id}"
    return f"user:{request.user.pk}"


def fingerprint_of(request: Request) -> str:
    """The request as JSON with sorted keys: the same content in another layout or key
    order is the same request."""
    canonical = json.dumps(
        {"method": request.method, "path": request.path, "body": request.data},
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
    )
    return hashlib.sha256(canonical.encode("utf-8", errors="surrogatepass")).hexdigest()


def ttl_seconds() -> int:
    return int(settings.GRADLAB_IDEMPOTENCY_KEY_TTL_SECONDS)


def idempotency_begin(
    *, caller: str, operation: str, key: str, fingerprint: str
) -> IdempotencyRecord | Replay:
    """A record to process the request under (now PROCESSING, committed, visible to
    concurrent retries), or the stored response to replay. Raises KeyReused or
    StillProcessing."""
    with transaction.atomic():
        record = (
            IdempotencyRecord.objects.select_for_update()
            .filter(caller=caller, operation=operation, key=key)
            .first()
        )
        if record is not None and _dead(record):
            record.delete()
            record = None
        if record is None:
            return _create(caller=caller, operation=operation, key=key, fingerprint=fingerprint)
        if record.fingerprint != fingerprint:
            raise KeyReused(
                f"This {HEADER} was already used for a different request; use a new key "
                "for new content."
            )
        if record.state == State.PROCESSING:
            raise StillProcessing(
                f"A request with this {HEADER} is still being processed; retry shortly."
            )
        assert record.response_status is not None
        return Replay(record.response_status, record.response_body, record.response_headers)


def _dead(record: IdempotencyRecord) -> bool:
    """Expired, or abandoned while processing (its process died)."""
    now = timezone.now()
    if record.expires_at <= now:
        return True
    return record.state == State.PROCESSING and record.locked_until <= now


def _create(*, caller: str, operation: str, key: str, fingerprint: str) -> IdempotencyRecord:
    now = timezone.now()
    try:
        with transaction.atomic():
            return IdempotencyRecord.objects.create(
                caller=caller,
                operation=operation,
                key=key,
                fingerprint=fingerprint,
                state=State.PROCESSING,
                locked_until=now + timedelta(seconds=settings.GRADLAB_IDEMPOTENCY_LOCK_SECONDS),
                expires_at=now + timedelta(seconds=ttl_seconds()),
            )
    except IntegrityError:
        # A concurrent request with the same key inserted first and is still at it.
        raise StillProcessing(
            f"A request with this {HEADER} is still being processed; retry shortly."
        ) from None


def idempotency_complete(record: IdempotencyRecord, response: Response) -> None:
    headers = {name: response[name] for name in STORED_HEADERS if response.has_header(name)}
    IdempotencyRecord.objects.filter(pk=record.pk, state=State.PROCESSING).update(
        state=State.COMPLETED,
        response_status=response.status_code,
        response_body=response.data,
        response_headers=headers,
    )


def idempotency_release(record: IdempotencyRecord) -> None:
    IdempotencyRecord.objects.filter(pk=record.pk, state=State.PROCESSING).delete()


def idempotency_purge() -> int:
    """Deletes expired records (the periodic task calls it); returns how many."""
    deleted, _ = IdempotencyRecord.objects.filter(expires_at__lte=timezone.now()).delete()
    return deleted


Handler = TypeVar("Handler", bound=Callable[..., Response])


def idempotent(operation: str) -> Callable[[Handler], Handler]:
    """Decorates an APIView method: a request with an Idempotency-Key is processed at most
    once per caller, key and TTL, and its response replayed to retries."""

    def decorate(handler: Handler) -> Handler:
        @functools.wraps(handler)
        def run(view: Any, request: Request, *args: Any, **kwargs: Any) -> Response:
            key = request.headers.get(HEADER)
            if key is None:
                return handler(view, request, *args, **kwargs)
            begun = idempotency_begin(
                caller=caller_of(request),
                operation=operation,
                key=key_validate(key),
                fingerprint=fingerprint_of(request),
            )
            if isinstance(begun, Replay):
                headers = {**begun.headers, REPLAYED_HEADER: "true"}
                return Response(begun.body, status=begun.status, headers=headers)
            return _process(begun, handler, view, request, *args, **kwargs)

        return run  # type: ignore[return-value]

    return decorate


def _process(
    record: IdempotencyRecord, handler: Callable[..., Response], *args: Any, **kwargs: Any
) -> Response:
    try:
        # The response is stored in the transaction that made it: both or neither.
        with transaction.atomic():
            response = handler(*args, **kwargs)
            if 200 <= response.status_code < 300:
                idempotency_complete(record, response)
    except BaseException:
        idempotency_release(record)
        raise
    if not 200 <= response.status_code < 300:
        idempotency_release(record)
    return response
