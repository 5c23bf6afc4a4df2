"""Assignment and Grade Services: a launched learner's graded submission posts its score to
the fake platform's line item (`/scores`, query string kept, bearer token from a signed
client assertion, the AGS content type), with retries on 401, 429 and 5xx and a permanent
4xx recorded, not retried."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from fake_platform import INSTRUCTOR, SCORE_TYPE, FakePlatform
from gradlab_fixtures import purge_queue

EXERCISE = "first-gradient"


@pytest.fixture
def private_queue(worker_queue: str) -> Iterator[str]:
    purge_queue(worker_queue)
    yield worker_queue
    purge_queue(worker_queue)


@pytest.fixture
def learner(launch: Callable[..., Any]) -> Any:
    from django.contrib.auth.models import User

    assert launch().response.status_code == 302
    return User.objects.get(lti_users__sub="learner-1")


@pytest.fixture
def graded(learner: Any, private_queue: str) -> Callable[..., list[int]]:
    """graded(score) -> the ScorePost ids that a grade of `score` /10 recorded, in the
    grade's transaction (the hook the grading service calls)."""
    from django.db import transaction
    from django.utils import timezone

    from courses.models import Exercise
    from integrations.events import submission_graded
    from lti.models import ScorePost
    from submissions.models import Submission

    exercise = Exercise.objects.get(slug=EXERCISE)

    def make(score: float, user: Any = None) -> list[int]:
        with transaction.atomic():
            submission = Submission.objects.create(
                learner=user or learner, exercise=exercise, version=exercise.current_version,
                code="x = 1", status="graded", score=score, max_score=10.0,
                passed=score == 10.0, graded_at=timezone.now(),
            )  # fmt: skip
            submission_graded(submission_id=submission.pk)
        return list(ScorePost.objects.filter(submission=submission).values_list("pk", flat=True))

    return make


def _attempt(post_id: int) -> str:
    from lti.passback import score_post_attempt

    return score_post_attempt(post_id=post_id).value


def _post(post_id: int) -> Any:
    from lti.models import ScorePost

    return ScorePost.objects.get(pk=post_id)


def _make_due(post_id: int) -> None:
    from django.utils import timezone

    from lti.models import ScorePost

    ScorePost.objects.filter(pk=post_id).update(next_attempt_at=timezone.now())


def test_a_graded_submission_posts_its_score_to_the_line_item(
    graded: Callable[..., list[int]], platform: FakePlatform
) -> None:
    [post_id] = graded(7.5)

    outcome = _attempt(post_id)

    assert outcome == "posted"
    [score] = platform.scores
    assert score.path == "/courses/7/lineitems/1/lineitem/scores?type_id=42"
    assert score.content_type == SCORE_TYPE
    assert score.body["userId"] == "learner-1"
    assert (score.body["scoreGiven"], score.body["scoreMaximum"]) == (7.5, 10.0)
    assert score.body["activityProgress"] == "Completed"
    assert score.body["gradingProgress"] == "FullyGraded"
    assert score.body["timestamp"]
    assert _post(post_id).status == "posted"


def test_the_best_score_is_posted_by_default(
    graded: Callable[..., list[int]], platform: FakePlatform
) -> None:
    for score in (8.0, 5.0):
        [post_id] = graded(score)
        _attempt(post_id)

    assert [s.body["scoreGiven"] for s in platform.scores] == [8.0, 8.0]


def test_the_last_score_is_posted_when_the_link_says_so(
    graded: Callable[..., list[int]], platform: FakePlatform
) -> None:
    from lti.models import ExerciseLink

    ExerciseLink.objects.update(score_policy="last")
    for score in (8.0, 5.0):
        [post_id] = graded(score)
        _attempt(post_id)

    assert [s.body["scoreGiven"] for s in platform.scores] == [8.0, 5.0]


def test_a_401_gets_a_new_token_and_the_score_through_in_the_same_attempt(
    graded: Callable[..., list[int]], platform: FakePlatform
) -> None:
    [first] = graded(5.0)
    _attempt(first)
    platform.revoke_tokens()  # the cached token is no longer accepted
    [second] = graded(9.0)

    outcome = _attempt(second)

    assert outcome == "posted"
    assert platform.score_attempts == [200, 401, 200]
    assert len(platform.token_requests) == 2
    assert _post(second).attempts == 1


@pytest.mark.parametrize("status", [429, 500, 503])
def test_a_busy_or_failing_platform_is_retried_with_backoff(
    status: int, graded: Callable[..., list[int]], platform: FakePlatform, settings: Any
) -> None:
    settings.GRADLAB_LTI_BACKOFF_SECONDS = 60.0
    platform.score_script = [status]
    [post_id] = graded(6.0)

    first = _attempt(post_id)
    too_early = _attempt(post_id)
    waiting = _post(post_id)
    _make_due(post_id)
    second = _attempt(post_id)

    assert (first, too_early, second) == ("retry", "skipped", "posted")
    assert waiting.last_status_code == status and waiting.status == "pending"
    assert len(platform.scores) == 1


def test_a_permanent_refusal_is_recorded_and_not_retried(
    graded: Callable[..., list[int]], platform: FakePlatform
) -> None:
    platform.score_script = [400]  # e.g. the platform's test student
    [post_id] = graded(6.0)

    outcome = _attempt(post_id)
    _make_due(post_id)

    assert outcome == "failed"
    assert _attempt(post_id) == "skipped"
    refused = _post(post_id)
    assert refused.status == "failed" and refused.last_status_code == 400
    assert "scripted" in refused.last_error
    assert platform.score_attempts == [400]


