"""WCAG 2.1 AA in real Chromium (issue 33): axe-core (the build that axe-playwright-python
bundles) finds no serious or critical violation on any page, a learner's and an
instructor's, at 1366x768 and on a 390x844 touch phone, where every input's text is at
least 16 px (no zoom on focus) and every target at least 24 px or spaced apart (2.5.8,
axe's target-size); keyboard alone reaches the editor, types, submits and reads the
feedback, finds a held submission and releases it, and edits and validates an exercise;
Esc, then Tab, leaves every code editor (2.1.2, no keyboard trap: Tab indents inside
them); a phone's exercise page starts with a "Jump to editor" link. No worker runs:
grades are written by the worker's own final write.
Screenshots: test-artifacts/screenshots/a11y-390-*.png."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest
from axe_playwright_python.base import AXE_SCRIPT
from gradlab_fixtures import MODULE_SLUG, OTHER_MODULE_SLUG, PASSWORD, purge_queue, wait_for

from grader.protocol import CheckResult, IntegrityFlag, Report

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

WCAG_AA = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]
BLOCKING = ("serious", "critical")
LAPTOP_768 = {"width": 1366, "height": 768}
PHONE = {"width": 390, "height": 844}
TOUCH = {"is_mobile": True, "has_touch": True}
AUTHORED = "cube-gradient"
AUTHOR_CHAIN_RULE = (MODULE_SLUG, "chain-rule")  # a catalog exercise, in its author page
MIN_INPUT_PX = 16
MAX_TABS = 150

# Text fields whose computed font-size is under 16 px (a phone zooms in on focusing them),
# the editors' contenteditable content in their shadow roots included.
SMALL_INPUTS_JS = """(minimum) => {
  const buttons = ['checkbox', 'radio', 'submit', 'button', 'reset', 'image', 'range',
                   'color', 'hidden'];
  const fields = [...document.querySelectorAll('input, select, textarea')]
    .filter(el => !buttons.includes(el.type));
  for (const host of document.querySelectorAll('.code-editor')) {
    if (host.shadowRoot) fields.push(...host.shadowRoot.querySelectorAll('.cm-content'));
  }
  return fields
    .filter(el => el.getClientRects().length)
    .map(el => [el.id || el.name || el.className, parseFloat(getComputedStyle(el).fontSize)])
    .filter(([, size]) => size < minimum)
    .map(([name, size]) => `${name}: ${size}px`);
}"""

# Where the keyboard focus is: "editor:<host id>" inside a code editor's shadow root, else
# the focused element's tag, id and text.
FOCUS_JS = """() => {
  const el = document.activeElement;
  if (el && el.shadowRoot) return 'editor:' + el.id;
  if (!el || el === document.body) return 'body';
  return [el.tagName.toLowerCase(), el.id, (el.innerText || el.value || '').trim().slice(0, 40)]
    .join('|');
}"""

OPEN_DETAILS_JS = "() => document.querySelectorAll('details').forEach(d => { d.open = true; })"


def url(live_server: Any, name: str, *args: Any) -> str:
    from django.urls import reverse

    return live_server.url + reverse(f"web:{name}", args=args)


# -- axe ----------------------------------------------------------------------------------


def axe_problems(page: Any, *, touch: bool) -> list[str]:
    """Every serious or critical WCAG 2.0/2.1 A/AA violation axe finds on the page as it is
    (with <details> opened), one readable line per element; on touch, target-size too."""
    page.evaluate(OPEN_DETAILS_JS)
    options: dict[str, Any] = {
        "runOnly": {"type": "tag", "values": WCAG_AA},
        "resultTypes": ["violations"],
    }
    if touch:
        options["rules"] = {"target-size": {"enabled": True}}
    if not page.evaluate("() => typeof window.axe === 'object'"):
        page.evaluate(AXE_SCRIPT)
    results = page.evaluate("options => axe.run(document, options)", options)
    return [
        f"{rule['id']} ({rule['impact']}): {rule['help']}\n"
        f"      at {' > '.join(map(str, node['target']))}: {node['html'][:160]}\n"
        f"      {' '.join(node.get('failureSummary', '').split())}"
        for rule in results["violations"]
        if rule["impact"] in BLOCKING
        for node in rule["nodes"]
    ]


def small_inputs(page: Any) -> list[str]:
    return list(page.evaluate(SMALL_INPUTS_JS, MIN_INPUT_PX))


def check(page: Any, name: str, *, touch: bool, found: dict[str, list[str]]) -> None:
    """The page as it is now: axe's problems, and on touch the inputs under 16 px."""
    problems = axe_problems(page, touch=touch)
    wider = page.evaluate("() => document.documentElement.scrollWidth - window.innerWidth")
    if wider > 1:  # the page itself scrolls sideways (a wide table scrolls in its own box)
        problems.append(f"the page is {wider}px wider than the window")
    if touch:
        problems += [f"font-size under {MIN_INPUT_PX}px: {f}" for f in small_inputs(page)]
    if problems:
        found[name] = problems


