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
def graded(learner: Any, grade_of: Callable[..., list[int]]) -> Callable[..., list[int]]:
    """graded(score, user=learner) -> the ScorePost ids that a grade of `score` /10
    recorded, in the grade's transaction (the hook the grading service calls)."""

    def make(score: float, user: Any = None) -> list[int]:
        return grade_of(score, user or learner)

    return make


@pytest.fixture
def grade_of(private_queue: str) -> Callable[..., list[int]]:
    """grade_of(score, user) -> as `graded`, for a user launched by the test itself."""
    from django.db import transaction
    from django.utils import timezone

    from courses.models import Exercise
    from lti.models import ScorePost
    from submissions.models import Submission
    from submissions.signals import submission_graded

    exercise = Exercise.objects.get(slug=EXERCISE)

    def make(score: float, user: Any) -> list[int]:
        with transaction.atomic():
            submission = Submission.objects.create(
                learner=user, exercise=exercise, version=exercise.current_version,
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
    from lti.models import ScorePost
    from submissions.models import Submission
    from submissions.signals import submission_graded

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


# -- Moodle: timestamps compared to the second, 409 when not later ---------------------------


def _grade_key() -> tuple[str, str]:
    """The platform's key of the learner's grade on the launch's line item."""
    return ("/courses/7/lineitems/1/lineitem", "learner-1")


def _seconds(stamp: str) -> int:
    from datetime import datetime

    return int(datetime.fromisoformat(stamp).timestamp())


def test_score_timestamps_are_a_second_past_the_last_one_to_the_millisecond() -> None:
    from datetime import UTC, datetime, timedelta

    from lti.passback import score_timestamp

    now = datetime(2026, 12, 2, 13, 0, 0, 123456, tzinfo=UTC)
    last = now - timedelta(milliseconds=300)

    assert score_timestamp(None, now) == now.replace(microsecond=123000)
    assert score_timestamp(last, now) == last.replace(microsecond=823000) + timedelta(seconds=1)
    assert score_timestamp(now - timedelta(seconds=5), now) == now.replace(microsecond=123000)


def test_two_gradings_within_a_second_both_reach_moodle(
    graded: Callable[..., list[int]], platform: FakePlatform
) -> None:
    from lti.models import ExerciseLink

    platform.mode = "moodle"
    ExerciseLink.objects.update(score_policy="last")
    outcomes = []
    for score in (5.0, 8.0):  # a quick resubmission: both graded within the same second
        [post_id] = graded(score)
        outcomes.append(_attempt(post_id))

    assert outcomes == ["posted", "posted"]
    assert platform.refusals == []
    first, second = (s.body["timestamp"] for s in platform.scores)
    assert _seconds(second) > _seconds(first)
    assert all(len(s.body["timestamp"].split(".")[1]) == len("123+00:00") for s in platform.scores)
    assert [s.body["scoreGiven"] for s in platform.scores] == [5.0, 8.0]


def test_a_moodle_409_is_retried_with_later_timestamps_until_the_score_lands(
    graded: Callable[..., list[int]], platform: FakePlatform
) -> None:
    from datetime import datetime

    platform.mode = "moodle"
    # The grade was edited in Moodle, whose clock is two seconds ahead of ours, just as the
    # first score arrived: it is refused, however fast or slow this host is.
    platform.edited_ahead_s = 2.0
    [post_id] = graded(6.0)

    outcomes = [_attempt(post_id)]
    while outcomes[-1] == "retry" and len(outcomes) < 4:  # each attempt sends at most twice
        _make_due(post_id)
        outcomes.append(_attempt(post_id))

    assert outcomes[-1] == "posted" and set(outcomes[:-1]) <= {"retry"}
    *refused, accepted = platform.score_attempts
    assert refused and set(refused) == {409} and accepted == 200  # never given up on
    assert all("Refusing score with an earlier timestamp" in said for _, said in platform.refusals)
    stamps = [datetime.fromisoformat(stamp) for stamp in platform.score_stamps]
    assert stamps == sorted(stamps) and len(set(stamps)) == len(stamps)  # later each time
    assert _post(post_id).status == "posted"


# -- Canvas: the submission extension, and refusals shown to the instructor -----------------


def _canvas_extension(score: Any) -> dict[str, Any]:
    return dict(score.body["https://canvas.instructure.com/lti/submission"])


def test_regrades_and_best_score_reposts_are_not_new_canvas_attempts(
    graded: Callable[..., list[int]], platform: FakePlatform
) -> None:
    from django.db import transaction

    from submissions.models import Submission
    from submissions.signals import submission_graded

    platform.mode = "canvas"
    platform.canvas_allowed_attempts = 2
    [first_post] = graded(8.0)  # a new best: attempt 1
    [worse_post] = graded(5.0)  # the best (8) posted again: no attempt
    first = Submission.objects.get(lti_score_posts=first_post)
    with transaction.atomic():  # a regrade of the first submission: no attempt
        Submission.objects.filter(pk=first.pk).update(score=9.0)
        submission_graded(submission_id=first.pk)
    regrade_posts = list(first.lti_score_posts.exclude(pk=first_post).values_list("pk", flat=True))
    [best_post] = graded(10.0)  # a new best: attempt 2

    outcomes = [_attempt(p) for p in [first_post, worse_post, *regrade_posts, best_post]]

    assert outcomes == ["posted"] * 4
    assert [_canvas_extension(s)["new_submission"] for s in platform.scores] == [
        True, False, False, True,
    ]  # fmt: skip
    assert [s.body["scoreGiven"] for s in platform.scores] == [8.0, 8.0, 9.0, 10.0]
    assert platform.canvas_attempts == {_grade_key(): 2}
    assert platform.canvas_comments == []  # no "gradlab submission N" comment
    assert all("comment" not in s.body for s in platform.scores)


def test_the_best_score_is_posted_with_the_time_of_the_submission_that_earned_it(
    graded: Callable[..., list[int]], platform: FakePlatform
) -> None:
    from submissions.models import Submission

    platform.mode = "canvas"
    [on_time] = graded(10.0)
    [late] = graded(4.0)
    earned_at = Submission.objects.get(lti_score_posts=on_time).created_at.isoformat()

    assert [_attempt(on_time), _attempt(late)] == ["posted", "posted"]
    reposted = platform.scores[1]
    assert reposted.body["scoreGiven"] == 10.0
    assert _canvas_extension(reposted)["submitted_at"] == earned_at
    assert reposted.body["submission"]["submittedAt"] == earned_at
    assert platform.canvas_submitted_at == {_grade_key(): earned_at}


def test_a_canvas_timestamp_refusal_is_sent_again_with_a_later_one(
    graded: Callable[..., list[int]], platform: FakePlatform
) -> None:
    platform.mode = "canvas"
    # The result was updated in Canvas, whose clock is 0.9 s ahead of ours, just as the
    # first score arrived; the one sent again at once is a second later than the first.
    platform.edited_ahead_s = 0.9
    [post_id] = graded(7.0)

    assert _attempt(post_id) == "posted"
    assert platform.score_attempts == [400, 200]
    assert "before last updated timestamp" in platform.refusals[0][1]


def test_a_refusal_no_later_post_can_fix_is_shown_to_the_instructor_with_canvas_message(
    graded: Callable[..., list[int]], platform: FakePlatform, bob_instructor: Any
) -> None:
    from django.test import Client
    from django.urls import reverse

    from courses.models import Exercise

    platform.mode = "canvas"
    platform.not_students.add("learner-1")  # e.g. dropped from the course in Canvas
    [post_id] = graded(6.0)

    outcome = _attempt(post_id)
    _make_due(post_id)
    again = _attempt(post_id)
    client = Client()
    client.force_login(bob_instructor)
    module = Exercise.objects.get(slug=EXERCISE).module
    page = client.get(reverse("web:teach_module", args=[module.slug]))

    assert (outcome, again) == ("failed", "skipped")
    refused = _post(post_id)
    assert refused.last_status_code == 422
    assert refused.last_error == "User not found in course or is not a student"
    assert page.status_code == 200
    html = page.content.decode()
    assert 'id="lms-score-failures"' in html
    assert "User not found in course or is not a student" in html


def test_a_refusal_replaced_by_a_later_posted_score_is_no_longer_shown(
    graded: Callable[..., list[int]], platform: FakePlatform
) -> None:
    from lti.passback import score_failures

    platform.mode = "canvas"
    platform.not_students.add("learner-1")
    [refused] = graded(6.0)
    _attempt(refused)
    module_id = _post(refused).submission.exercise.module_id
    shown = score_failures(module_id=module_id)
    platform.not_students.clear()  # back in the course
    [later] = graded(7.0)

    assert _attempt(later) == "posted"
    assert len(shown) == 1 and score_failures(module_id=module_id) == []


def test_a_new_submission_past_canvas_allowed_attempts_is_shown_not_retried(
    graded: Callable[..., list[int]], platform: FakePlatform
) -> None:
    from lti.passback import score_failures

    platform.mode = "canvas"
    platform.canvas_allowed_attempts = 1
    [first] = graded(5.0)
    [second] = graded(9.0)  # a new best, a new attempt: Canvas allows no more

    assert [_attempt(first), _attempt(second)] == ["posted", "failed"]
    [failure] = score_failures(module_id=_post(second).submission.exercise.module_id)
    assert failure.status_code == 422
    assert failure.message.startswith("The maximum number of allowed attempts")


# -- no line item: gradlab creates one where the platform lets it ------------------------------

AGS_CLAIM = "https://purl.imsglobal.org/spec/lti-ags/claim/endpoint"
AGS_SCOPE = "https://purl.imsglobal.org/spec/lti-ags/scope/"


def _launch_without_line_item(launch: Callable[..., Any], platform: FakePlatform,
                              scopes: list[str]) -> Any:  # fmt: skip
    from django.contrib.auth.models import User

    endpoint = {
        "scope": [AGS_SCOPE + scope for scope in scopes],
        "lineitems": f"{platform.base_url}/courses/7/lineitems",
    }
    assert launch(**{AGS_CLAIM: endpoint}).response.status_code == 302
    return User.objects.get(lti_users__sub="learner-1")


def test_a_launch_without_a_line_item_gets_one_created_and_its_scores_land_there(
    launch: Callable[..., Any], grade_of: Callable[..., list[int]], platform: FakePlatform
) -> None:
    from datetime import UTC, datetime

    from courses.models import Exercise
    from lti.models import ExerciseLink

    exercise = Exercise.objects.get(slug=EXERCISE)
    exercise.due_at = datetime(2026, 12, 24, 23, 59, tzinfo=UTC)
    exercise.save(update_fields=["due_at"])
    learner = _launch_without_line_item(launch, platform, ["lineitem", "score"])

    outcomes = []
    for score in (6.0, 9.0):
        [post_id] = grade_of(score, learner)
        outcomes.append(_attempt(post_id))

    assert outcomes == ["posted", "posted"]
    [item] = platform.lineitems_created  # one line item for the link, however many scores
    assert item["scoreMaximum"] == float(exercise.points)
    assert item["label"] == "Autograd 1"  # the resource link's title
    assert item["resourceLinkId"] == "resource-link-1"
    assert item["tag"] == EXERCISE
    assert item["endDateTime"] == "2026-12-24T23:59:00+00:00"
    assert ExerciseLink.objects.get().lineitem_url == item["id"]
    assert {s.path for s in platform.scores} == {
        "/courses/7/lineitems/100/lineitem/scores?type_id=42"
    }
    assert any(AGS_SCOPE + "lineitem" in (r["scope"] or "") for r in platform.token_requests)


def test_without_the_lineitem_scope_no_line_item_is_made_and_no_score_recorded(
    launch: Callable[..., Any], grade_of: Callable[..., list[int]], platform: FakePlatform
) -> None:
    learner = _launch_without_line_item(launch, platform, ["score"])

    assert grade_of(6.0, learner) == []
    assert platform.lineitems_created == []


def test_the_readme_lists_exactly_the_scopes_the_code_requests() -> None:
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    scope = re.compile(r"https://purl\.imsglobal\.org/spec/lti-[a-z]+/scope/[A-Za-z.]*[A-Za-z]")
    in_code = {
        m for f in (root / "platform/lti").glob("*.py") for m in scope.findall(f.read_text())
    }
    readme = (root / "docs" / "lti.md").read_text(encoding="utf-8")
    section = readme.split("## Add gradlab to your LMS", 1)[1].split("\n## ", 1)[0]
    [services] = [line for line in section.splitlines() if line.startswith("| Services")]

    assert set(scope.findall(services)) == in_code
