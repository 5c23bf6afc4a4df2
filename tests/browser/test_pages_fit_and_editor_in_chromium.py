"""In real Chromium: every page fits a 1366-pixel laptop, a 768-pixel tablet and a
390-pixel phone (no sideways scrolling, every table inside its card, table rows as stacked
cards where the card is narrow), with real failing feedback graded by a real worker; and
the CodeMirror 6 editor highlights Python and submits on Ctrl+Enter.

Screenshots: test-artifacts/screenshots/fit-<screen>-<page>.png and editor-*.png.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from gradlab_fixtures import MODULE_SLUG, purge_queue, wait_for
from page_fit import PHONE, overflows_on_every_screen

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

ROOT = Path(__file__).resolve().parents[2]
# Answers whose feedback is the hardest to lay out: failing checks with expected-vs-yours
# values, a named mistake, a traceback, a loss curve.
FAILING_ANSWERS = (
    ("first-gradient", "wrong/sign-error.py"),
    ("chain-rule", "wrong/forgot-requires-grad.py"),
    ("training-loop", "wrong/lr-too-high.py"),
)
TYPED_LINES = ("def double(x):", "return x * 2  # twice")
TYPED_CODE = "def double(x):\n    return x * 2  # twice"
SUBMIT_TIMEOUT_S = 15.0


def answer(slug: str, relative: str) -> str:
    return (ROOT / "exercises" / slug / relative).read_text()


def graded(submission_id: int) -> Any:
    """The submission once graded (for wait_for), None while it is still pending."""
    from submissions.models import Submission

    submission = Submission.objects.get(pk=submission_id)
    if submission.status in (Submission.Status.QUEUED, Submission.Status.RUNNING):
        return None
    assert submission.status == Submission.Status.GRADED, submission.error_message
    return submission


def grade_failing_answers(learner: Any) -> list[Any]:
    """Each answer graded by the worker, one after the other (a loaded 2-core machine
    grades one at a time within the sandbox's wall-clock limit)."""
    from submissions.services import submission_create

    done = []
    for slug, path in FAILING_ANSWERS:
        submission, _ = submission_create(
            learner=learner, exercise_slug=slug, code=answer(slug, path)
        )
        done.append(wait_for(lambda s=submission: graded(s.pk), what=f"grading {slug}"))
    assert not any(s.passed for s in done)
    return done


def url(live_server: Any, name: str, *args: Any) -> str:
    from django.urls import reverse

    return live_server.url + reverse(f"web:{name}", args=args)


def stacked_layout(page: Any, selector: str) -> str:
    return str(page.eval_on_selector(selector, "el => getComputedStyle(el).display"))


def test_every_page_fits_a_laptop_a_tablet_and_a_phone_where_a_failing_check_is_a_card(
    live_server: Any,
    signed_in: Any,
    alice_learner: Any,
    bob_instructor: Any,
    grading_worker: Any,
    screenshot: Any,
    page_problems: Any,
) -> None:
    first, _, curve = grade_failing_answers(alice_learner)
    learner_pages = {
        "home": url(live_server, "home"),
        "module": url(live_server, "module", MODULE_SLUG),
        "exercise-feedback": url(live_server, "exercise", MODULE_SLUG, "first-gradient"),
        "exercise-traceback": url(live_server, "exercise", MODULE_SLUG, "chain-rule"),
        "submission-curve": url(live_server, "submission", curve.pk),
    }
    instructor_pages = {
        "teach-module": url(live_server, "teach_module", MODULE_SLUG),
        "teach-exercise": url(live_server, "teach_exercise", MODULE_SLUG, "first-gradient"),
        "teach-learner": url(live_server, "teach_learner", MODULE_SLUG, alice_learner.pk),
        "learner-submission": url(live_server, "submission", first.pk),
    }

    found = overflows_on_every_screen(signed_in, alice_learner, learner_pages, screenshot)
    found |= overflows_on_every_screen(signed_in, bob_instructor, instructor_pages, screenshot)

    assert found == {}
    phone = signed_in(alice_learner, PHONE, is_mobile=True, has_touch=True)
    phone.goto(learner_pages["exercise-feedback"])
    assert_a_failing_check_is_a_card_with_points_and_values_in_view(phone, screenshot)
    assert page_problems.errors == []


def assert_a_failing_check_is_a_card_with_points_and_values_in_view(
    page: Any, screenshot: Any
) -> None:
    """On a phone: the checks table's rows are cards (its column headings become the
    cells' labels), a failing check's points, details and expected-vs-yours values are
    within the screen, and the values are stacked label: value lines."""
    failed = page.locator("#feedback table.checks-table > tbody > tr.failed").first
    values = failed.locator("table.values-table")
    values.scroll_into_view_if_needed()
    screenshot(page, "fit-390-check-card")

    assert stacked_layout(page, "#feedback table.checks-table > tbody > tr") == "grid"
    assert stacked_layout(page, "#feedback table.values-table > tbody > tr") == "block"
    header = page.locator("#feedback table.checks-table > thead").bounding_box()
    assert header is None or header["width"] <= 1  # column headings become cell labels
    checks = page.get_by_role("table", name="Checks")  # still a table to a screen reader
    assert checks.get_by_role("columnheader", name="Points").count() == 1
    width = PHONE["width"]
    for cell in (failed.locator("td.num"), failed.locator("td.details"), values):
        box = cell.bounding_box()
        assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= width, box
    expected = values.locator("td[data-label=expected]").first.inner_text()
    yours = values.locator("td[data-label=yours]").first.inner_text()
    assert expected and yours and expected != yours


def test_the_editor_is_codemirror_6_highlights_python_and_ctrl_enter_submits_what_was_typed(
    live_server: Any,
    signed_in: Any,
    alice_learner: Any,
    worker_queue: str,
    screenshot: Any,
    page_problems: Any,
) -> None:
    from submissions.models import Submission

    page = signed_in(alice_learner)
    page.goto(url(live_server, "exercise", MODULE_SLUG, "first-gradient"))
    content = page.locator("#code-editor .cm-editor .cm-content")
    content.wait_for()
    assert page.locator("textarea#id_code").is_hidden()  # the form field, kept in step
    assert content.get_attribute("aria-label") == "Python code"

    content.click()
    page.keyboard.press("Control+A")
    page.keyboard.press("Delete")
    page.keyboard.type(TYPED_LINES[0])  # "(" closes itself; typing ")" steps over it
    page.keyboard.press("Enter")  # indents the body of the def
    page.keyboard.type(TYPED_LINES[1])
    assert page.input_value("textarea#id_code") == TYPED_CODE

    tokens = {
        kind: page.locator(f"#code-editor .cm-content .tok-{kind}").all_inner_texts()
        for kind in ("keyword", "number", "comment", "definition")
    }
    assert tokens == {
        "keyword": ["def", "return"],
        "number": ["2"],
        "comment": ["# twice"],
        "definition": ["double"],
    }, tokens
    colours = {
        page.locator(f"#code-editor .tok-{kind}").first.evaluate("el => getComputedStyle(el).color")
        for kind in ("keyword", "number", "comment")
    }
    assert len(colours) == 3  # a colour per kind: the theme's styles were applied
    screenshot(page, "editor-typed-python")

    page.keyboard.press("Control+Enter")
    page.wait_for_function(
        "() => ['queued', 'running', 'error'].includes("
        "document.getElementById('live-status').dataset.state)"
    )
    status = page.locator("#live-status")
    assert status.get_attribute("data-state") in ("queued", "running"), status.inner_text()
    submission = wait_for(
        lambda: Submission.objects.filter(learner=alice_learner).first(),
        timeout=SUBMIT_TIMEOUT_S,
        what="the submission to reach the server",
    )
    # A form post sends a textarea's line breaks as CRLF (HTML's form encoding).
    assert submission.code.replace("\r\n", "\n") == TYPED_CODE
    assert submission.exercise.slug == "first-gradient"
    assert page_problems.errors == []  # no CSP violation for the editor's styles
    purge_queue(worker_queue)
