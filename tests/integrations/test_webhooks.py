"""Course webhooks on `submission.graded`: an outbox row written in the grade's transaction,
sent signed per Standard Webhooks to a real HTTP receiver on 127.0.0.1 (which verifies the
signature from the format's text), retried with backoff, `410 Gone` disables the endpoint,
deliveries visible and redeliverable by the course's instructors."""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable, Iterator
from datetime import timedelta
from typing import Any

import pytest
from gradlab_fixtures import purge_queue, queue_length
from integration_helpers import COURSE, COURSE_EXERCISE, bearer
from webhook_receiver import Receiver, running_receiver, verify

WEBHOOKS = f"/api/v1/courses/{COURSE}/webhooks/"
GRADING_WAIT_S = 400.0


@pytest.fixture
def webhook_settings(settings: Any, worker_queue: str) -> Iterator[Any]:
    """http and 127.0.0.1 allowed (the receiver is local); retries go to a private queue."""
    settings.GRADLAB_WEBHOOK_ALLOW_HTTP = True
    settings.GRADLAB_WEBHOOK_ALLOW_PRIVATE_HOSTS = True
    settings.GRADLAB_WEBHOOK_BACKOFF_SECONDS = 0.2
    purge_queue(worker_queue)
    yield settings
    purge_queue(worker_queue)


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    with running_receiver() as running:
        yield running


@pytest.fixture
def endpoint(
    webhook_settings: Any,
    bob_instructor: Any,
    user_client: Callable[[Any], Any],
    receiver: Receiver,
    courses: Any,
) -> dict[str, Any]:
    created = user_client(bob_instructor).post(WEBHOOKS, {"url": receiver.url}, format="json")
    assert created.status_code == 201, created.json()
    receiver.secret = created.json()["secret"]
    return dict(created.json())


@pytest.fixture
def graded(alice_learner: Any) -> Callable[[], int]:
    """graded() -> a submission of alice's, graded, with its event recorded in the same
    transaction (the one-line hook the grading service calls). Returns the delivery id
    (0 when no endpoint wanted it)."""
    from django.db import transaction
    from django.utils import timezone

    from courses.models import Exercise
    from integrations.models import WebhookDelivery
    from submissions.models import Submission
    from submissions.signals import submission_graded

    exercise = Exercise.objects.get(slug=COURSE_EXERCISE)

    def make() -> int:
        with transaction.atomic():
            submission = Submission.objects.create(
                learner=alice_learner, exercise=exercise, version=exercise.current_version,
                code="x = 1", status="graded", score=7.5, max_score=10.0, passed=False,
                graded_at=timezone.now(),
            )  # fmt: skip
            submission_graded(submission_id=submission.pk)
        recorded = WebhookDelivery.objects.filter(payload__data__submission=submission.pk)
        return int(recorded.values_list("pk", flat=True).first() or 0)  # 0: none recorded

    return make


def _attempt(delivery_id: int) -> str:
    from integrations.webhooks import delivery_attempt

    return delivery_attempt(delivery_id=delivery_id).value


def _make_due(delivery_id: int) -> None:
    from django.utils import timezone

    from integrations.models import WebhookDelivery

    WebhookDelivery.objects.filter(pk=delivery_id).update(next_attempt_at=timezone.now())


def _delivery(delivery_id: int) -> Any:
    from integrations.models import WebhookDelivery

    return WebhookDelivery.objects.get(pk=delivery_id)


def test_the_signature_matches_the_standard_webhooks_test_vector() -> None:
    from integrations.webhooks import signature

    signed = signature(
        secret="whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
        message_id="msg_p5jXN8AQM9LWM0D4loKWxJek",
        timestamp=1614265330,
        body=b'{"test": 2432232314}',
    )

    assert signed == "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="


def test_a_new_endpoint_gets_a_whsec_secret_shown_to_its_instructors_only(
    endpoint: dict[str, Any], user_client: Callable[[Any], Any], bob_instructor: Any,
    alice_learner: Any,
) -> None:  # fmt: skip
    import base64

    detail = f"{WEBHOOKS}{endpoint['id']}/"

    assert endpoint["secret"].startswith("whsec_")
    assert len(base64.b64decode(endpoint["secret"][6:])) == 32
    assert endpoint["events"] == ["submission.graded"]
    assert user_client(bob_instructor).get(detail).json()["secret"] == endpoint["secret"]
    assert "secret" not in user_client(bob_instructor).get(WEBHOOKS).json()[0]
    assert user_client(alice_learner).get(detail).status_code == 404


