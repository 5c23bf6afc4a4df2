"""Feedback in Chromium, under the strict CSP: the line a syntax error names is marked in
the editor while it holds that submission's code, and the mark goes once the learner
types. Screenshot: test-artifacts/screenshots/feedback-error-line.png. No worker runs."""

from __future__ import annotations

from typing import Any

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

MODULE = "autograd-backprop"
SLUG = "chain-rule"
EDITOR = "#code-editor .cm-content"
MARKED = "#code-editor .cm-problem-line"
CODE = "import torch\nx = torch.tensor(5.0\ny = x * 2\n"
NEVER_CLOSED = "'(' was never closed"


def _crashed_submission(learner: Any) -> Any:
    from courses.models import Exercise
    from submissions.models import Submission

    exercise = Exercise.objects.get(slug=SLUG)
    check = {
        "name": "x.grad equals 60", "passed": False, "score": 0.0, "max_score": 4.0,
        "message": f"x is not defined (your code stopped with SyntaxError: {NEVER_CLOSED})",
        "diagnosis": "crashed", "hint": "", "data": {},
    }  # fmt: skip
    report = {
        "status": "graded", "score": 0.0, "max_score": 10.0, "passed": False, "message": "",
        "checks": [check], "stdout": "", "curves": None,
        "exception": {
            "type": "SyntaxError", "message": NEVER_CLOSED, "line": 2,
            "traceback": f'  File "submission.py", line 2\nSyntaxError: {NEVER_CLOSED}\n',
        },
    }  # fmt: skip
    return Submission.objects.create(
        learner=learner, exercise=exercise, version=exercise.current_version, code=CODE,
        status=Submission.Status.GRADED, score=0.0, max_score=10.0, passed=False,
        report=report,
    )  # fmt: skip


def test_the_line_of_a_syntax_error_is_marked_in_the_editor_until_the_learner_types(
    live_server: Any, signed_in: Any, alice_learner: Any, screenshot: Any, page_problems: Any
) -> None:
    _crashed_submission(alice_learner)
    page = signed_in(alice_learner)
    page.goto(f"{live_server.url}/modules/{MODULE}/{SLUG}/")
    page.wait_for_selector(EDITOR)

    marked = page.locator(MARKED)
    marked.wait_for()
    assert marked.count() == 1
    assert marked.inner_text() == "x = torch.tensor(5.0"
    crash = page.locator('[data-testid="crash"]')
    assert crash.get_by_role("heading").inner_text() == "Your code raised SyntaxError on line 2"
    screenshot(page, "feedback-error-line")

    page.locator(EDITOR).click()
    page.keyboard.press("End")
    page.keyboard.type(")")
    page.wait_for_selector(MARKED, state="detached")
    assert page_problems.errors == []  # no CSP violation, no script error
