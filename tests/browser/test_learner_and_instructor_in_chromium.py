"""The learner's and the instructor's journeys in real Chromium, graded by a real worker
through the real sandbox. Screenshots of each page go to test-artifacts/screenshots/."""

from __future__ import annotations

import csv
import io
import time
from pathlib import Path
from typing import Any

import pytest
from gradlab_fixtures import wait_for
from page_fit import overflows_on_every_screen

from grader.checks.diagnoses.catalogue import DIAGNOSES

pytestmark = [
    pytest.mark.browser,
    pytest.mark.worker,
    pytest.mark.sandbox,
    pytest.mark.django_db(transaction=True),
]

ROOT = Path(__file__).resolve().parents[2]
GRADING_TIMEOUT_MS = 120_000  # the first run of an exercise also runs its reference
JOB_TIMEOUT_MS = 300_000  # validation runs every known solution in its own sandbox
MODULE = "autograd-backprop"
TABLET = {"width": 820, "height": 1180}

# Records every state the live status line goes through (queued -> running -> graded).
RECORD_STATES = """() => {
  window.__states = [];
  const box = document.getElementById('live-status');
  new MutationObserver(() => window.__states.push(box.dataset.state))
    .observe(box, {attributes: true, attributeFilter: ['data-state']});
}"""


def exercise_file(slug: str, relative: str) -> str:
    return (ROOT / "exercises" / slug / relative).read_text()


EDITOR = "#code-editor .cm-content"  # CodeMirror 6, in the shadow root of #code-editor


def editor_value(page: Any) -> str:
    """The editor's text, as the form will send it (the editor keeps the textarea in step)."""
    return page.input_value("textarea#id_code")


def replace_code(page: Any, code: str) -> None:
    page.locator(EDITOR).click()
    page.keyboard.press("Control+A")
    page.keyboard.press("Delete")
    page.keyboard.insert_text(code)
    assert editor_value(page) == code


def submit_and_wait(page: Any, *, with_keyboard: bool = False) -> list[str]:
    """Submits the editor's code without a page reload; returns the states seen live."""
    page.evaluate(RECORD_STATES)
    url_before = page.url
    started = time.monotonic()
    if with_keyboard:
        page.locator(EDITOR).focus()
        page.keyboard.press("Control+Enter")
    else:
        page.get_by_role("button", name="Submit for grading").click()
    page.wait_for_function(
        "() => ['graded', 'failed'].includes(document.getElementById('live-status').dataset.state)"
        " && window.__states.length > 1",
        timeout=GRADING_TIMEOUT_MS,
    )
    assert page.url == url_before  # no navigation: fetch + polling
    states = page.evaluate("window.__states")
    # A figure for the report (pytest -s), never an assertion on time.
    print(f"submit to feedback on screen: {time.monotonic() - started:.2f} s, states {states}")
    return states


def open_exercise(page: Any, base_url: str, slug: str) -> None:
    page.goto(f"{base_url}/modules/{MODULE}/")
    page.locator(f"tr[data-exercise='{slug}'] a").click()
    page.wait_for_selector(EDITOR)


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
    page.goto(f"{live_server.url}/modules/{MODULE}/")  # home lists every module
    screenshot(page, "01-learner-module")
    row = page.locator("tr[data-exercise='chain-rule']")
    assert "not tried" in row.inner_text()

    open_exercise(page, live_server.url, "chain-rule")
    statement = page.locator(".statement")  # rendered Markdown, not its source
    assert (
        statement.locator("h2:not(.visually-hidden)").count() >= 1
        and statement.locator("code").count() >= 1
    )
    assert "```" not in statement.inner_text() and "\n## " not in statement.inner_text()
    # "What is checked" is the table generated from the manifest: each check and its points
    checked = statement.locator("table").last.inner_text()
    assert "the script runs without an error" in checked and "exactly one backward call" in checked
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
    page.wait_for_selector(EDITOR)
    assert editor_value(page) == exercise_file("chain-rule", "solution.py")
    page.goto(f"{live_server.url}/modules/{MODULE}/")
    assert "passed" in page.locator("tr[data-exercise='chain-rule']").inner_text()
    assert "10 / 10" in page.locator("tr[data-exercise='chain-rule']").inner_text()
    screenshot(page, "04b-learner-module-progress")

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


def test_without_javascript_the_form_submits_and_the_result_page_refreshes_until_graded(
    live_server: Any,
    signed_in: Any,
    alice_learner: Any,
    grading_worker: Any,
    screenshot: Any,
) -> None:
    page = signed_in(alice_learner, java_script_enabled=False)
    page.goto(f"{live_server.url}/modules/{MODULE}/first-gradient/")
    code = page.get_by_role("textbox", name="Python code")
    assert code.input_value() == exercise_file("first-gradient", "starter.py")
    code.fill(exercise_file("first-gradient", "solution.py"))
    page.get_by_role("button", name="Submit for grading").click()
    assert "/submissions/" in page.url
    page.wait_for_selector("[data-testid=score]", timeout=GRADING_TIMEOUT_MS)  # meta refresh
    assert page.get_by_test_id("score").inner_text() == "10 / 10"
    screenshot(page, "07-no-javascript-result")