def test_a_graded_submission_reaches_the_receiver_signed_with_its_score(
    endpoint: dict[str, Any], graded: Callable[[], int], receiver: Receiver
) -> None:
    delivery_id = graded()

    outcome = _attempt(delivery_id)

    assert outcome == "delivered"
    [got] = receiver.received
    assert got.verified
    assert got.msg_id == _delivery(delivery_id).message_id and got.msg_id.startswith("msg_")
    assert got.body["type"] == "submission.graded"
    assert got.body["data"]["score"] == 7.5 and got.body["data"]["max_score"] == 10.0
    assert got.body["data"]["learner"] == "alice_learner"
    assert got.body["data"]["course"] == COURSE
    assert got.body["data"]["held_for_review"] is False
    assert _delivery(delivery_id).status == "delivered"


def test_the_outbox_row_lives_and_dies_with_the_grade_transaction(
    endpoint: dict[str, Any], alice_learner: Any, django_capture_on_commit_callbacks: Any
) -> None:
    from django.db import transaction

    from integrations.models import WebhookDelivery
    from submissions.services import submission_create
    from submissions.signals import submission_graded

    submission, _ = submission_create(
        learner=alice_learner, exercise_slug=COURSE_EXERCISE, code="x = 1"
    )  # (its grading task is never sent: this test's transaction never commits)
    with pytest.raises(RuntimeError), transaction.atomic():
        submission_graded(submission_id=submission.pk)
        assert WebhookDelivery.objects.count() == 1
        raise RuntimeError("the grade's transaction fails")

    assert WebhookDelivery.objects.count() == 0
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        submission_graded(submission_id=submission.pk)
    assert len(callbacks) == 1  # sent only once the grade commits


def test_a_receiver_that_answers_500_then_200_gets_the_message_once(
    endpoint: dict[str, Any], graded: Callable[[], int], receiver: Receiver, worker_queue: str,
    settings: Any,
) -> None:  # fmt: skip
    settings.GRADLAB_WEBHOOK_BACKOFF_SECONDS = 60.0
    receiver.script = [500]
    delivery_id = graded()

    first = _attempt(delivery_id)
    too_early = _attempt(delivery_id)
    retry_waiting = _delivery(delivery_id)
    _make_due(delivery_id)
    second = _attempt(delivery_id)
    _make_due(delivery_id)
    third = _attempt(delivery_id)

    assert (first, too_early, second, third) == ("retry", "skipped", "delivered", "skipped")
    assert retry_waiting.status == "pending" and retry_waiting.last_status_code == 500
    assert queue_length(worker_queue) == 1  # the retry was sent with its countdown
    assert [r.answered for r in receiver.received] == [500, 200]
    assert len({r.msg_id for r in receiver.received}) == 1
    assert len(receiver.accepted()) == 1
    assert _delivery(delivery_id).attempts == 2


def test_retries_back_off_exponentially_and_give_up_after_the_last_attempt(
    endpoint: dict[str, Any], graded: Callable[[], int], receiver: Receiver, settings: Any
) -> None:
    from integrations.webhooks import backoff_seconds

    settings.GRADLAB_WEBHOOK_MAX_ATTEMPTS = 3
    receiver.script = [503, 503, 503, 200]
    delivery_id = graded()

    outcomes = []
    for _ in range(3):
        outcomes.append(_attempt(delivery_id))
        _make_due(delivery_id)

    assert outcomes == ["retry", "retry", "failed"]
    assert _delivery(delivery_id).status == "failed"
    assert len(receiver.received) == 3
    delays = [backoff_seconds(n) for n in (1, 2, 3)]
    assert 0.2 <= delays[0] < 0.4 <= delays[1] < 0.8 <= delays[2]


def test_410_gone_disables_the_endpoint_and_stops_its_other_deliveries(
    endpoint: dict[str, Any], graded: Callable[[], int], receiver: Receiver
) -> None:
    from integrations.models import WebhookEndpoint

    receiver.script = [410]
    gone, waiting = graded(), graded()

    outcome = _attempt(gone)

    assert outcome == "failed"
    webhook = WebhookEndpoint.objects.get()
    assert not webhook.active and "410" in webhook.disabled_reason
    assert _delivery(waiting).status == "failed"
    assert graded() == 0  # nothing more is recorded for it
    assert _attempt(waiting) == "skipped"
    assert len(receiver.received) == 1


