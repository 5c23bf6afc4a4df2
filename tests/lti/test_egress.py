"""The LMS's service URLs go through the egress guard (integrations.egress): a line item,
scores or roster URL from an id_token, a roster's `Link: rel="next"`, the token endpoint and
the key set are requested only over https (plain http only to GRADLAB_EGRESS_INSECURE_HOSTS,
127.0.0.1 in the tests), on the registration's origins, at public addresses checked where
the socket connects, and never through a redirect. The peers are real sockets on 127.0.0.1:
a `Sink` counts the connections it accepts, so "nothing reached it" is a fact, not a mock."""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from fake_platform import AGS, INSTRUCTOR, ISSUER, NRPS, FakePlatform
from gradlab_fixtures import serving

from integrations.egress import NOT_SENT


class Sink:
    """A TCP listener that counts the connections it accepts (and reads nothing)."""

    def __init__(self) -> None:
        self.server = socket.create_server(("127.0.0.1", 0))
        self.server.settimeout(0.1)
        self.port = int(self.server.getsockname()[1])
        self.accepted = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                peer, _ = self.server.accept()
            except TimeoutError:
                continue
            self.accepted += 1
            peer.close()

    def __enter__(self) -> Sink:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.server.close()


@pytest.fixture
def sink() -> Iterator[Sink]:
    with Sink() as running:
        yield running


@pytest.fixture
def redirector(sink: Sink) -> Iterator[str]:
    """An HTTP server on 127.0.0.1 that answers every request `302` to the sink."""

    class Handler(BaseHTTPRequestHandler):
        def _redirect(self) -> None:
            self.send_response(302)
            self.send_header("Location", f"http://127.0.0.1:{sink.port}{self.path}")
            self.send_header("Content-Length", "0")
            self.end_headers()

        do_GET = do_POST = _redirect

        def log_message(self, *args: Any) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    with serving(server):
        yield f"http://127.0.0.1:{server.server_address[1]}"


def _allow_origins(settings: Any, *origins: str) -> None:
    settings.GRADLAB_LTI_SERVICE_ORIGINS = [f"{ISSUER}={origin}" for origin in origins]


@pytest.fixture
def launched_with(
    launch: Callable[..., Any], grade_score: Callable[[Any], list[int]]
) -> Callable[[str], int]:
    """launched_with(lineitem_url) -> the ScorePost of a learner launched with that AGS
    line item in the id_token, once graded."""
    from django.contrib.auth.models import User

    def make(lineitem_url: str) -> int:
        ags = {"scope": ["https://purl.imsglobal.org/spec/lti-ags/scope/score"],
               "lineitem": lineitem_url}  # fmt: skip
        assert launch(**{AGS: ags}).response.status_code == 302
        [post_id] = grade_score(User.objects.get(lti_users__sub="learner-1"))
        return post_id

    return make


@pytest.fixture
def grade_score() -> Callable[[Any], list[int]]:
    from django.db import transaction
    from django.utils import timezone

    from courses.models import Exercise
    from lti.models import ScorePost
    from submissions.models import Submission
    from submissions.signals import submission_graded

    exercise = Exercise.objects.get(slug="first-gradient")

    def make(user: Any) -> list[int]:
        with transaction.atomic():
            submission = Submission.objects.create(
                learner=user, exercise=exercise, version=exercise.current_version,
                code="x = 1", status="graded", score=7.0, max_score=10.0, passed=False,
                graded_at=timezone.now(),
            )  # fmt: skip
            submission_graded(submission_id=submission.pk)
        return list(ScorePost.objects.filter(submission=submission).values_list("pk", flat=True))

    return make


def _attempt(post_id: int) -> tuple[str, Any]:
    from lti.models import ScorePost
    from lti.passback import score_post_attempt

    outcome = score_post_attempt(post_id=post_id).value
    return outcome, ScorePost.objects.get(pk=post_id)


def _roster_context() -> int:
    from lti.models import ExerciseLink

    return int(ExerciseLink.objects.get().resource_link.context_id)


def test_a_lineitem_on_another_port_of_the_platform_host_is_refused_and_nothing_reaches_it(
    launched_with: Callable[[str], int], sink: Sink, platform: FakePlatform
) -> None:
    post_id = launched_with(f"http://127.0.0.1:{sink.port}/lineitems/1/lineitem")

    outcome, post = _attempt(post_id)

    assert outcome == "retry"
    assert (post.last_status_code, post.last_error) == (None, NOT_SENT)
    assert sink.accepted == 0
    assert platform.token_requests != []  # the token came from the platform, not the sink


def test_a_lineitems_container_on_another_port_is_refused_and_nothing_reaches_it(
    launch: Callable[..., Any], grade_score: Callable[[Any], list[int]], sink: Sink
) -> None:
    """A launch without a line item whose `lineitems` URL points elsewhere: the line item
    is never created there (nor its bearer token sent)."""
    from django.contrib.auth.models import User

    scopes = ["lineitem", "score"]
    ags = {"scope": [f"https://purl.imsglobal.org/spec/lti-ags/scope/{s}" for s in scopes],
           "lineitems": f"http://127.0.0.1:{sink.port}/lineitems"}  # fmt: skip
    assert launch(**{AGS: ags}).response.status_code == 302
    [post_id] = grade_score(User.objects.get(lti_users__sub="learner-1"))

    outcome, post = _attempt(post_id)

    assert outcome == "retry"
    assert post.last_error.endswith(NOT_SENT)
    assert sink.accepted == 0


