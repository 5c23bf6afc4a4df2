"""The integrity hold: a report that carries integrity flags keeps its score from the
learner (pages and API say "held for review", and nothing of why) until an instructor of
the module releases it (the grader's score counts) or rejects it (0), who and when kept."""

from __future__ import annotations

import csv
import io
from typing import Any

import pytest
from django.urls import reverse
from gradlab_fixtures import MODULE_SLUG
from platform_helpers import E2E_SLUG

from grader.protocol import CheckResult, IntegrityFlag, Report

pytestmark = pytest.mark.django_db

FLAG_DETAIL = "ctypes imported, audit hook saw it"
CHECK_NAME = "x.grad equals dz/dx"


def _report(*, flagged: bool, score: float = 7.0) -> Report:
    return Report(
        status="graded",
        score=score,
        max_score=10.0,
        passed=score == 10.0,
        checks=(CheckResult(CHECK_NAME, score == 10.0, score, 10.0, "x.grad is 60", data={}),),
        stdout="printed by the learner",
        integrity_flags=(IntegrityFlag("tamper", FLAG_DETAIL),) if flagged else (),
    )


def _graded(learner: Any, report: Report) -> Any:
    """A submission graded with `report` through the worker's own claim and final write."""
    from common import jobs
    from submissions.models import Submission
    from submissions.services import SUBMISSIONS, _finish_graded, submission_create

    submission, _ = submission_create(learner=learner, exercise_slug=E2E_SLUG, code="x = 1")
    attempt = jobs.job_claim(SUBMISSIONS, job_id=submission.pk)
    assert attempt is not None and _finish_graded(submission.pk, attempt, report)
    return Submission.objects.get(pk=submission.pk)


@pytest.fixture(autouse=True)
def _no_worker_listens(settings: Any) -> None:
    settings.GRADLAB_QUEUE_CPU = "grading-unconsumed-integrity-test"


@pytest.fixture
def held(alice_learner: Any) -> Any:
    return _graded(alice_learner, _report(flagged=True))


def _review(client: Any, submission: Any, decision: str) -> Any:
    url = reverse("web:review_submission", args=[MODULE_SLUG, submission.pk])
    return client.post(url, {"decision": decision, "confirmed": "yes"})


# -- the hold -----------------------------------------------------------------------------


def test_a_flagged_report_holds_the_submission_with_no_score(held: Any) -> None:
    assert held.status == "graded" and held.review == "held"
    assert held.score is None and held.passed is None
    assert held.report["score"] == 7.0  # the grader's, kept for the review
    assert held.report["integrity_flags"] == [{"kind": "tamper", "detail": FLAG_DETAIL}]


def test_a_clean_report_is_not_held(alice_learner: Any) -> None:
    clean = _graded(alice_learner, _report(flagged=False))

    assert clean.review == "" and clean.score == 7.0


def test_the_api_tells_the_learner_it_is_held_and_nothing_more(
    api: Any, alice_learner: Any, held: Any
) -> None:
    response = api(alice_learner).get(reverse("api:submission-detail", args=[held.pk]))

    body = response.json()
    assert response.status_code == 200
    assert body["held_for_review"] is True and body["status"] == "graded"
    assert body["score"] is None and body["passed"] is None
    assert body["checks"] == [] and body["message"] == ""
    assert (
        "tamper" not in response.content.decode() and FLAG_DETAIL not in response.content.decode()
    )
    listed = api(alice_learner).get(reverse("api:submission-list")).json()["results"]
    assert listed[0]["held_for_review"] is True and listed[0]["checks"] == []


def test_an_instructor_sees_the_checks_of_a_held_submission_in_the_api(
    api: Any, bob_instructor: Any, held: Any
) -> None:
    body = api(bob_instructor).get(reverse("api:submission-detail", args=[held.pk])).json()

    assert body["held_for_review"] is True
    assert [c["name"] for c in body["checks"]] == [CHECK_NAME]


def test_a_clean_submission_says_it_is_not_held_in_the_api(api: Any, alice_learner: Any) -> None:
    clean = _graded(alice_learner, _report(flagged=False))

    body = api(alice_learner).get(reverse("api:submission-detail", args=[clean.pk])).json()

    assert body["held_for_review"] is False and body["score"] == 7.0


def test_the_learners_pages_say_held_for_review_without_score_or_reason(
    web: Any, alice_learner: Any, held: Any
) -> None:
    alice = web(alice_learner)
    pages = {
        "submission": alice.get(reverse("web:submission", args=[held.pk])).content.decode(),
        "exercise": alice.get(
            reverse("web:exercise", args=[MODULE_SLUG, E2E_SLUG])
        ).content.decode(),
        "module": alice.get(reverse("web:module", args=[MODULE_SLUG])).content.decode(),
    }
    status = alice.get(reverse("web:submission_status", args=[held.pk])).json()

    for name, html in pages.items():
        assert "held for review" in html, name
        for secret in (CHECK_NAME, FLAG_DETAIL, "tamper", "printed by the learner", "7 / 10"):
            assert secret not in html, (name, secret)
    assert status["held_for_review"] is True and status["score"] is None
    assert CHECK_NAME not in status["feedback_html"]


# -- the review ---------------------------------------------------------------------------