def test_retries_stop_after_the_last_attempt(
    graded: Callable[..., list[int]], platform: FakePlatform, settings: Any
) -> None:
    settings.GRADLAB_LTI_MAX_ATTEMPTS = 2
    platform.score_script = [500, 500, 500]
    [post_id] = graded(6.0)

    outcomes = []
    for _ in range(2):
        outcomes.append(_attempt(post_id))
        _make_due(post_id)

    assert outcomes == ["retry", "failed"]


def test_a_score_held_for_review_is_posted_only_once_released(
    graded: Callable[..., list[int]], platform: FakePlatform, bob_instructor: Any,
    django_capture_on_commit_callbacks: Any,
) -> None:  # fmt: skip
    from courses.models import Module
    from lti.models import ScorePost
    from submissions.models import Submission
    from submissions.services import submission_review

    graded(4.0)
    [held_post] = graded(9.0)
    ScorePost.objects.filter(pk=held_post).delete()  # as if the grade had been held:
    held = Submission.objects.latest("id")
    Submission.objects.filter(pk=held.pk).update(
        review="held", score=None, passed=None, report={"score": 9.0, "passed": False}
    )

    with django_capture_on_commit_callbacks(execute=False):
        submission_review(submission_id=held.pk, module=Module.objects.get(exercises=held.exercise),
                          reviewer=bob_instructor, decision="release")  # fmt: skip
    [released] = ScorePost.objects.filter(submission=held).values_list("pk", flat=True)

    assert _attempt(released) == "posted"
    assert [s.body["scoreGiven"] for s in platform.scores] == [9.0]


def test_a_held_grade_records_no_score(
    learner: Any, private_queue: str, platform: FakePlatform
) -> None:
    from django.db import transaction
    from django.utils import timezone

    from courses.models import Exercise
    from integrations.events import submission_graded
    from lti.models import ScorePost
    from submissions.models import Submission

    exercise = Exercise.objects.get(slug=EXERCISE)
    with transaction.atomic():
        held = Submission.objects.create(
            learner=learner, exercise=exercise, version=exercise.current_version, code="x",
            status="graded", review="held", score=None, max_score=10.0, graded_at=timezone.now(),
        )  # fmt: skip
        submission_graded(submission_id=held.pk)

    assert not ScorePost.objects.exists()


def test_the_sweep_resends_a_score_whose_worker_died_while_posting(
    graded: Callable[..., list[int]], private_queue: str
) -> None:
    from datetime import timedelta

    from django.utils import timezone
    from gradlab_fixtures import queue_length

    from lti.models import ScorePost
    from lti.passback import scores_sweep

    [post_id] = graded(7.0)
    ScorePost.objects.filter(pk=post_id).update(
        status="sending", attempts=1, locked_until=timezone.now() - timedelta(seconds=1)
    )

    assert scores_sweep() == [post_id]
    assert _post(post_id).status == "pending"
    assert queue_length(private_queue) == 1


def test_an_instructor_launch_posts_no_scores(
    launch: Callable[..., Any], graded: Callable[..., list[int]]
) -> None:
    from django.contrib.auth.models import User

    launch(sub="teacher-1", roles=[INSTRUCTOR])
    teacher = User.objects.get(lti_users__sub="teacher-1")

    assert graded(10.0, user=teacher) == []


def test_a_real_worker_posts_the_score_once_the_grade_commits(
    graded: Callable[..., list[int]], platform: FakePlatform, start_worker: Callable[..., Any]
) -> None:
    from gradlab_fixtures import wait_for

    platform.score_script = [503]
    worker = start_worker(GRADLAB_LTI_BACKOFF_SECONDS="0.5")

    [post_id] = graded(9.0)

    wait_for(lambda: _post(post_id).status == "posted", timeout=60,
             what=f"the score; worker log:\n{worker.output()}")  # fmt: skip
    assert platform.score_attempts == [503, 200]
    assert [s.body["scoreGiven"] for s in platform.scores] == [9.0]


def test_the_whole_flow_launch_submit_grade_in_the_sandbox_and_post_to_the_gradebook(
    learner: Any, platform: FakePlatform, start_worker: Callable[..., Any], private_queue: str
) -> None:
    """Launched from the fake LMS, the learner submits the reference solution; a real worker
    grades it in the real sandbox; the score reaches the platform's gradebook."""
    from gradlab_fixtures import EXERCISES, wait_for
    from rest_framework.test import APIClient

    from accounts.services import token_issue
    from submissions.models import Submission

    worker = start_worker()
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token_issue(user=learner)}")
    solution = (EXERCISES / EXERCISE / "solution.py").read_text(encoding="utf-8")

    created = client.post("/api/v1/submissions/", {"exercise": EXERCISE, "code": solution},
                          format="json")  # fmt: skip

    assert created.status_code == 201
    # Grading runs torch twice in the sandbox: long on a loaded machine (a wait, not a check).
    submission = wait_for(
        lambda: Submission.objects.filter(
            pk=created.json()["id"], status__in=["graded", "failed"]
        ).first(),
        timeout=400.0, what=f"the grade; worker log:\n{worker.output()}",
    )  # fmt: skip
    assert submission.status == "graded", submission.error_message
    wait_for(lambda: platform.scores, timeout=60.0, what=f"a score:\n{worker.output()}")
    [score] = platform.scores
    assert score.body["userId"] == "learner-1"
    assert (score.body["scoreGiven"], score.body["scoreMaximum"]) == (
        submission.score,
        submission.max_score,
    )
    assert score.path.endswith("/scores?type_id=42")
