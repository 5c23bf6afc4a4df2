"""The authoring story in real Chromium, validated and graded by a real worker through the
real sandbox (issue 14): an instructor creates a module and a script exercise from nothing
in the browser, sees the statement's live preview, validates and sees a weak check reported
(a declared wrong solution that the checks let through), fixes it, publishes; a learner
solves it; the instructor exports the module and imports it as a copy. Screenshots go to
test-artifacts/screenshots/authoring-*.png."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytestmark = [
    pytest.mark.browser,
    pytest.mark.worker,
    pytest.mark.sandbox,
    pytest.mark.django_db(transaction=True),
]

JOB_TIMEOUT_MS = 300_000
GRADING_TIMEOUT_MS = 120_000
NO_BACKWARD = "import torch\n\nx = torch.tensor(3.0, requires_grad=True)\ny = x**3\n"
SOLUTION = "import torch\n\nx = torch.tensor(3.0, requires_grad=True)\ny = x**3\ny.backward()\n"


def _type_into(page: Any, editor: str, text: str) -> None:
    """Replaces the text of the CodeMirror editor `editor` (its host's selector) by `text`."""
    page.locator(f"{editor} .cm-content").click()
    page.keyboard.press("Control+A")
    page.keyboard.press("Delete")
    page.keyboard.insert_text(text)


def _wait_validation(page: Any) -> str:
    """Waits, without reloading, for the polled validation to finish; returns its verdict."""
    page.wait_for_function(
        "() => ['done', 'failed'].includes("
        "document.querySelector('#validation-result .job')?.dataset.status)",
        timeout=JOB_TIMEOUT_MS,
    )
    return str(page.locator("#validation-result .verdict").inner_text())


def _save_and_validate(page: Any) -> str:
    with page.expect_navigation():
        page.get_by_role("button", name="Save and validate").click()
    page.wait_for_selector("#validation-result .job")
    return _wait_validation(page)


def test_an_instructor_authors_publishes_exports_and_copies_a_module_a_learner_solves(
    signed_in: Any,
    live_server: Any,
    grading_worker: Any,
    bob_instructor: Any,
    alice_learner: Any,
    screenshot: Any,
    page_problems: Any,
    tmp_path: Path,
) -> None:
    page = signed_in(bob_instructor)
    base = live_server.url

    # A module and a script exercise, from nothing.
    page.goto(f"{base}/teach/autograd-backprop/")
    page.get_by_role("link", name="Author exercises").click()
    page.fill("#module-slug", "autograd-extra")
    page.fill("#module-title", "Autograd extra")
    page.get_by_role("button", name="Create module").click()
    page.wait_for_url(f"{base}/teach/autograd-extra/author/")
    page.fill("#new-slug", "cube-gradient")
    page.fill("#new-title", "The gradient of a cube")
    page.get_by_role("button", name="Create exercise").click()
    page.wait_for_url(f"{base}/teach/autograd-extra/author/cube-gradient/")

    # The statement's live preview from its Markdown editor: the server's sanitiser, then KaTeX.
    statement = "# The gradient of a cube\n\nCompute $y = x^3$ at $x = 3$.\n\n<!-- checks -->\n"
    _type_into(page, "#statement-text-editor", statement)
    page.wait_for_function(
        "() => document.querySelector('#statement-preview').dataset.rendered"
        " && document.querySelector('#statement-preview .katex')"
    )
    assert "What is checked" in page.locator("#statement-preview").inner_text()

    # A weak manifest: the gradient check removed, a wrong solution that never calls backward.
    page.check("input[name=check-0-delete]")
    page.select_option("#new-file-kind", "wrong")
    page.fill("#new-file-name", "no-backward")
    _type_into(page, "#new-file-text-editor", NO_BACKWARD)
    page.fill("input[name=wrong-new-file]", "wrong/no-backward.py")
    page.fill("input[name=wrong-new-diagnosis]", "no-backward")
    verdict = _save_and_validate(page)
    screenshot(page, "authoring-weak-check")

    assert verdict.startswith("Not valid")
    failed = page.locator("#validation-result tr.failed").all_inner_texts()
    assert any("wrong/no-backward.py" in row and "not as declared" in row for row in failed)
    survivors = page.locator("#validation-result tr[data-outcome=survived]")
    assert survivors.count() >= 1  # auto-mutants the weak checks let through, with their diff
    with page.expect_navigation():
        page.get_by_role("button", name="Publish").click()
    assert "Not published: Its validation failed" in page.locator(".messages").inner_text()

    # The fix: the gradient check back, through the form's new row, as x.grad right after
    # each backward() (a .grad written by hand after a throw-away backward fails it too).
    page.fill("#new-check-name", "x.grad is dy/dx = 3x^2")
    page.select_option("#new-check-type", "grad_history")
    page.fill("#new-check-target", "x")
    page.fill("#new-check-points", "6")
    verdict = _save_and_validate(page)
    screenshot(page, "authoring-valid")
    assert verdict.startswith("Valid"), page.locator("#validation-result").inner_text()
    with page.expect_navigation():
        page.get_by_role("button", name="Publish").click()
    assert "Published as v1." in page.locator(".messages").inner_text()

    # A learner of the module solves it.
    page.goto(f"{base}/teach/autograd-extra/author/")
    page.fill("#member-username", "alice_learner")
    page.select_option("#member-role", "learner")
    page.get_by_role("button", name="Add").click()
    learner = signed_in(alice_learner)
    learner.goto(f"{base}/modules/autograd-extra/cube-gradient/")
    learner.locator("#code-editor .cm-content").click()
    learner.keyboard.press("Control+A")
    learner.keyboard.press("Delete")
    learner.keyboard.insert_text(SOLUTION)
    learner.get_by_role("button", name="Submit for grading").click()
    learner.wait_for_function(
        "() => document.getElementById('live-status')?.dataset.state === 'graded'",
        timeout=GRADING_TIMEOUT_MS,
    )
    screenshot(learner, "authoring-learner-solved")
    assert learner.locator("#feedback [data-testid=score]").inner_text() == "10 / 10"

    # Export the module, import it as a copy into another module.
    page.goto(f"{base}/teach/autograd-extra/author/")
    with page.expect_download() as download:
        page.locator("#download-zip").click()
    archive_path = tmp_path / "autograd-extra.zip"
    download.value.save_as(archive_path)
    page.fill("#module-slug", "autograd-extra-copy")
    page.fill("#module-title", "Autograd extra (copy)")
    page.get_by_role("button", name="Create module").click()
    page.wait_for_url(f"{base}/teach/autograd-extra-copy/author/")
    page.set_input_files("#archive", str(archive_path))
    page.check("#import-copy")
    page.get_by_role("button", name="Import as drafts").click()
    screenshot(page, "authoring-imported-copy")

    assert "Imported 1 exercise(s) as drafts." in page.locator(".messages").inner_text()
    assert page.locator("tr[data-slug='cube-gradient-autograd-extra-copy']").count() == 1
    assert page_problems.errors == []


def test_the_authoring_page_is_closed_to_a_learner(signed_in: Any, live_server: Any,
                                                  alice_learner: Any) -> None:  # fmt: skip
    page = signed_in(alice_learner)

    response = page.goto(f"{live_server.url}/teach/autograd-backprop/author/")

    assert response is not None and response.status == 403