def audit(page: Any, pages: dict[str, str], *, touch: bool, found: dict[str, list[str]]) -> None:
    for name, address in pages.items():
        page.goto(address)
        check(page, name, touch=touch, found=found)


def sign_in_here(page: Any, user: Any) -> None:
    """Signs in on the sign-in page the browser is on."""
    page.get_by_label("Username").fill(user.get_username())
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(lambda address: "/accounts/login/" not in address)


def report(found: dict[str, dict[str, list[str]]]) -> str:
    lines = []
    for screen, pages in found.items():
        for name, problems in pages.items():
            lines.append(f"{screen} {name}:")
            lines += [f"  - {problem}" for problem in problems]
    return "\n".join(lines)


# -- data: graded, crashed, failed and held submissions, an authored exercise --------------


def _graded(learner: Any, slug: str, report: Report) -> int:
    """A submission graded with `report` through the worker's own claim and final write."""
    from common import jobs
    from submissions.services import SUBMISSIONS, _finish_graded, submission_create

    submission, _ = submission_create(learner=learner, exercise_slug=slug, code=_code(slug))
    attempt = jobs.job_claim(SUBMISSIONS, job_id=submission.pk)
    assert attempt is not None and _finish_graded(submission.pk, attempt, report)
    return int(submission.pk)


def _failed(learner: Any, slug: str) -> int:
    from common import jobs
    from submissions.services import SUBMISSIONS, _finish_failed, submission_create

    submission, _ = submission_create(learner=learner, exercise_slug=slug, code=_code(slug))
    attempt = jobs.job_claim(SUBMISSIONS, job_id=submission.pk)
    message = "The grader could not run your code. It is not counted; submit it again."
    assert attempt is not None and _finish_failed(submission.pk, attempt, message)
    return int(submission.pk)


def _code(slug: str) -> str:
    return f"import torch\n# {slug}\nx = torch.tensor(2.0, requires_grad=True)\ny = x ** 2\n"


def failing_report() -> Report:
    return Report(
        status="graded", score=4.0, max_score=10.0, passed=False,
        checks=(
            CheckResult("x.grad is dy/dx", False, 0.0, 6.0, "x.grad differs from the reference",
                        "sign-error", data={"label": "x.grad", "want": [4.0], "got": [-4.0]}),
            CheckResult("y is x squared", True, 4.0, 4.0, "", data={}),
        ),
        stdout="tensor(4.)\n",
    )  # fmt: skip


def crash_report() -> Report:
    traceback = (
        'Traceback (most recent call last):\n  File "submission.py", line 3, in <module>\n'
        "NameError: name 'z' is not defined"
    )
    return Report(
        status="graded", score=0.0, max_score=10.0, passed=False,
        checks=(CheckResult("x.grad", False, 0.0, 10.0, "NameError: name 'z' is not defined",
                            "crashed"),),
        exception={"type": "NameError", "message": "name 'z' is not defined", "line": 3,
                   "traceback": traceback},
    )  # fmt: skip