def test_a_redirect_is_not_followed(
    endpoint: dict[str, Any], graded: Callable[[], int], receiver: Receiver
) -> None:
    receiver.script = [302]
    delivery_id = graded()

    assert _attempt(delivery_id) == "retry"
    assert _delivery(delivery_id).last_status_code == 302
    assert len(receiver.received) == 1


def test_a_name_resolving_to_a_private_address_is_refused_before_connecting(
    endpoint: dict[str, Any], graded: Callable[[], int], listener: Listener, settings: Any
) -> None:
    """`localhost` is a name, not an address: it is resolved, checked, and refused before
    any connection is made (the earlier guard connected, then checked)."""
    from integrations.egress import NOT_SENT
    from integrations.models import WebhookEndpoint

    _private_refused(settings)
    WebhookEndpoint.objects.update(url=f"http://localhost:{listener.port}/hooks")
    delivery_id = graded()

    assert _attempt(delivery_id) == "retry"
    assert _delivery(delivery_id).last_error == NOT_SENT
    assert listener.accepted == 0


def test_private_addresses_are_refused_unless_allowed(
    endpoint: dict[str, Any], graded: Callable[[], int], receiver: Receiver, settings: Any
) -> None:
    from integrations.egress import NOT_SENT

    _private_refused(settings)
    delivery_id = graded()

    assert _attempt(delivery_id) == "retry"
    assert _delivery(delivery_id).last_error == NOT_SENT
    assert receiver.received == []


@pytest.mark.parametrize("private_allowed", [False, True])
def test_an_open_port_and_a_closed_port_read_the_same_in_the_delivery_api(
    private_allowed: bool,
    endpoint: dict[str, Any],
    graded: Callable[[], int],
    listener: Listener,
    settings: Any,
    bob_instructor: Any,
    user_client: Callable[[Any], Any],
) -> None:
    """A blind port scan through webhooks learns nothing: a listening non-HTTP port and a
    closed one give the same error text, whether the guard refuses them or not."""
    from integrations.models import WebhookEndpoint

    if not private_allowed:
        _private_refused(settings)
    closed = socket.create_server(("127.0.0.1", 0))
    closed_port = closed.getsockname()[1]
    closed.close()
    errors = []
    for port in (listener.port, closed_port):
        WebhookEndpoint.objects.update(url=f"http://127.0.0.1:{port}/hooks")
        delivery_id = graded()
        assert _attempt(delivery_id) == "retry"
        listed = user_client(bob_instructor).get(f"{WEBHOOKS}{endpoint['id']}/deliveries/")
        [shown] = [d for d in _results(listed.json()) if d["id"] == delivery_id]
        errors.append(shown["last_error"])

    assert errors[0] == errors[1] != ""
    assert listener.accepted == (1 if private_allowed else 0)


def _results(body: Any) -> list[dict[str, Any]]:
    return list(body["results"] if isinstance(body, dict) else body)


def _private_refused(settings: Any) -> None:
    settings.GRADLAB_WEBHOOK_ALLOW_PRIVATE_HOSTS = False
    settings.GRADLAB_EGRESS_INSECURE_HOSTS = []


class Listener:
    """A TCP port that accepts connections, counts them and closes them (no HTTP)."""

    def __init__(self) -> None:
        self.server = socket.create_server(("127.0.0.1", 0))
        self.server.settimeout(0.1)
        self.port = int(self.server.getsockname()[1])
        self.accepted = 0
        self.stop = threading.Event()

    def serve(self) -> None:
        while not self.stop.is_set():
            try:
                peer, _ = self.server.accept()
            except TimeoutError:
                continue
            self.accepted += 1
            peer.close()


@pytest.fixture
def listener() -> Iterator[Listener]:
    running = Listener()
    thread = threading.Thread(target=running.serve, daemon=True)
    thread.start()
    yield running
    running.stop.set()
    thread.join()
    running.server.close()


@pytest.mark.parametrize(
    ("url", "fragment"),
    [
        ("ftp://example.org/hook", "scheme"),
        ("/relative", "scheme"),
        ("https://user:pw@example.org/hook", "credentials"),
    ],
)
def test_a_bad_endpoint_url_is_a_400_naming_the_field(
    url: str, fragment: str, bob_instructor: Any, user_client: Callable[[Any], Any], courses: Any
) -> None:
    response = user_client(bob_instructor).post(WEBHOOKS, {"url": url}, format="json")

    assert response.status_code == 400
    assert fragment in response.json()["url"][0]


