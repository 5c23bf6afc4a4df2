"""The learner's and the instructor's journeys in real Chromium, graded by a real worker
through the real sandbox. Screenshots of each page go to test-artifacts/screenshots/."""

from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import Any

import pytest

from grader.diagnose import DIAGNOSES

pytestmark = [
    pytest.mark.browser,
    pytest.mark.worker,
    pytest.mark.sandbox,
    pytest.mark.django_db(transaction=True),
]

ROOT = Path(__file__).resolve().parents[2]
GRADING_TIMEOUT_MS = 120_000  # the first run of an exercise also runs its reference
MODULE = "autograd-backprop"

# Records every state the live status line goes through (queued -> running -> graded).
RECORD_STATES = """() => {
  window.__states = [];
  const box = document.getElementById('live-status');
  new MutationObserver(() => window.__states.push(box.dataset.state))
    .observe(box, {attributes: true, attributeFilter: ['data-state']});
}"""


def exercise_file(slug: str, relative: str) -> str:
    return (ROOT / "exercises" / slug / relative).read_text()


def editor_value(page: Any) -> str:
    return page.evaluate("document.querySelector('.CodeMirror').CodeMirror.getValue()")


def replace_code(page: Any, code: str) -> None:
    page.locator(".CodeMirror").click()
    page.keyboard.press("Control+A")
    page.keyboard.press("Delete")
    page.keyboard.insert_text(code)
    assert editor_value(page) == code


def submit_and_wait(page: Any, *, with_keyboard: bool = False) -> list[str]:
    """Submits the editor's code without a page reload; returns the states seen live."""
    page.evaluate(RECORD_STATES)
    url_before = page.url
    if with_keyboard:
        page.locator(".CodeMirror textarea").focus()
        page.keyboard.press("Control+Enter")
    else:
        page.get_by_role("button", name="Submit for grading").click()
    page.wait_for_function(
        "() => ['graded', 'failed'].includes(document.getElementById('live-status').dataset.state)"
        " && window.__states.length > 1",
        timeout=GRADING_TIMEOUT_MS,
    )
    assert page.url == url_before  # no navigation: fetch + polling
    return page.evaluate("window.__states")


def open_exercise(page: Any, base_url: str, slug: str) -> None:
    page.goto(f"{base_url}/modules/{MODULE}/")
    page.locator(f"tr[data-exercise='{slug}'] a").click()
    page.wait_for_selector(".CodeMirror")


def test_learner_gets_a_diagnosis_then_full_marks_and_the_instructor_sees_it(
    live_server: Any,
    signed_in: Any,
    alice_learner: Any,
    bob_instructor: Any,
    grading_worker: Any,
    screenshot: Any,
    page_problems: Any,
    tmp_path: Path,
) -> None:
    page = signed_in(alice_learner)
    screenshot(page, "01-learner-module")
    row = page.locator("tr[data-exercise='chain-rule']")
    assert "not tried" in row.inner_text()

    open_exercise(page, live_server.url, "chain-rule")
    assert "Create" in page.locator(".statement").inner_text()
    assert editor_value(page) == exercise_file("chain-rule", "starter.py")
    screenshot(page, "02-chain-rule-starter")

    # A known wrong solution: x without requires_grad.
    replace_code(page, exercise_file("chain-rule", "wrong/forgot-requires-grad.py"))
    states = submit_and_wait(page)
    assert states[0] == "queued" and states[-1] == "graded", states
    feedback = page.locator("#feedback")
    diagnosis = feedback.get_by_test_id("diagnosis-title").first
    assert diagnosis.inner_text() == DIAGNOSES["graph-broken"].title
    assert "requires_grad=True" in feedback.locator(".diagnosis .hint").first.inner_text()
    assert "✗ failed" in feedback.locator("table.check-list").inner_text()
    assert "RuntimeError" in feedback.inner_text()  # the learner's own traceback
    assert feedback.get_by_test_id("score").inner_text().split(" / ")[1] == "10"
    screenshot(page, "03-chain-rule-diagnosis")

    # Fixed: the reference solution, submitted with Ctrl+Enter from the editor.
    replace_code(page, exercise_file("chain-rule", "solution.py"))
    submit_and_wait(page, with_keyboard=True)
    assert feedback.get_by_test_id("score").inner_text() == "10 / 10"
    assert "Full marks" in feedback.inner_text()
    assert feedback.get_by_test_id("diagnosis-title").count() == 0
    assert "tensor(60.)" in feedback.get_by_test_id("stdout").inner_text()
    assert page.locator("#history li").count() == 2
    screenshot(page, "04-chain-rule-full-marks")

    # The last submission comes back in the editor.
    page.reload()
    page.wait_for_selector(".CodeMirror")
    assert editor_value(page) == exercise_file("chain-rule", "solution.py")
    page.goto(f"{live_server.url}/modules/{MODULE}/")
    assert "passed" in page.locator("tr[data-exercise='chain-rule']").inner_text()
    assert "10 / 10" in page.locator("tr[data-exercise='chain-rule']").inner_text()

    # training-loop: the learner's loss curve drawn over the reference curve.
    open_exercise(page, live_server.url, "training-loop")
    replace_code(page, _training_loop_solution())
    submit_and_wait(page)
    chart = page.locator("#feedback canvas.loss-chart")
    chart.wait_for()
    lengths = page.evaluate(
        "Chart.getChart(document.querySelector('#feedback canvas.loss-chart'))"
        ".data.datasets.map(d => [d.label, d.data.filter(v => v !== null).length])"
    )
    labels = dict(lengths)
    assert labels["Your loss"] > 1 and labels["Reference loss"] > 1, lengths
    assert chart.bounding_box()["height"] > 100
    page.locator("#feedback canvas.loss-chart").scroll_into_view_if_needed()
    screenshot(page, "05-training-loop-curve")
    assert page_problems.errors == []

    # The instructor sees these attempts and downloads the grades.
    teacher = signed_in(bob_instructor)
    teacher.get_by_role("link", name="Teach").click()
    stats = teacher.locator("tr[data-exercise='chain-rule']")
    assert stats.locator("[data-col=attempts]").inner_text() == "2"
    assert stats.locator("[data-col=tried]").inner_text() == "1"
    assert stats.locator("[data-col=passed]").inner_text() == "1"
    assert DIAGNOSES["graph-broken"].title in stats.locator("[data-col=diagnoses]").inner_text()
    screenshot(teacher, "06-instructor-statistics")
    with teacher.expect_download() as download_info:
        teacher.locator("#download-csv").click()
    target = tmp_path / "grades.csv"
    download_info.value.save_as(target)
    rows = list(csv.DictReader(io.StringIO(target.read_text())))
    alice = next(r for r in rows if r["username"] == alice_learner.get_username())
    assert alice["chain-rule"] == "10"
    assert page_problems.errors == []


def _training_loop_solution() -> str:
    alternatives = sorted((ROOT / "exercises" / "training-loop" / "alternatives").glob("*.py"))
    if alternatives:  # hyper-parameters unlike the reference's: two distinct curves
        return alternatives[0].read_text()
    return exercise_file("training-loop", "solution.py")