def curve_report() -> Report:
    return Report(
        status="graded", score=5.0, max_score=10.0, passed=False,
        checks=(CheckResult("the loss goes down", False, 0.0, 5.0, "the loss went up",
                            "lr-too-high"),
                CheckResult("claim: w.grad is zeroed", True, 5.0, 5.0, "", data={"claim": True})),
        curves={"learner": [1.0, 2.5, 6.0, "inf"], "reference": [1.0, 0.6, 0.3, 0.1]},
    )  # fmt: skip


def held_report() -> Report:
    return Report(
        status="graded", score=10.0, max_score=10.0, passed=True,
        checks=(CheckResult("x.grad is right", True, 10.0, 10.0, "", data={}),),
        integrity_flags=(IntegrityFlag("tamper", "ctypes imported"),),
    )  # fmt: skip


def _outcome(*, ok: bool) -> dict[str, Any]:
    from authoring.validation import MutantRow, ValidationOutcome, ValidationRow, outcome_json

    rows = (
        ValidationRow("reference: solution.py", "10/10", "10/10", True),
        ValidationRow("wrong: wrong/forgot-requires-grad.py", "fails", "0/10 failing", ok),
    )
    diff = "--- solution.py\n+++ mutant\n@@ -3,1 +3,1 @@\n-y = x**3\n+y = x**3 * 1.0\n"
    mutants = (
        MutantRow("drop-requires-grad@3", "requires_grad removed", "caught", "graph-broken", "",
                  True),
        MutantRow("scale@4", "a scaled value", "caught" if ok else "survived", "10/10",
                  "" if ok else diff, ok),
    )  # fmt: skip
    counts = {"generated": 2, "caught": 1 + ok, "equivalent": 0, "survived": 1 - ok, "error": 0}
    return outcome_json(ValidationOutcome(ok, rows, mutants=mutants, mutant_counts=counts))


def authored_exercise(bob: Any) -> None:
    """AUTHORED: published as v1 after a passed validation, then a draft whose validation
    found a survivor (the diff, try and validation pages have something to show)."""
    from authoring.services import draft_save, draft_validate, exercise_create, exercise_publish
    from courses.models import ExerciseJob, Module

    draft = exercise_create(module=Module.objects.get(slug=MODULE_SLUG), slug=AUTHORED, user=bob)
    exercise = draft.version.exercise
    job = draft_validate(exercise=exercise, user=bob)
    ExerciseJob.objects.filter(pk=job.pk).update(status="done", outcome=_outcome(ok=True))
    exercise_publish(exercise=exercise)
    files = dict(draft.version.files)
    files["statement.md"] += "\nOne more line of the statement.\n"
    exercise.refresh_from_db()
    assert draft_save(exercise=exercise, files=files, user=bob).problem == ""
    job = draft_validate(exercise=exercise, user=bob)
    ExerciseJob.objects.filter(pk=job.pk).update(status="done", outcome=_outcome(ok=False))


def enrolment_link(bob: Any) -> str:
    """The code of an open enrolment link to the module (its join page is audited)."""
    from courses.enrolment_links import enrolment_link_create
    from courses.models import Module

    module = Module.objects.get(slug=MODULE_SLUG)
    return str(enrolment_link_create(module=module, created_by=bob).code)


def late_policy_preview(live_server: Any) -> str:
    from datetime import timedelta

    from django.utils import timezone

    from courses.models import Exercise, Module
    from web.deadlines import Schedule
    from web.views.deadlines import late_policy_url

    module = Module.objects.get(slug=MODULE_SLUG)
    exercise = Exercise.objects.get(slug="first-gradient")
    due = timezone.now() - timedelta(days=1)
    return live_server.url + late_policy_url(module, exercise, Schedule(None, due, False))


# -- the audit ----------------------------------------------------------------------------