def test_plain_http_is_refused_by_default(
    bob_instructor: Any, user_client: Callable[[Any], Any], courses: Any
) -> None:
    response = user_client(bob_instructor).post(
        WEBHOOKS, {"url": "http://example.org/hook"}, format="json"
    )

    assert response.status_code == 400


def test_the_instructor_sees_deliveries_and_redelivers_one_with_the_same_id(
    endpoint: dict[str, Any],
    graded: Callable[[], int],
    receiver: Receiver,
    bob_instructor: Any,
    user_client: Callable[[Any], Any],
    django_capture_on_commit_callbacks: Any,
) -> None:
    client = user_client(bob_instructor)
    delivery_id = graded()
    _attempt(delivery_id)
    deliveries = f"{WEBHOOKS}{endpoint['id']}/deliveries/"

    listed = client.get(deliveries).json()
    with django_capture_on_commit_callbacks(execute=False):
        again = client.post(f"{deliveries}{delivery_id}/redeliver/")
    outcome = _attempt(again.json()["id"])

    assert [d["status"] for d in listed["results"]] == ["delivered"]
    assert listed["results"][0]["last_status_code"] == 200
    assert again.status_code == 202
    assert outcome == "delivered"
    assert [r.msg_id for r in receiver.received] == [listed["results"][0]["message_id"]] * 2
    assert all(r.verified for r in receiver.received)


def test_a_disabled_endpoint_is_enabled_again_by_its_instructor(
    endpoint: dict[str, Any], bob_instructor: Any, user_client: Callable[[Any], Any]
) -> None:
    client = user_client(bob_instructor)
    detail = f"{WEBHOOKS}{endpoint['id']}/"

    off = client.patch(detail, {"active": False}, format="json").json()
    on = client.patch(detail, {"active": True}, format="json").json()

    assert (off["active"], on["active"]) == (False, True)


def test_a_course_token_reads_deliveries_with_its_scope_but_never_manages_webhooks(
    endpoint: dict[str, Any], course_token: Callable[..., str]
) -> None:
    reader = bearer(course_token(["webhooks:read"]))
    deliveries = f"{WEBHOOKS}{endpoint['id']}/deliveries/"

    assert reader.get(WEBHOOKS).status_code == 200
    assert reader.get(deliveries).status_code == 200
    assert reader.post(WEBHOOKS, {"url": "https://example.org/x"}, format="json").status_code == 403
    assert reader.get(f"{WEBHOOKS}{endpoint['id']}/").status_code == 403  # the secret
    assert bearer(course_token(["exercises:read"])).get(WEBHOOKS).status_code == 403


def test_the_sweep_resends_a_delivery_whose_worker_died_while_sending(
    endpoint: dict[str, Any], graded: Callable[[], int], worker_queue: str
) -> None:
    from django.utils import timezone

    from integrations.models import WebhookDelivery
    from integrations.webhooks import deliveries_sweep

    delivery_id = graded()
    WebhookDelivery.objects.filter(pk=delivery_id).update(
        status="sending", attempts=1, locked_until=timezone.now() - timedelta(seconds=1)
    )

    sent = deliveries_sweep(now=timezone.now() + timedelta(minutes=5))

    assert sent == [delivery_id]
    assert _delivery(delivery_id).status == "pending"
    assert queue_length(worker_queue) == 1


def test_a_broker_failure_is_logged_and_the_sweep_sends_the_delivery_after_its_grace(
    endpoint: dict[str, Any], graded: Callable[[], int], worker_queue: str, settings: Any,
    monkeypatch: Any, caplog: Any,
) -> None:  # fmt: skip
    from django.utils import timezone
    from kombu.exceptions import OperationalError

    from config.celery_app import app
    from integrations.webhooks import OUTBOX, deliveries_sweep

    settings.GRADLAB_WEBHOOK_SWEEP_GRACE_SECONDS = 60.0
    delivery_id = graded()

    def broker_down(*args: Any, **kwargs: Any) -> None:
        raise OperationalError("Error 111 connecting to 127.0.0.1:6379. Connection refused.")

    with monkeypatch.context() as patch:
        patch.setattr(app, "send_task", broker_down)
        assert OUTBOX.enqueue(delivery_id) is False
    assert f"could not enqueue webhook delivery {delivery_id}; the sweep will" in caplog.text
    assert _delivery(delivery_id).status == "pending"  # nothing lost
    assert queue_length(worker_queue) == 0

    assert deliveries_sweep() == []  # due for less than the grace: its message may be on its way
    assert deliveries_sweep(now=timezone.now() + timedelta(seconds=61)) == [delivery_id]
    assert queue_length(worker_queue) == 1