def test_editor_indents_with_tab_and_escape_moves_focus_to_the_submit_button(
    live_server: Any, signed_in: Any, alice_learner: Any, page_problems: Any, screenshot: Any
) -> None:
    page = signed_in(alice_learner, TABLET)
    page.goto(f"{live_server.url}/modules/{MODULE}/chain-rule/")
    page.wait_for_selector(EDITOR)
    replace_code(page, "for i in range(3):\n")
    page.keyboard.press("Tab")
    page.keyboard.insert_text("print(i)")
    assert editor_value(page) == "for i in range(3):\n    print(i)"
    assert page.locator(f"{EDITOR} .tok-keyword").count() >= 1  # syntax highlighting
    assert page.locator("#code-editor .cm-activeLineGutter").inner_text() == "2"
    page.keyboard.press("Escape")
    assert page.evaluate("document.activeElement.id") == "submit-button"
    screenshot(page, "08-tablet-exercise")
    assert page_problems.errors == []


def test_instructor_validates_the_package_and_regrades_after_it_changed(
    live_server: Any,
    signed_in: Any,
    catalog: Any,
    alice_learner: Any,
    bob_instructor: Any,
    grading_worker: Any,
    screenshot: Any,
    page_problems: Any,
) -> None:
    from submissions.services import submission_create

    wrong = exercise_file("chain-rule", "wrong/forgot-requires-grad.py")
    submission, _ = submission_create(learner=alice_learner, exercise_slug="chain-rule", code=wrong)
    old_score = wait_for(lambda: graded(submission.pk), what="grading").score
    new_version_moving_a_point(catalog, "chain-rule", from_type="grad", to_type="value")

    teacher = signed_in(bob_instructor)
    teacher.goto(f"{live_server.url}/teach/{MODULE}/exercises/chain-rule/")
    assert "1 graded submission was graded against an older version" in teacher.inner_text("main")
    teacher.get_by_role("button", name="Validate now").click()
    teacher.wait_for_selector("#validate-result[data-status=done]", timeout=JOB_TIMEOUT_MS)
    result = teacher.locator("#validate-result")
    assert "Valid: every run did what the package declares." in result.inner_text()
    assert "wrong: wrong/forgot-requires-grad.py" in result.inner_text()
    # the auto-mutants, each caught with its diagnosis
    assert "0 survived" in result.locator("[data-testid=mutant-counts]").inner_text()
    dropped = result.locator("tr[data-mutant='drop-requires-grad@3']")
    assert dropped.get_attribute("data-outcome") == "caught"
    assert "graph-broken" in dropped.inner_text()

    teacher.get_by_role("button", name="Regrade all submissions").click()
    teacher.wait_for_selector("#regrade-result[data-status=done]", timeout=JOB_TIMEOUT_MS)
    changed = teacher.locator(f"#regrade-result tr[data-submission='{submission.pk}']")
    assert changed.locator("[data-col=old]").inner_text() == f"{old_score:g}"
    assert changed.locator("[data-col=new]").inner_text() == f"{old_score + 1:g}"
    screenshot(teacher, "09-instructor-validate-and-regrade")
    jobs = {"teach-exercise-jobs": teacher.url}  # the validation and regrade tables
    assert overflows_on_every_screen(signed_in, bob_instructor, jobs, screenshot) == {}
    assert page_problems.errors == []


def graded(submission_id: int) -> Any:
    """The submission once graded (for wait_for), None while it is still pending."""
    from submissions.models import Submission

    submission = Submission.objects.get(pk=submission_id)
    if submission.status == "failed":
        raise AssertionError(f"submission {submission_id} failed: {submission.error_message}")
    return submission if submission.status == "graded" else None


def new_version_moving_a_point(module: Any, slug: str, *, from_type: str, to_type: str) -> None:
    """A changed package: one point moves from the first `from_type` check to the first
    `to_type` check (what an instructor re-weighting an exercise does)."""
    import re

    from django.db import transaction

    from courses.services import exercise_sync
    from grader.spec import MANIFEST, Package

    exercise = module.exercises.get(slug=slug)
    files = dict(exercise.current_version.files)
    head, *blocks = files[MANIFEST].split("\n[[")
    giver = next(i for i, b in enumerate(blocks) if f'type = "{from_type}"' in b)
    taker = next(i for i, b in enumerate(blocks) if f'type = "{to_type}"' in b)
    for index, delta in ((giver, -1), (taker, +1)):
        blocks[index] = re.sub(
            r"^points = (\d+)$",
            lambda m, d=delta: f"points = {int(m.group(1)) + d}",
            blocks[index],
            count=1,
            flags=re.M,
        )
    files[MANIFEST] = "\n[[".join([head, *blocks])
    with transaction.atomic():
        outcome = exercise_sync(module=module, package=Package.from_files(files), order=1)
    assert outcome == (slug, "updated")