def test_no_page_has_a_serious_wcag_violation_on_a_laptop_or_a_phone_and_phone_inputs_are_16px(
    live_server: Any,
    signed_in: Callable[..., Any],
    alice_learner: Any,
    bob_instructor: Any,
    worker_queue: str,
    screenshot: Any,
    page_problems: Any,
) -> None:
    held = _graded(alice_learner, "first-gradient", held_report())
    _graded(alice_learner, "first-gradient", failing_report())
    _graded(alice_learner, "chain-rule", crash_report())
    curve = _graded(alice_learner, "training-loop", curve_report())
    failed = _failed(alice_learner, "training-loop")
    authored_exercise(bob_instructor)
    join = enrolment_link(bob_instructor)
    learner_pages = {  # the feedback of each kind, in an exercise's page or its own
        "home": url(live_server, "home"),
        "module": url(live_server, "module", MODULE_SLUG),
        "exercise-failing": url(live_server, "exercise", MODULE_SLUG, "first-gradient"),
        "exercise-crash": url(live_server, "exercise", MODULE_SLUG, "chain-rule"),
        "submission-curve": url(live_server, "submission", curve),
        "submission-failed": url(live_server, "submission", failed),
        "compare-attempts": url(live_server, "compare", held),
        "join-link": url(live_server, "join", join),
        "join-code": url(live_server, "join_code"),
        "404": url(live_server, "module", OTHER_MODULE_SLUG),
        "403": url(live_server, "teach_module", MODULE_SLUG),
    }
    author = (MODULE_SLUG, AUTHORED)
    instructor_pages = {
        "teach-module": url(live_server, "teach_module", MODULE_SLUG),
        "teach-exercise": url(live_server, "teach_exercise", MODULE_SLUG, "first-gradient"),
        "teach-learner": url(live_server, "teach_learner", MODULE_SLUG, alice_learner.pk),
        "late-policy-preview": late_policy_preview(live_server),
        "author-module": url(live_server, "author_module", MODULE_SLUG),
        "author-exercise": url(live_server, "author_exercise", *author),
        "author-try": url(live_server, "author_try", *author),
        "author-diff": url(live_server, "author_diff", *author) + "?from=current&to=draft",
        "exercise-submissions": url(
            live_server, "exercise_submissions", MODULE_SLUG, "first-gradient"
        ),
        "held-submission": url(live_server, "submission", held),
    }
    found: dict[str, dict[str, list[str]]] = {}
    for screen, viewport, options in (("1366", LAPTOP_768, {}), ("390", PHONE, TOUCH)):
        touch = bool(options)
        page = signed_in(alice_learner, viewport, **options)
        seen: dict[str, list[str]] = {}
        audit(page, learner_pages, touch=touch, found=seen)
        if touch:
            page.goto(learner_pages["module"])
            screenshot(page, "a11y-390-module")
            page.goto(learner_pages["exercise-failing"])
            screenshot(page, "a11y-390-exercise")
        page.get_by_role("button", name="Sign out").click()
        page.wait_for_url("**/accounts/login/")
        check(page, "login", touch=touch, found=seen)
        sign_in_here(page, bob_instructor)
        audit(page, instructor_pages, touch=touch, found=seen)
        page.get_by_role("button", name="Release").click()  # on the held submission's page
        page.wait_for_selector("[data-testid=review-confirm]")
        check(page, "review-confirm", touch=touch, found=seen)
        if seen:
            found[screen] = seen
        page.context.close()

    assert not found, "\n" + report(found)
    refused = re.compile(r"^Failed to load resource: .* status of 40[34] ")  # the 404 and 403
    assert [error for error in page_problems.errors if not refused.match(error)] == []
    purge_queue(worker_queue)


# -- the keyboard alone -------------------------------------------------------------------


def focus(page: Any) -> str:
    return str(page.evaluate(FOCUS_JS))


def in_view(page: Any, locator: Any) -> bool:
    box = locator.bounding_box()
    height = page.viewport_size["height"]
    return box is not None and box["y"] >= 0 and box["y"] + box["height"] <= height


