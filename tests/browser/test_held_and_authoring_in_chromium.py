"""In Chromium, under the strict CSP: the exercise editor warns before leaving with unsaved
changes and Ctrl+S saves them (no warning on its own submit); an instructor releases a held
submission from its own page through a confirmation, then undoes it, each decision logged.
Screenshots: test-artifacts/screenshots/held-*.png and authoring-unsaved-*.png. No worker
runs: the held submission is written by the worker's own final write."""

from __future__ import annotations

from typing import Any

import pytest
from gradlab_fixtures import MODULE_SLUG

from grader.protocol import CheckResult, IntegrityFlag, Report

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SLUG = "chain-rule"
STATEMENT_EDITOR = "#statement-text-editor .cm-content"
ADDED = "Added in the browser."


def _editor_url(base: str) -> str:
    return f"{base}/teach/{MODULE_SLUG}/author/{SLUG}/"


def _type_at_end(page: Any, text: str) -> None:
    page.locator(STATEMENT_EDITOR).click()
    page.keyboard.press("Control+End")
    page.keyboard.insert_text(f"\n{text}\n")


def _draft_statement() -> str:
    from authoring.services import draft_get
    from courses.models import Exercise

    return dict(draft_get(exercise=Exercise.objects.get(slug=SLUG)).version.files)["statement.md"]


def test_the_editor_warns_before_leaving_unsaved_changes_and_ctrl_s_saves_them(
    live_server: Any, signed_in: Any, bob_instructor: Any, screenshot: Any, page_problems: Any
) -> None:
    page = signed_in(bob_instructor)
    dialogs: list[str] = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.type), dialog.accept()))
    page.goto(_editor_url(live_server.url))
    page.wait_for_selector(STATEMENT_EDITOR)
    assert page.locator("#unsaved-note").is_hidden()

    _type_at_end(page, "Typed, then left.")
    page.wait_for_selector("#unsaved-note", state="visible")
    screenshot(page, "authoring-unsaved-note")
    page.goto(f"{live_server.url}/teach/{MODULE_SLUG}/")  # leaving asks first

    assert dialogs == ["beforeunload"]
    assert ADDED not in _draft_statement() and "Typed, then left." not in _draft_statement()

    page.goto(_editor_url(live_server.url))
    page.wait_for_selector(STATEMENT_EDITOR)
    _type_at_end(page, ADDED)
    with page.expect_navigation():
        page.keyboard.press("Control+S")

    assert dialogs == ["beforeunload"]  # the form's own save leaves without asking
    assert "Draft saved." in page.locator(".messages").inner_text()
    assert ADDED in _draft_statement()
    page.goto(f"{live_server.url}/teach/{MODULE_SLUG}/")  # saved: nothing to warn about
    assert dialogs == ["beforeunload"]
    assert page_problems.errors == []  # no CSP violation, no script error


def _held(learner: Any) -> int:
    from common import jobs
    from submissions.services import SUBMISSIONS, _finish_graded, submission_create

    report = Report(
        status="graded", score=10.0, max_score=10.0, passed=True,
        checks=(CheckResult("x.grad is right", True, 10.0, 10.0, "", data={}),),
        integrity_flags=(IntegrityFlag("tamper", "ctypes imported"),) * 2,
    )  # fmt: skip
    submission, _ = submission_create(learner=learner, exercise_slug=SLUG, code="x = 1")
    attempt = jobs.job_claim(SUBMISSIONS, job_id=submission.pk)
    assert attempt is not None and _finish_graded(submission.pk, attempt, report)
    return int(submission.pk)


def test_a_release_is_confirmed_on_the_submission_page_and_can_be_undone(
    live_server: Any,
    signed_in: Any,
    bob_instructor: Any,
    alice_learner: Any,
    screenshot: Any,
    page_problems: Any,
    settings: Any,
) -> None:
    settings.GRADLAB_QUEUE_CPU = "grading-unconsumed-held-browser-test"
    submission_id = _held(alice_learner)
    page = signed_in(bob_instructor)
    url = f"{live_server.url}/submissions/{submission_id}/"

    page.goto(url)
    assert page.get_by_test_id("held-banner").is_visible()
    assert page.locator(".score-banner.failing, .score-banner.passed").count() == 0
    assert page.get_by_text("ctypes imported").count() == 1  # the flag once
    screenshot(page, "held-instructor-submission")
    page.get_by_role("button", name="Release").click()

    page.wait_for_selector("[data-testid=review-confirm]")
    screenshot(page, "held-release-confirm")
    page.get_by_role("button", name="Yes, release").click()

    page.wait_for_url(url)
    review = page.locator("#review")
    assert "Released after review by bob_instructor" in review.inner_text()
    page.get_by_role("button", name="Undo this decision").click()
    page.get_by_role("button", name="Yes, undo it").click()

    page.wait_for_url(url)
    log = page.get_by_test_id("review-log").inner_text()
    assert "released by bob_instructor" in log and "undid the decision by bob_instructor" in log
    assert page.get_by_role("button", name="Release").is_visible()
    assert page.get_by_test_id("held-banner").is_visible()
    screenshot(page, "held-after-undo")
    assert page_problems.errors == []