def test_the_receiver_refuses_a_forged_or_stale_signature() -> None:
    import time

    from django.utils import timezone

    from integrations.webhooks import secret_generate, signed_headers

    secret = secret_generate()
    body = b'{"type":"submission.graded"}'
    headers = signed_headers(secret=secret, message_id="msg_1", body=body, now=timezone.now())

    assert verify(secret, headers, body)
    assert not verify(secret, headers, body + b" ")
    assert not verify(secret_generate(), headers, body)
    assert not verify(secret, headers, body, now=time.time() + 600)


def test_a_real_worker_delivers_once_to_a_receiver_that_answers_500_then_200(
    endpoint: dict[str, Any],
    receiver: Receiver,
    graded: Callable[[], int],
    start_worker: Callable[..., Any],
) -> None:
    """The outbox row commits with the grade; the delivery task runs in a real Celery worker
    process, gets a 500, backs off, then a 200: the receiver keeps one message."""
    from gradlab_fixtures import wait_for

    receiver.script = [500]
    worker = start_worker(
        GRADLAB_WEBHOOK_ALLOW_PRIVATE_HOSTS="1", GRADLAB_WEBHOOK_BACKOFF_SECONDS="0.5"
    )

    delivery_id = graded()  # committed: the task goes to the worker

    wait_for(
        lambda: _delivery(delivery_id).status == "delivered",
        timeout=60, what=f"the delivery; worker log:\n{worker.output()}",
    )  # fmt: skip
    assert [r.answered for r in receiver.received] == [500, 200]
    assert len(receiver.accepted()) == 1 and receiver.accepted()[0].verified
    assert _delivery(delivery_id).attempts == 2


def test_a_real_worker_grades_then_delivers_once_to_a_receiver_that_failed_first(
    endpoint: dict[str, Any],
    receiver: Receiver,
    alice_learner: Any,
    user_client: Callable[[Any], Any],
    start_worker: Callable[..., Any],
) -> None:
    """The whole path: API submission, a real Celery worker grading in the real sandbox,
    the outbox row of the grade, the delivery task, a 500, the backoff, the 200."""
    from gradlab_fixtures import wait_for
    from integration_helpers import solution

    from integrations.models import WebhookDelivery
    from submissions.models import Submission

    receiver.script = [500]
    worker = start_worker(
        GRADLAB_WEBHOOK_ALLOW_PRIVATE_HOSTS="1", GRADLAB_WEBHOOK_BACKOFF_SECONDS="0.5"
    )
    created = user_client(alice_learner).post(
        "/api/v1/submissions/",
        {"exercise": COURSE_EXERCISE, "code": solution(COURSE_EXERCISE)},
        format="json",
    )

    # Grading runs torch twice in the sandbox (reference, then the learner's code): on a
    # loaded machine that takes minutes, so this waits long (a wait, not a timing check).
    wait_for(lambda: receiver.accepted(), timeout=GRADING_WAIT_S,
             what=f"a delivery; worker log:\n{worker.output()}")  # fmt: skip
    wait_for(lambda: WebhookDelivery.objects.filter(status="delivered").exists())

    [accepted] = receiver.accepted()
    graded = Submission.objects.get(pk=created.json()["id"])
    data = accepted.body["data"]
    assert data["submission"] == graded.pk and data["status"] == "graded"
    # The message says what the database says (on a loaded machine the sandbox may time
    # out: then the grade is 0, and the message must say 0).
    assert (data["score"], data["passed"]) == (graded.score, graded.passed)
    assert [r.answered for r in receiver.received] == [500, 200]
    assert WebhookDelivery.objects.get().attempts == 2


# -- an endpoint follows its creator's rights ------------------------------------------------


def _demote(user: Any, role: str) -> None:
    from accounts.models import Enrollment

    if role:
        Enrollment.objects.filter(user=user, module__slug=COURSE).update(role=role)
    else:
        Enrollment.objects.filter(user=user, module__slug=COURSE).delete()