def tab_until(page: Any, wanted: Callable[[str], bool]) -> list[str]:
    """Presses Tab until the focus is where `wanted` says, leaving with Esc each code editor
    it enters on the way (Tab indents in there); returns the stops it went through."""
    stops = []
    for _ in range(MAX_TABS):
        page.keyboard.press("Tab")
        where = focus(page)
        stops.append(where)
        if wanted(where):
            return stops
        if where.startswith("editor:"):
            page.keyboard.press("Escape")
            stops.append(f"Esc: {focus(page)}")
    raise AssertionError(f"never reached by Tab: {stops}")


def test_a_learner_reaches_the_editor_types_submits_and_reads_the_feedback_by_keyboard_alone(
    live_server: Any,
    signed_in: Any,
    alice_learner: Any,
    worker_queue: str,
    page_problems: Any,
) -> None:
    from common import jobs
    from submissions.models import Submission
    from submissions.services import SUBMISSIONS, _finish_graded

    page = signed_in(alice_learner, LAPTOP_768)
    page.goto(url(live_server, "exercise", MODULE_SLUG, "first-gradient"))
    page.wait_for_selector("#code-editor")
    assert page.locator("#jump-to-editor").is_hidden()  # two columns: the editor is in view

    tab_until(page, lambda where: where == "editor:code-editor")
    page.keyboard.press("Control+A")
    page.keyboard.press("Delete")  # typing over lines is Chromium's own edit: inline styles
    page.keyboard.type("y = 1")
    page.keyboard.press("Escape")
    assert focus(page).startswith("button|submit-button|")
    page.keyboard.press("Enter")
    submission = wait_for(
        lambda: Submission.objects.filter(learner=alice_learner).first(),
        what="the submission to reach the server",
    )
    attempt = jobs.job_claim(SUBMISSIONS, job_id=submission.pk)
    assert attempt is not None and _finish_graded(submission.pk, attempt, failing_report())
    page.wait_for_selector("#live-status a.read-feedback")
    page.keyboard.press("Tab")
    assert focus(page) == "a||Read the feedback"
    page.keyboard.press("Enter")

    assert focus(page).startswith("h2|feedback-heading|")
    score = page.locator("#feedback [data-testid=score]")
    assert score.inner_text() == "4 / 10" and in_view(page, score)
    assert submission.code == "y = 1"
    assert page_problems.errors == []
    purge_queue(worker_queue)


def test_an_instructor_finds_a_held_submission_and_releases_it_by_keyboard_alone(
    live_server: Any,
    signed_in: Any,
    alice_learner: Any,
    bob_instructor: Any,
    page_problems: Any,
) -> None:
    """The instructor's story: from the exercise's list of submissions, search for the
    learner, open the held one, Release, confirm; Tab and Enter only."""
    from submissions.models import Submission

    held = _graded(alice_learner, "first-gradient", held_report())
    page = signed_in(bob_instructor, LAPTOP_768)
    page.goto(url(live_server, "exercise_submissions", MODULE_SLUG, "first-gradient"))

    tab_until(page, lambda where: where.startswith("input|submissions-q|"))
    page.keyboard.type(alice_learner.get_username())
    with page.expect_navigation():
        page.keyboard.press("Enter")
    tab_until(page, lambda where: where.startswith("a|") and f"#{held}" in where)
    with page.expect_navigation():
        page.keyboard.press("Enter")
    tab_until(page, lambda where: where == "button||Release")
    with page.expect_navigation():
        page.keyboard.press("Enter")
    tab_until(page, lambda where: where.startswith("button||Yes, release"))
    with page.expect_navigation():
        page.keyboard.press("Enter")

    assert Submission.objects.get(pk=held).review == "released"
    assert page_problems.errors == []


