"""The authoring pages in real Chromium (issue 14): they fit a 768-pixel tablet and a
390-pixel phone (no sideways scrolling, every table inside its card) with a validation's
rows and auto-mutants on screen; every file of the package gets an editor with its own
highlighting (Markdown, TOML, Python); the statement's preview follows its Markdown editor;
a package problem's line is marked in its file's editor. Screenshots go to
test-artifacts/screenshots/fit-*-author-*.png and authoring-editors.png."""

from __future__ import annotations

import re
from typing import Any

import pytest
from gradlab_fixtures import MODULE_SLUG
from page_fit import overflows_on_every_screen

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SLUG = "cube-gradient"
LONG_NOTE = "x created without requires_grad=True, so backward() raises and x.grad stays None"


def url(live_server: Any, name: str, *args: Any) -> str:
    from django.urls import reverse

    return live_server.url + reverse(f"web:{name}", args=args)


def _outcome(*, ok: bool, pending: int = 0) -> dict[str, Any]:
    """A validation outcome as the job stores it, with long rows, a survivor and its diff."""
    from authoring.validation import MutantRow, ValidationOutcome, ValidationRow, outcome_json

    rows = (
        ValidationRow("reference: solution.py", "10/10", "10/10", True),
        ValidationRow("starter: starter.py", "runs without an error", "0/10 failing", True),
        ValidationRow(
            "wrong: wrong/forgot-requires-grad-and-a-rather-long-file-name.py",
            "fails with graph-broken",
            "0/10 failing 'x.grad is dy/dx = 3x^2' [graph-broken], 'y is x cubed' [graph-broken]",
            ok,
        ),
    )
    survivor = "--- solution.py\n+++ mutant\n@@ -3,3 +3,3 @@\n-y = x**3\n+y = x**3 * torch.ones_like(x).sum() / torch.ones_like(x).numel()\n"  # noqa: E501
    mutants = (
        MutantRow("drop-requires-grad@3", "requires_grad=True removed", "caught", "graph-broken",
                  "", True),
        MutantRow("mean-sum-swap@4", "a sum taken as a mean", "survived" if not ok else "caught",
                  "10/10", survivor if not ok else "", ok),
    )  # fmt: skip
    counts = {"generated": 2, "caught": 1 + ok, "equivalent": 0, "survived": 1 - ok, "error": 0}
    return outcome_json(
        ValidationOutcome(ok=ok, rows=rows, mutants=mutants, mutant_counts=counts, pending=pending)
    )


def _authored_exercise(bob: Any) -> None:
    """cube-gradient: published as v1 (after a passed validation), then a draft with a long
    note whose validation found a survivor."""
    from authoring.services import draft_save, draft_validate, exercise_create, exercise_publish
    from courses.models import ExerciseJob, Module

    draft = exercise_create(module=Module.objects.get(slug=MODULE_SLUG), slug=SLUG, user=bob)
    exercise = draft.version.exercise
    job = draft_validate(exercise=exercise, user=bob)
    ExerciseJob.objects.filter(pk=job.pk).update(status="done", outcome=_outcome(ok=True))
    exercise_publish(exercise=exercise)
    files = dict(draft.version.files)
    files["exercise.toml"] = re.sub(
        r'^note = ".*"$', f'note = "{LONG_NOTE}"', files["exercise.toml"], flags=re.MULTILINE
    )
    files["statement.md"] += "\nA line of the statement that is long enough to need wrapping " * 3
    exercise.refresh_from_db()
    assert draft_save(exercise=exercise, files=files, user=bob).problem == ""
    exercise.refresh_from_db()
    job = draft_validate(exercise=exercise, user=bob)
    ExerciseJob.objects.filter(pk=job.pk).update(status="done", outcome=_outcome(ok=False))


def test_the_authoring_pages_fit_a_tablet_and_a_phone(
    live_server: Any,
    signed_in: Any,
    bob_instructor: Any,
    screenshot: Any,
    page_problems: Any,
    settings: Any,
) -> None:
    settings.GRADLAB_QUEUE_CPU = "grading-unconsumed-authoring-fit-test"
    _authored_exercise(bob_instructor)
    pages = {
        "author-module": url(live_server, "author_module", MODULE_SLUG),
        "author-exercise": url(live_server, "author_exercise", MODULE_SLUG, SLUG),
        "author-diff": url(live_server, "author_diff", MODULE_SLUG, SLUG)
        + "?from=current&to=draft",
        "author-try": url(live_server, "author_try", MODULE_SLUG, SLUG),
    }

    found = overflows_on_every_screen(
        signed_in, bob_instructor, pages, screenshot, screens=("768", "390")
    )

    assert found == {}
    assert page_problems.errors == []


def test_every_file_has_a_highlighting_editor_the_preview_follows_and_a_problem_line_is_marked(
    live_server: Any,
    signed_in: Any,
    bob_instructor: Any,
    screenshot: Any,
    page_problems: Any,
) -> None:
    from authoring.services import draft_save, exercise_create
    from courses.models import Module

    draft = exercise_create(
        module=Module.objects.get(slug=MODULE_SLUG), slug=SLUG, user=bob_instructor
    )
    files = dict(draft.version.files)
    files["exercise.toml"] = files["exercise.toml"].replace('target = "y"', 'target = "z"')
    problem = draft_save(exercise=draft.version.exercise, files=files, user=bob_instructor)
    assert "checks[1].target" in problem.problem
    page = signed_in(bob_instructor)
    page.goto(url(live_server, "author_exercise", MODULE_SLUG, SLUG))

    languages = page.eval_on_selector_all(
        "[data-language].code-editor",
        "hosts => hosts.map(e => [e.dataset.path || e.id, e.dataset.language])",
    )
    page.locator("#problem-link").click()
    marked = page.locator("#toml-text-editor .cm-problem-line")
    statement = "# Cubes\n\nThe `x.grad` of $x^3$.\n\n<!-- checks -->\n"
    page.locator("#statement-text-editor .cm-content").click()
    page.keyboard.press("Control+A")
    page.keyboard.press("Delete")
    page.keyboard.insert_text(statement)
    page.wait_for_function(
        "() => document.querySelector('#statement-preview h1')?.textContent === 'Cubes'"
        " && document.querySelector('#statement-preview .katex')"
    )
    screenshot(page, "authoring-editors")

    assert dict(languages) == {
        "exercise.toml": "toml",
        "statement.md": "markdown",
        "solution.py": "python",
        "starter.py": "python",
        "wrong/forgot-requires-grad.py": "python",
        "new-file-text-editor": "python",
    }
    assert page.locator("#toml-text").is_hidden()  # the textarea stays, as the form field
    assert marked.count() == 1 and marked.inner_text() == 'target = "z"'
    assert page.locator("#toml-view").get_attribute("open") is not None
    toml_keys = page.locator("#toml-text-editor .tok-propertyName").all_inner_texts()
    assert {"slug", "title", "target"} <= set(toml_keys)
    assert "[[checks]]" in page.locator("#toml-text-editor .tok-atom").all_inner_texts()
    headings = page.locator("#statement-text-editor .tok-heading").all_inner_texts()
    code = page.locator("#statement-text-editor .tok-monospace").all_inner_texts()
    assert any("Cubes" in text for text in headings), headings
    assert any("x.grad" in text for text in code), code
    solution = "[data-path='solution.py'].code-editor .tok-keyword"
    assert "import" in page.locator(solution).all_inner_texts()
    assert page.locator("#statement-text").input_value() == statement
    assert page_problems.errors == []