@pytest.mark.parametrize(
    "role", ["", "learner", "reviewer"], ids=["removed", "learner", "reviewer"]
)
def test_an_endpoint_whose_creator_no_longer_teaches_the_course_receives_nothing_more(
    endpoint: dict[str, Any],
    graded: Callable[[], int],
    receiver: Receiver,
    bob_instructor: Any,
    role: str,
) -> None:
    from integrations.models import WebhookEndpoint
    from integrations.webhooks import CREATOR_GONE

    queued = graded()  # recorded while bob still taught the course
    _demote(bob_instructor, role)

    assert _attempt(queued) == "failed"  # the queued one is not sent either
    assert graded() == 0  # and nothing more is recorded for it
    assert receiver.received == []
    webhook = WebhookEndpoint.objects.get()
    assert (webhook.active, webhook.disabled_reason) == (False, CREATOR_GONE)
    assert _delivery(queued).last_error == CREATOR_GONE


def test_an_endpoint_whose_creator_was_deactivated_receives_nothing(
    endpoint: dict[str, Any], graded: Callable[[], int], receiver: Receiver, bob_instructor: Any
) -> None:
    bob_instructor.is_active = False
    bob_instructor.save(update_fields=["is_active"])

    assert graded() == 0
    assert receiver.received == []


def test_an_endpoint_keeps_delivering_while_its_creator_teaches_the_course(
    endpoint: dict[str, Any], graded: Callable[[], int], receiver: Receiver
) -> None:
    assert _attempt(graded()) == "delivered"
    assert _attempt(graded()) == "delivered"
    assert len(receiver.received) == 2


# -- secret rotation ---------------------------------------------------------------------------


def _rotate(client: Any, endpoint: dict[str, Any]) -> dict[str, Any]:
    rotated = client.post(f"{WEBHOOKS}{endpoint['id']}/rotate-secret/")
    assert rotated.status_code == 200, rotated.content
    return dict(rotated.json())


def test_after_a_secret_rotation_deliveries_verify_with_the_old_and_the_new_secret(
    endpoint: dict[str, Any], graded: Callable[[], int], receiver: Receiver,
    user_client: Callable[[Any], Any], bob_instructor: Any,
) -> None:  # fmt: skip
    rotated = _rotate(user_client(bob_instructor), endpoint)
    old_secret, new_secret = endpoint["secret"], rotated["secret"]

    first = graded()  # the receiver still holds the old secret
    assert _attempt(first) == "delivered"
    receiver.secret = new_secret  # ... then switches
    second = graded()
    assert _attempt(second) == "delivered"

    assert new_secret != old_secret and new_secret.startswith("whsec_")
    assert rotated["previous_secret_expires_at"] is not None
    assert [got.verified for got in receiver.received] == [True, True]
    detail = user_client(bob_instructor).get(f"{WEBHOOKS}{endpoint['id']}/").json()
    assert detail["secret"] == new_secret


def test_once_the_grace_period_ends_the_old_secret_no_longer_signs(
    endpoint: dict[str, Any], graded: Callable[[], int], receiver: Receiver,
    user_client: Callable[[Any], Any], bob_instructor: Any,
) -> None:  # fmt: skip
    from django.utils import timezone

    from integrations.models import WebhookEndpoint

    _rotate(user_client(bob_instructor), endpoint)
    WebhookEndpoint.objects.filter(pk=endpoint["id"]).update(
        previous_secret_expires_at=timezone.now() - timedelta(seconds=1)
    )

    delivery_id = graded()  # the receiver never switched to the new secret
    _attempt(delivery_id)

    assert [got.verified for got in receiver.received] == [False]
    assert _delivery(delivery_id).status == "pending"  # refused 401: retried later


def test_only_the_courses_instructors_rotate_a_webhook_secret(
    endpoint: dict[str, Any], user_client: Callable[[Any], Any], alice_learner: Any,
    carol_other_course: Any, bob_instructor: Any,
) -> None:  # fmt: skip
    path = f"{WEBHOOKS}{endpoint['id']}/rotate-secret/"

    for stranger in (alice_learner, carol_other_course):
        assert user_client(stranger).post(path).status_code in (403, 404)

    detail = user_client(bob_instructor).get(f"{WEBHOOKS}{endpoint['id']}/").json()
    assert detail["secret"] == endpoint["secret"]
