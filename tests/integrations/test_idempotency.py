"""POST /api/v1/submissions/ with an Idempotency-Key, as the IETF draft says: the same key
and body replay the stored response; the same key with another body is a 422; a retry while
the first is processed is a 409; keys are per caller and expire."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from django.conf import settings
from integration_helpers import COURSE_EXERCISE, bearer

URL = "/api/v1/submissions/"


def _post(client: Any, body: dict[str, Any], key: str | None = "key-1") -> Any:
    headers = {} if key is None else {"HTTP_IDEMPOTENCY_KEY": key}
    return client.post(URL, body, format="json", **headers)


def _body(code: str = "x = 1") -> dict[str, Any]:
    return {"exercise": COURSE_EXERCISE, "code": code}


def _submissions() -> int:
    from submissions.models import Submission

    return Submission.objects.count()


def test_the_same_key_and_body_replay_the_stored_response(
    alice_learner: Any, user_client: Callable[[Any], Any]
) -> None:
    client = user_client(alice_learner)

    first = _post(client, _body())
    retry = _post(client, _body())

    assert first.status_code == retry.status_code == 201
    assert retry.json() == first.json()
    assert retry["Location"] == first["Location"]
    assert retry["Idempotent-Replayed"] == "true"
    assert not first.has_header("Idempotent-Replayed")
    assert _submissions() == 1


def test_the_same_content_in_another_key_order_is_the_same_request(
    alice_learner: Any, user_client: Callable[[Any], Any]
) -> None:
    client = user_client(alice_learner)
    first = client.post(
        URL, '{"exercise": "first-gradient", "code": "x = 1"}',
        content_type="application/json", HTTP_IDEMPOTENCY_KEY="k",
    )  # fmt: skip

    retry = client.post(
        URL, '{"code":"x = 1","exercise":"first-gradient"}',
        content_type="application/json", HTTP_IDEMPOTENCY_KEY="k",
    )  # fmt: skip

    assert retry.json()["id"] == first.json()["id"]


def test_the_same_key_with_another_body_is_a_422_and_creates_nothing(
    alice_learner: Any, user_client: Callable[[Any], Any]
) -> None:
    client = user_client(alice_learner)
    _post(client, _body("x = 1"))

    reused = _post(client, _body("x = 2"))

    assert reused.status_code == 422
    assert "Idempotency-Key" in reused.json()["detail"]
    assert _submissions() == 1


def _in_flight(client: Any, key: str, *, locked_for: timedelta) -> None:
    """Leaves `key` as a first request with _body() would while its process runs (or after
    it died, for a negative `locked_for`). Its caller and fingerprint come from a probe."""
    from django.utils import timezone

    from integrations.models import IdempotencyRecord

    _post(client, _body(), key="probe")
    probe = IdempotencyRecord.objects.get(key="probe")
    IdempotencyRecord.objects.create(
        caller=probe.caller, operation=probe.operation, key=key,
        fingerprint=probe.fingerprint, state=IdempotencyRecord.State.PROCESSING,
        locked_until=timezone.now() + locked_for, expires_at=probe.expires_at,
    )  # fmt: skip


def test_a_retry_while_the_first_request_is_processed_is_a_409(
    alice_learner: Any, user_client: Callable[[Any], Any]
) -> None:
    client = user_client(alice_learner)
    _in_flight(client, "in-flight", locked_for=timedelta(seconds=60))

    retry = _post(client, _body(), key="in-flight")

    assert retry.status_code == 409
    assert "still being processed" in retry.json()["detail"]
    assert _submissions() == 1  # the probe's


def test_a_request_abandoned_while_processing_is_taken_over_after_its_lock(
    alice_learner: Any, user_client: Callable[[Any], Any]
) -> None:
    client = user_client(alice_learner)
    _in_flight(client, "crashed", locked_for=timedelta(seconds=-1))

    retry = _post(client, _body(), key="crashed")

    assert retry.status_code == 201
    assert not retry.has_header("Idempotent-Replayed")
    assert _submissions() == 2


def test_keys_are_per_caller_users_and_course_tokens_alike(
    alice_learner: Any,
    bob_instructor: Any,
    user_client: Callable[[Any], Any],
    course_token: Callable[..., str],
) -> None:
    ids = {
        _post(client, _body(), key="shared").json()["id"]
        for client in (
            user_client(alice_learner),
            user_client(bob_instructor),
            bearer(course_token(["submissions:write"])),
            bearer(course_token(["submissions:write"])),
        )
    }

    assert len(ids) == 4


def test_an_expired_key_is_a_new_key(alice_learner: Any, user_client: Callable[[Any], Any]) -> None:
    from django.utils import timezone

    from integrations.models import IdempotencyRecord

    client = user_client(alice_learner)
    first = _post(client, _body())
    IdempotencyRecord.objects.update(expires_at=timezone.now() - timedelta(seconds=1))

    later = _post(client, _body("x = 2"))

    assert later.status_code == 201
    assert later.json()["id"] != first.json()["id"]


def test_a_failed_request_releases_its_key_for_the_corrected_retry(
    alice_learner: Any, user_client: Callable[[Any], Any]
) -> None:
    client = user_client(alice_learner)

    refused = _post(client, {"exercise": COURSE_EXERCISE, "code": ""})
    corrected = _post(client, _body())

    assert refused.status_code == 400
    assert corrected.status_code == 201
    assert not corrected.has_header("Idempotent-Replayed")


def test_a_rate_limited_request_is_not_stored_and_its_retry_is_processed(
    alice_learner: Any, user_client: Callable[[Any], Any], settings: Any
) -> None:
    settings.GRADLAB_RATE_LIMIT_COUNT = 1
    client = user_client(alice_learner)
    _post(client, _body("x = 0"), key=None)

    limited = _post(client, _body())
    settings.GRADLAB_RATE_LIMIT_COUNT = 2
    retry = _post(client, _body())

    assert limited.status_code == 429
    assert retry.status_code == 201


def test_the_periodic_purge_deletes_only_expired_keys(
    alice_learner: Any, user_client: Callable[[Any], Any]
) -> None:
    from django.utils import timezone

    from integrations.models import IdempotencyRecord
    from integrations.tasks import purge_idempotency_keys

    client = user_client(alice_learner)
    _post(client, _body("x = 1"), key="old")
    _post(client, _body("x = 2"), key="new")
    IdempotencyRecord.objects.filter(key="old").update(expires_at=timezone.now())

    assert purge_idempotency_keys() == 1
    assert list(IdempotencyRecord.objects.values_list("key", flat=True)) == ["new"]


def test_a_key_that_is_too_long_or_unprintable_is_a_400(
    alice_learner: Any, user_client: Callable[[Any], Any]
) -> None:
    client = user_client(alice_learner)

    for key in ("k" * 256, "tab\there"):
        response = _post(client, _body(), key=key)

        assert response.status_code == 400, key
        assert "idempotency_key" in response.json()


@pytest.mark.skipif(
    settings.DATABASES["default"]["ENGINE"] != "django.db.backends.postgresql",
    reason="holds one row lock while requests run around it: PostgreSQL's row locks; "
    "SQLite locks the whole database, so the first request cannot even begin",
)
def test_a_concurrent_retry_while_the_first_request_runs_is_a_409_then_the_first_finishes(
    transactional_db: None, alice_learner: Any, user_client: Callable[[Any], Any]
) -> None:
    """Two real requests at once on the real database: the first is held inside its
    processing (another transaction locks the learner's row, which submission creation
    takes); the retry meanwhile gets 409; once the lock goes, the first gets its 201."""
    import threading

    from django.contrib.auth.models import User
    from django.db import connection, transaction

    client = user_client(alice_learner)
    results: dict[str, Any] = {}
    locked = threading.Event()
    release = threading.Event()

    def hold_the_learner_row() -> None:
        with transaction.atomic():
            User.objects.select_for_update().get(pk=alice_learner.pk)
            locked.set()
            release.wait(timeout=30)
        connection.close()

    def first_request() -> None:
        results["first"] = _post(client, _body(), key="concurrent")
        connection.close()

    holder = threading.Thread(target=hold_the_learner_row)
    holder.start()
    assert locked.wait(timeout=10)
    first = threading.Thread(target=first_request)
    first.start()
    retry = _wait_for_processing_then_post(user_client(alice_learner))  # another connection
    release.set()
    first.join(timeout=30)
    holder.join(timeout=30)

    assert retry.status_code == 409
    assert results["first"].status_code == 201
    assert _post(client, _body(), key="concurrent")["Idempotent-Replayed"] == "true"


def _wait_for_processing_then_post(client: Any) -> Any:
    import time

    from integrations.models import IdempotencyRecord

    deadline = time.monotonic() + 10
    while not IdempotencyRecord.objects.filter(key="concurrent", state="processing").exists():
        assert time.monotonic() < deadline, "the first request never started processing"
        time.sleep(0.05)
    return _post(client, _body(), key="concurrent")