def test_a_roster_url_on_another_port_is_refused_and_nothing_reaches_it(
    launch: Callable[..., Any], sink: Sink, platform: FakePlatform
) -> None:
    from integrations.egress import Refused
    from lti.roster import roster_sync

    nrps = {"context_memberships_url": f"http://127.0.0.1:{sink.port}/members",
            "service_versions": ["2.0"]}  # fmt: skip
    launch(sub="teacher-1", roles=[INSTRUCTOR], **{NRPS: nrps})

    with pytest.raises(Refused):
        roster_sync(context_id=_roster_context())

    assert sink.accepted == 0


def test_a_roster_next_link_to_another_host_is_refused_and_nobody_is_enrolled(
    launch: Callable[..., Any], sink: Sink, platform: FakePlatform
) -> None:
    from accounts.models import Enrollment
    from integrations.egress import Refused
    from lti.roster import roster_sync

    member = {"user_id": "member-1", "status": "Active", "roles": []}
    next_link = f'<http://127.0.0.1:{sink.port}/members?page=2>; rel="next"'
    platform._roster_page = lambda query: ({"members": [member]}, next_link)  # type: ignore[method-assign]
    launch(sub="teacher-1", roles=[INSTRUCTOR])

    with pytest.raises(Refused):
        roster_sync(context_id=_roster_context())

    assert sink.accepted == 0
    assert not Enrollment.objects.filter(user__lti_users__sub="member-1").exists()


def test_a_redirect_from_the_scores_url_is_not_followed_nor_taken_for_success(
    launched_with: Callable[[str], int],
    redirector: str,
    sink: Sink,
    settings: Any,
    platform: FakePlatform,
) -> None:
    _allow_origins(settings, redirector, f"http://127.0.0.1:{sink.port}")
    post_id = launched_with(f"{redirector}/lineitems/1/lineitem")

    outcome, post = _attempt(post_id)

    assert outcome == "retry"
    assert post.status == "pending"
    assert post.last_status_code == 302
    assert sink.accepted == 0


def test_a_redirect_from_the_roster_url_is_not_followed(
    launch: Callable[..., Any], redirector: str, sink: Sink, settings: Any
) -> None:
    from pylti1p3.exception import LtiServiceException

    from lti.roster import roster_sync

    _allow_origins(settings, redirector, f"http://127.0.0.1:{sink.port}")
    nrps = {"context_memberships_url": f"{redirector}/members", "service_versions": ["2.0"]}
    launch(sub="teacher-1", roles=[INSTRUCTOR], **{NRPS: nrps})

    with pytest.raises(LtiServiceException):
        roster_sync(context_id=_roster_context())

    assert sink.accepted == 0


def test_a_name_that_resolves_to_loopback_is_refused_before_connecting(
    launched_with: Callable[[str], int], sink: Sink, settings: Any
) -> None:
    """https, and an origin the operator allowed: the name still resolves to 127.0.0.1,
    which is checked before the socket connects (no connection reaches the port)."""
    _allow_origins(settings, f"https://localhost:{sink.port}")
    post_id = launched_with(f"https://localhost:{sink.port}/lineitems/1/lineitem")

    outcome, post = _attempt(post_id)

    assert outcome == "retry"
    assert post.last_error == NOT_SENT
    assert sink.accepted == 0


def test_plain_http_to_the_platform_is_refused_unless_its_host_is_allowed(
    graded_learner_post: int, platform: FakePlatform, settings: Any
) -> None:
    settings.GRADLAB_EGRESS_INSECURE_HOSTS = []

    outcome, post = _attempt(graded_learner_post)

    assert (outcome, post.last_error) == ("retry", NOT_SENT)
    assert platform.token_requests == [] and platform.score_attempts == []


@pytest.fixture
def graded_learner_post(launched_with: Callable[[str], int], platform: FakePlatform) -> int:
    return launched_with(platform.lineitem_url(1))


def test_the_platform_key_set_is_fetched_only_through_the_guard(
    launch: Callable[..., Any], platform: FakePlatform, settings: Any
) -> None:
    """The key set's http://127.0.0.1 URL is refused once 127.0.0.1 is not allowed: the
    launch fails closed and the platform saw no key set request."""
    settings.GRADLAB_EGRESS_INSECURE_HOSTS = []

    flow = launch()

    assert flow.response.status_code != 302
    assert platform.jwks_fetches == 0


def test_service_origins_are_the_registrations_and_the_operators_for_its_issuer(
    registration: Any, platform: FakePlatform, settings: Any
) -> None:
    from lti.compat import registration_of, service_origins

    settings.GRADLAB_LTI_SERVICE_ORIGINS = [
        f"{ISSUER}=https://school.example.test",
        "https://other.example=https://evil.test",
    ]

    origins = service_origins(registration_of(registration))

    assert origins == {"https://lms.example.test:443", platform.base_url,
                       "https://school.example.test:443"}  # fmt: skip
