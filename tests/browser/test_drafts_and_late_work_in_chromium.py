"""Unsent code and late work in Chromium, under the strict CSP: the editor's code is saved
as a draft as the learner types and comes back after a reload and after signing in again
once the session expired; "Reset to the starter code" and "Load this attempt" fill the
editor; a late submission that does not count says so on the module and exercise pages,
and an instructor sees whose scores a late-policy change alters before applying it.
Screenshots: test-artifacts/screenshots/drafts-*.png and late-*.png. No worker runs."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone
from gradlab_fixtures import PASSWORD

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

MODULE = "autograd-backprop"
SLUG = "chain-rule"
EDITOR = "#code-editor .cm-content"
CODE = "import torch\nx = torch.tensor(2.0, requires_grad=True)  # unsent\n"


def _open(page: Any, base_url: str) -> None:
    page.goto(f"{base_url}/modules/{MODULE}/{SLUG}/")
    page.wait_for_selector(EDITOR)


def _type(page: Any, code: str) -> None:
    page.locator(EDITOR).click()
    page.keyboard.press("Control+A")
    page.keyboard.press("Delete")
    page.keyboard.insert_text(code)


def _draft_status(page: Any, start: str) -> None:
    script = "(start) => document.getElementById('draft-status').textContent.startsWith(start)"
    page.wait_for_function(script, arg=start)


def _editor(page: Any) -> str:
    return str(page.input_value("textarea#id_code"))


def _starter() -> str:
    from courses.models import Exercise

    version = Exercise.objects.get(slug=SLUG).current_version
    assert version is not None
    return version.starter_code


def test_a_reload_keeps_the_unsent_code(
    live_server: Any, signed_in: Any, alice_learner: Any, screenshot: Any, page_problems: Any
) -> None:
    page = signed_in(alice_learner)
    _open(page, live_server.url)
    _type(page, CODE)
    _draft_status(page, "Draft saved")

    page.reload()
    page.wait_for_selector(EDITOR)

    assert _editor(page) == CODE
    assert page.locator("#editor-origin").inner_text().startswith("Restored your unsent code")
    screenshot(page, "drafts-after-reload")
    assert page_problems.errors == []  # no CSP violation, no script error


def test_reset_to_the_starter_by_keyboard_fills_the_editor_and_is_kept(
    live_server: Any, signed_in: Any, alice_learner: Any, page_problems: Any
) -> None:
    page = signed_in(alice_learner)
    _open(page, live_server.url)
    _type(page, CODE)
    _draft_status(page, "Draft saved")

    reset = page.get_by_role("button", name="Reset to the starter code")
    reset.focus()
    page.keyboard.press("Enter")
    _draft_status(page, "Draft saved")
    page.reload()
    page.wait_for_selector(EDITOR)

    assert _editor(page) == _starter()
    assert page_problems.errors == []


def test_load_this_attempt_puts_an_earlier_submissions_code_in_the_editor(
    live_server: Any, signed_in: Any, alice_learner: Any, screenshot: Any
) -> None:
    from courses.models import Exercise
    from submissions.models import Submission

    exercise = Exercise.objects.get(slug=SLUG)
    attempt = Submission.objects.create(
        learner=alice_learner, exercise=exercise, version=exercise.current_version,
        code="x = 'attempt one'\n", status=Submission.Status.GRADED, score=1.0,
        max_score=10.0, passed=False, report={"status": "graded", "checks": []},
    )  # fmt: skip
    page = signed_in(alice_learner)
    _open(page, live_server.url)
    _type(page, CODE)

    page.locator("#history summary span").first.click()  # opens the attempt (not its link)
    page.get_by_role("button", name="Load this attempt into the editor").click()

    assert _editor(page) == attempt.code
    origin = page.locator("#editor-origin").inner_text()
    assert origin.startswith(f"Loaded submission #{attempt.pk}")
    screenshot(page, "drafts-load-attempt")


def test_code_typed_after_the_session_expired_is_kept_across_signing_in_again(
    live_server: Any, signed_in: Any, alice_learner: Any
) -> None:
    from submissions.models import Draft

    page = signed_in(alice_learner)
    _open(page, live_server.url)
    page.context.clear_cookies(name="sessionid")  # as the session's expiry would
    _type(page, CODE)
    _draft_status(page, "Not saved: your session expired")

    page.goto(f"{live_server.url}/accounts/login/")  # signing in again, in the same browser
    page.get_by_label("Username").fill(alice_learner.get_username())
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(lambda url: "/accounts/login/" not in url)
    _open(page, live_server.url)
    _draft_status(page, "Draft saved")

    assert _editor(page) == CODE
    assert Draft.objects.get(learner=alice_learner).code == CODE


def test_late_work_that_does_not_count_is_explained_to_the_learner_and_previewed_for_the_instructor(
    live_server: Any, signed_in: Any, alice_learner: Any, bob_instructor: Any, screenshot: Any
) -> None:
    from authoring.services import exercise_schedule_set
    from courses.models import Exercise
    from submissions.models import Submission

    exercise = Exercise.objects.get(slug=SLUG)
    due = timezone.now() - timedelta(days=1)
    exercise_schedule_set(exercise=exercise, release_at=None, due_at=due, late_counts=True)
    Submission.objects.create(
        learner=alice_learner, exercise=exercise, version=exercise.current_version,
        code="x = 1\n", status=Submission.Status.GRADED, score=10.0, max_score=10.0,
        passed=True, late=True,
        report={"status": "graded", "score": 10.0, "max_score": 10.0, "passed": True,
                "checks": []},
    )  # fmt: skip

    teacher = signed_in(bob_instructor)
    teacher.goto(f"{live_server.url}/teach/{MODULE}/exercises/{SLUG}/")
    teacher.get_by_label("late submissions count").uncheck()
    teacher.get_by_role("button", name="Preview whose scores change").click()
    teacher.wait_for_selector("#late-policy-changes")
    assert "alice_learner" in teacher.locator("#late-policy-changes").inner_text()
    screenshot(teacher, "late-policy-preview")
    teacher.get_by_role("button", name="Apply: change 1 score").click()
    teacher.wait_for_url(f"**/teach/{MODULE}/exercises/{SLUG}/")

    learner = signed_in(alice_learner)
    learner.goto(f"{live_server.url}/modules/{MODULE}/")
    row = learner.locator(f'tr[data-exercise="{SLUG}"]')
    assert "late: does not count" in row.inner_text()
    assert "1 late submission not counted" in row.inner_text()
    screenshot(learner, "late-module-page")
    _open(learner, live_server.url)
    assert "do not count" in learner.get_by_test_id("deadline").inner_text()
    assert "does not count towards your grade" in learner.get_by_test_id("late-note").inner_text()
    screenshot(learner, "late-exercise-page")
