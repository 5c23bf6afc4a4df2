"""A submission held for review reads the same everywhere: no pass/fail banner or score
shown as final, each integrity flag once, Release/Reject on the submission's own page, a
confirmation before any decision, and an undo, each decision logged (who, when, what)."""

from __future__ import annotations

from typing import Any

import pytest
from django.urls import reverse
from gradlab_fixtures import MODULE_SLUG
from platform_helpers import E2E_SLUG

from grader.protocol import CheckResult, IntegrityFlag, Report

pytestmark = pytest.mark.django_db

FLAG = IntegrityFlag("tamper", "ctypes imported, audit hook saw it")
CHECK_NAME = "x.grad equals dz/dx"


def _report() -> Report:
    """A full-marks report that carries the same integrity flag twice, and another."""
    return Report(
        status="graded",
        score=10.0,
        max_score=10.0,
        passed=True,
        checks=(CheckResult(CHECK_NAME, True, 10.0, 10.0, "", data={}),),
        integrity_flags=(FLAG, FLAG, IntegrityFlag("gc", "gc.get_objects called")),
    )


@pytest.fixture(autouse=True)
def _no_worker_listens(settings: Any) -> None:
    settings.GRADLAB_QUEUE_CPU = "grading-unconsumed-held-view-test"


@pytest.fixture
def held(alice_learner: Any) -> Any:
    """A submission graded through the worker's own claim and final write: held."""
    from common import jobs
    from submissions.models import Submission
    from submissions.services import SUBMISSIONS, _finish_graded, submission_create

    submission, _ = submission_create(learner=alice_learner, exercise_slug=E2E_SLUG, code="x = 1")
    attempt = jobs.job_claim(SUBMISSIONS, job_id=submission.pk)
    assert attempt is not None and _finish_graded(submission.pk, attempt, _report())
    return Submission.objects.get(pk=submission.pk)


def _page(client: Any, submission: Any) -> str:
    return client.get(reverse("web:submission", args=[submission.pk])).content.decode()


def _post(client: Any, submission: Any, decision: str, **extra: str) -> Any:
    url = reverse("web:review_submission", args=[MODULE_SLUG, submission.pk])
    return client.post(url, {"decision": decision, **extra})


def test_the_instructor_sees_held_for_review_not_a_pass_or_fail_banner(
    web: Any, bob_instructor: Any, held: Any
) -> None:
    html = _page(web(bob_instructor), held)

    assert 'data-testid="held-banner"' in html and "Not final" in html
    assert "Full marks" not in html and "Not yet:" not in html
    assert 'class="score-banner failing"' not in html and 'class="score-banner passed"' not in html


def test_the_learner_is_told_what_held_for_review_means(
    web: Any, alice_learner: Any, held: Any
) -> None:
    html = _page(web(alice_learner), held)

    assert "held for review" in html and "does not count yet" in html
    assert "score-banner" not in html and "10 / 10" not in html


def test_each_integrity_flag_is_listed_once_on_both_instructor_pages(
    web: Any, bob_instructor: Any, held: Any
) -> None:
    bob = web(bob_instructor)
    submission_page = _page(bob, held)
    teach_page = bob.get(reverse("web:teach_module", args=[MODULE_SLUG])).content.decode()

    for html in (submission_page, teach_page):
        assert html.count(FLAG.detail) == 1
        assert html.count("gc.get_objects called") == 1


def test_the_submission_page_offers_release_and_reject_to_those_who_teach(
    web: Any, alice_learner: Any, bob_instructor: Any, held: Any
) -> None:
    review_url = reverse("web:review_submission", args=[MODULE_SLUG, held.pk])

    teacher = _page(web(bob_instructor), held)
    learner = _page(web(alice_learner), held)

    assert review_url in teacher and 'value="release"' in teacher and 'value="reject"' in teacher
    assert review_url not in learner and 'value="release"' not in learner


def test_a_decision_asks_for_confirmation_and_changes_nothing_until_confirmed(
    web: Any, bob_instructor: Any, held: Any
) -> None:
    response = _post(web(bob_instructor), held, "release")

    assert response.status_code == 200
    html = response.content.decode()
    assert 'data-testid="review-confirm"' in html and 'name="confirmed" value="yes"' in html
    assert "10 / 10" in html  # what releasing would count
    held.refresh_from_db()
    assert held.review == "held" and held.score is None


def test_a_confirmed_release_returns_to_the_submission_page_and_is_logged(
    web: Any, bob_instructor: Any, held: Any
) -> None:
    response = _post(web(bob_instructor), held, "release", confirmed="yes", back="submission")

    assert response.status_code == 302
    assert response.url == reverse("web:submission", args=[held.pk])
    held.refresh_from_db()
    assert (held.review, held.score, held.passed) == ("released", 10.0, True)
    (decision,) = held.review_decisions.all()
    assert (decision.action, decision.decided_by) == ("released", bob_instructor)
    assert decision.decided_at is not None


def test_an_undo_puts_the_submission_back_on_hold_and_logs_both_decisions(
    web: Any, api: Any, alice_learner: Any, bob_instructor: Any, erin_co_instructor: Any, held: Any
) -> None:
    _post(web(bob_instructor), held, "reject", confirmed="yes")

    response = _post(web(erin_co_instructor), held, "undo", confirmed="yes")

    assert response.status_code == 302
    held.refresh_from_db()
    assert (held.review, held.score, held.passed, held.reviewed_by) == ("held", None, None, None)
    log = [(d.action, d.decided_by) for d in held.review_decisions.all()]
    assert log == [("rejected", bob_instructor), ("undone", erin_co_instructor)]
    body = api(alice_learner).get(reverse("api:submission-detail", args=[held.pk])).json()
    assert body["held_for_review"] is True and body["score"] is None
    page = _page(web(bob_instructor), held)
    assert 'data-testid="review-log"' in page
    assert (
        "rejected by bob_instructor" in page and "undid the decision by erin_co_instructor" in page
    )
    assert 'value="release"' in page  # decidable again


def test_a_decided_submission_offers_undo_and_an_undecided_one_refuses_it(
    web: Any, bob_instructor: Any, held: Any
) -> None:
    bob = web(bob_instructor)
    assert _post(bob, held, "undo", confirmed="yes").status_code == 409
    assert _post(bob, held, "undo").status_code == 409  # nothing to confirm either

    _post(bob, held, "release", confirmed="yes")

    assert 'value="undo"' in _page(bob, held)
    teach = bob.get(reverse("web:teach_module", args=[MODULE_SLUG])).content.decode()
    assert 'value="undo"' in teach


def test_only_those_who_teach_reach_the_confirmation(
    web: Any, alice_learner: Any, held: Any
) -> None:
    assert _post(web(alice_learner), held, "release").status_code == 403
    held.refresh_from_db()
    assert held.review == "held" and not held.review_decisions.exists()