def test_esc_then_tab_leaves_every_code_editor_and_an_author_edits_and_validates_by_keyboard(
    live_server: Any,
    signed_in: Any,
    bob_instructor: Any,
    worker_queue: str,
    page_problems: Any,
) -> None:
    authored_exercise(bob_instructor)
    page = signed_in(bob_instructor, LAPTOP_768)
    pages = {
        "exercise": url(live_server, "exercise", MODULE_SLUG, "first-gradient"),
        "author-exercise": url(live_server, "author_exercise", MODULE_SLUG, AUTHORED),
        "author-try": url(live_server, "author_try", MODULE_SLUG, AUTHORED),
    }
    trapped, tried = editor_traps(page, pages)

    assert trapped == {}
    assert len(tried) >= 7, tried  # the learner's, six of the author's files, the try page's
    edit_and_validate_by_keyboard(page, url(live_server, "author_exercise", *AUTHOR_CHAIN_RULE))
    assert page_problems.errors == []
    purge_queue(worker_queue)


def editor_traps(page: Any, pages: dict[str, str]) -> tuple[dict[str, str], list[str]]:
    """In each code editor of each page: Tab stays in it (it indents), Esc leaves it and Tab
    goes on from there. Returns the editors that kept the focus, and every editor tried."""
    trapped: dict[str, str] = {}
    tried = []
    for name, address in pages.items():
        page.goto(address)
        page.wait_for_selector(".code-editor", state="attached")
        page.evaluate(OPEN_DETAILS_JS)
        for host in page.eval_on_selector_all(".code-editor", "hosts => hosts.map(h => h.id)"):
            inside = f"editor:{host}"
            page.locator(f"#{host} .cm-content").focus()
            page.keyboard.press("Tab")
            still = focus(page)
            page.keyboard.press("Escape")
            after_esc = focus(page)
            page.keyboard.press("Tab")
            after_tab = focus(page)
            tried.append(f"{name} {host}")
            if still != inside or inside in (after_esc, after_tab):
                trapped[f"{name} {host}"] = f"Tab: {still}, Esc: {after_esc}, Tab: {after_tab}"
    return trapped, tried


def edit_and_validate_by_keyboard(page: Any, address: str) -> None:
    """Tab to the statement's editor (leaving the editors before it with Esc), type, Esc,
    Tab to "Save and validate", Enter: the draft is saved and its validation queued."""
    from authoring.services import draft_get
    from courses.models import Exercise, ExerciseJob

    page.goto(address)
    page.wait_for_selector("#statement-text-editor")
    stops = tab_until(page, lambda where: where == "editor:statement-text-editor")
    page.keyboard.press("Control+End")
    page.keyboard.type("\nTyped by keyboard alone.")
    page.keyboard.press("Escape")
    stops += tab_until(page, lambda where: where.startswith("button|save-validate-button|"))
    with page.expect_navigation():
        page.keyboard.press("Enter")

    assert "Saved; validation started." in page.locator(".messages").inner_text()
    exercise = Exercise.objects.get(slug=AUTHOR_CHAIN_RULE[1])
    statement = dict(draft_get(exercise=exercise).version.files)["statement.md"]
    assert "Typed by keyboard alone." in statement
    assert ExerciseJob.objects.filter(exercise=exercise, kind="validate").count() == 1
    assert any(stop.startswith("Esc: ") for stop in stops), stops  # through other editors


def test_a_phone_has_a_jump_to_editor_link_near_the_top_that_puts_the_focus_in_the_editor(
    live_server: Any, signed_in: Any, alice_learner: Any, page_problems: Any
) -> None:
    phone = signed_in(alice_learner, PHONE, **TOUCH)
    phone.goto(url(live_server, "exercise", MODULE_SLUG, "first-gradient"))
    phone.wait_for_selector("#code-editor")
    jump = phone.get_by_role("link", name="Jump to editor")
    box = jump.bounding_box()
    statement = phone.locator(".statement").bounding_box()

    assert box is not None and statement is not None
    assert box["y"] + box["height"] <= PHONE["height"] / 3 and box["y"] < statement["y"]
    assert box["height"] >= 24
    jump.tap()
    assert focus(phone) == "editor:code-editor"
    assert in_view(phone, phone.locator("#code-editor .cm-content .cm-line").first)
    assert page_problems.errors == []