def test_the_instructor_sees_the_reasons_on_the_submission_page_the_learner_never_does(
    web: Any, alice_learner: Any, bob_instructor: Any, held: Any
) -> None:
    url = reverse("web:submission", args=[held.pk])
    teacher_view = web(bob_instructor).get(url).content.decode()
    assert "Integrity review: held for review." in teacher_view and FLAG_DETAIL in teacher_view
    assert CHECK_NAME in teacher_view  # the grader's feedback, to judge it

    _review(web(bob_instructor), held, "release")

    learner_view = web(alice_learner).get(url).content.decode()
    assert CHECK_NAME in learner_view  # released: the feedback is the learner's again
    assert "Integrity review" not in learner_view and FLAG_DETAIL not in learner_view


def test_the_instructor_page_lists_held_submissions_with_their_reasons(
    web: Any, bob_instructor: Any, held: Any
) -> None:
    html = web(bob_instructor).get(reverse("web:teach_module", args=[MODULE_SLUG])).content.decode()

    assert f'data-submission="{held.pk}"' in html
    assert FLAG_DETAIL in html and "alice_learner" in html
    assert reverse("web:review_submission", args=[MODULE_SLUG, held.pk]) in html


def test_releasing_counts_the_graders_score_and_records_who_and_when(
    web: Any, api: Any, alice_learner: Any, bob_instructor: Any, held: Any
) -> None:
    response = _review(web(bob_instructor), held, "release")

    assert response.status_code == 302
    held.refresh_from_db()
    assert (held.review, held.score, held.passed) == ("released", 7.0, False)
    assert held.reviewed_by == bob_instructor and held.reviewed_at is not None
    body = api(alice_learner).get(reverse("api:submission-detail", args=[held.pk])).json()
    assert body["held_for_review"] is False and body["score"] == 7.0 and body["checks"]
    grades = web(bob_instructor).get(reverse("web:grades_csv", args=[MODULE_SLUG]))
    rows = csv.DictReader(io.StringIO(grades.content.decode()))
    assert next(r for r in rows if r["username"] == "alice_learner")[E2E_SLUG] == "7"
    page = web(bob_instructor).get(reverse("web:teach_module", args=[MODULE_SLUG])).content.decode()
    assert "released after review by bob_instructor" in page


def test_a_co_instructor_may_reject_which_scores_zero(
    web: Any, api: Any, alice_learner: Any, erin_co_instructor: Any, held: Any
) -> None:
    assert _review(web(erin_co_instructor), held, "reject").status_code == 302

    held.refresh_from_db()
    assert (held.review, held.score, held.passed) == ("rejected", 0.0, False)
    assert held.reviewed_by == erin_co_instructor
    body = api(alice_learner).get(reverse("api:submission-detail", args=[held.pk])).json()
    assert body["held_for_review"] is False and body["score"] == 0.0


@pytest.mark.parametrize("reviewer", ["alice_learner", "dave_learner", "carol_other_course"])
def test_only_those_who_teach_the_module_may_review(
    request: Any, web: Any, held: Any, reviewer: str
) -> None:
    response = _review(web(request.getfixturevalue(reviewer)), held, "release")

    assert response.status_code == 403
    held.refresh_from_db()
    assert held.review == "held" and held.score is None


def test_a_decision_is_taken_once(web: Any, bob_instructor: Any, sam_staff: Any, held: Any) -> None:
    assert _review(web(bob_instructor), held, "reject").status_code == 302

    again = _review(web(sam_staff), held, "release")

    assert again.status_code == 409
    held.refresh_from_db()
    assert (held.review, held.score, held.reviewed_by) == ("rejected", 0.0, bob_instructor)


def test_an_unknown_decision_is_a_400_that_changes_nothing(
    web: Any, bob_instructor: Any, held: Any
) -> None:
    response = _review(web(bob_instructor), held, "approve-everything")

    assert response.status_code == 400
    assert "release" in response.content.decode()
    held.refresh_from_db()
    assert held.review == "held"


def test_a_submission_of_another_module_cannot_be_reviewed_through_this_one(
    web: Any, carol_other_course: Any, held: Any
) -> None:
    url = reverse("web:review_submission", args=["other-course", held.pk])

    assert web(carol_other_course).post(url, {"decision": "release"}).status_code == 404
    held.refresh_from_db()
    assert held.review == "held"


# -- regrades -----------------------------------------------------------------------------


def test_a_regrade_keeps_the_hold_and_a_release_keeps_counting(
    alice_learner: Any, bob_instructor: Any, held: Any
) -> None:
    from courses.models import Module
    from submissions.services import _apply_regrade, submission_review

    _apply_regrade(held, held.version_id, _report(flagged=True, score=10.0))
    held.refresh_from_db()
    assert held.review == "held" and held.score is None

    submission_review(
        submission_id=held.pk, module=Module.objects.get(slug=MODULE_SLUG),
        reviewer=bob_instructor, decision="release",
    )  # fmt: skip
    held.refresh_from_db()
    change = _apply_regrade(held, held.version_id, _report(flagged=True, score=4.0))
    held.refresh_from_db()
    assert held.review == "released" and held.score == 4.0
    assert change is not None and (change.old_score, change.new_score) == (10.0, 4.0)
