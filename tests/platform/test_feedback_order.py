"""The feedback page puts the cause first: a crash or syntax error once, before the checks,
with the line the editor marks; a timeout says what ran out and where the code was; the
generic "Wrong value" never stands beside a specific diagnosis; a point that rests on what
the code reported about itself carries a "claim" badge; and the instructor's page of one
learner counts each named mistake over their submissions.

Submissions carry a stored report as the worker saves it (Report.to_json())."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.urls import reverse
from django.utils.html import escape

from submissions.models import CheckResult, Submission

pytestmark = pytest.mark.django_db

MODULE = "autograd-backprop"
NEVER_CLOSED = "'(' was never closed"
SYNTAX_ERROR = {
    "type": "SyntaxError",
    "message": f"{NEVER_CLOSED} (submission.py, line 2)",
    "line": 2,
    "traceback": (
        f'  File "submission.py", line 2\n    x = torch.tensor(5.0\nSyntaxError: {NEVER_CLOSED}\n'
    ),
}
STOPPED = f" (your code stopped at line 2 with SyntaxError: {NEVER_CLOSED} (submission.py, line 2))"


def check(name: str, diagnosis: str = "", message: str = "", **data: Any) -> dict[str, Any]:
    return {
        "name": name,
        "passed": not diagnosis,
        "score": 0.0 if diagnosis else 2.0,
        "max_score": 2.0,
        "message": message,
        "diagnosis": diagnosis,
        "hint": "",
        "data": data,
    }


def report(*checks: dict[str, Any], **fields: Any) -> dict[str, Any]:
    earned = sum(c["score"] for c in checks)
    return {
        "status": "graded",
        "score": earned,
        "max_score": 10.0,
        "passed": False,
        "message": "",
        "checks": list(checks),
        "stdout": "",
        "exception": None,
        "curves": None,
        "duration_s": 0.5,
        "runtime": "bubblewrap torch-2.13.0 cpu",
        **fields,
    }


def submitted(learner: Any, catalog: Any, stored: dict[str, Any]) -> Submission:
    exercise = catalog.exercises.get(slug="chain-rule")
    submission = Submission.objects.create(
        learner=learner,
        exercise=exercise,
        version=exercise.current_version,
        code="import torch\nx = torch.tensor(5.0\n",
        status=Submission.Status.GRADED,
        score=stored["score"],
        max_score=10.0,
        passed=False,
        report=stored,
    )
    for order, c in enumerate(stored["checks"]):
        CheckResult.objects.create(
            submission=submission, order=order, name=c["name"], passed=c["passed"],
            score=c["score"], max_score=c["max_score"], diagnosis=c["diagnosis"],
        )  # fmt: skip
    return submission


def feedback_page(web: Any, user: Any, submission: Submission) -> str:
    response = web(user).get(reverse("web:submission", args=[submission.pk]))
    assert response.status_code == 200
    html = response.content.decode()
    return html[html.index('<div class="feedback"') :]


def syntax_error_report() -> dict[str, Any]:
    return report(
        check("runs without an error", "crashed", f"raised SyntaxError (line 2): {NEVER_CLOSED}"),
        check("x.grad equals 60", "crashed", "x is not defined" + STOPPED, want="60.0", got="-"),
        check("y equals 10", "crashed", "y is not defined" + STOPPED),
        exception=SYNTAX_ERROR,
    )  # fmt: skip


def test_a_syntax_error_is_shown_once_and_before_the_checks(
    web: Any, catalog: Any, alice_learner: Any
) -> None:
    page = feedback_page(
        web, alice_learner, submitted(alice_learner, catalog, syntax_error_report())
    )

    assert page.count(escape(NEVER_CLOSED)) == 1
    assert page.index('data-testid="crash"') < page.index('class="check-list')
    assert "Your code raised SyntaxError on line 2" in page
    assert 'data-error-line="2"' in page
    assert "Your code raised an error</h3>" not in page  # the crash is not a diagnosis too
    assert "<code>60.0</code>" in page  # each check keeps its expected-vs-yours


def test_a_timeout_says_what_ran_out_and_the_last_line_printed(
    web: Any, catalog: Any, alice_learner: Any
) -> None:
    stored = report(
        status="failed", message="time limit of 20 s exceeded", stdout="step 1\nstep 2\n"
    )
    page = feedback_page(web, alice_learner, submitted(alice_learner, catalog, stored))

    assert "0 checks failed" not in page
    assert "Your run did not finish." in page
    assert "Time ran out: time limit of 20 s exceeded" in page
    assert "The last line your code printed was: step 2" in page


def test_a_timeout_that_printed_nothing_says_the_report_does_not_know_where(
    web: Any, catalog: Any, alice_learner: Any
) -> None:
    stored = report(status="failed", message="CPU time limit of 10 s exceeded")
    page = feedback_page(web, alice_learner, submitted(alice_learner, catalog, stored))

    assert "Time ran out: CPU time limit of 10 s exceeded" in page
    assert "before it could say which line it was on" in page


def test_the_generic_wrong_value_never_stands_beside_a_specific_diagnosis(
    web: Any, catalog: Any, alice_learner: Any
) -> None:
    stored = report(
        check("x.grad equals 60", "graph-broken", "x.grad is None", want="60.0", got="None"),
        check("z equals 100", "wrong-value", "z differs", want="100.0", got="99.0"),
    )
    page = feedback_page(web, alice_learner, submitted(alice_learner, catalog, stored))

    titles = re.findall(r'data-testid="diagnosis-title">([^<]*)<', page)
    assert titles == ["Gradient never reached this tensor"]
    assert "<code>100.0</code>" in page and "<code>99.0</code>" in page
    alone = submitted(alice_learner, catalog, report(stored["checks"][1]))
    alone_page = feedback_page(web, alice_learner, alone)
    assert re.findall(r'data-testid="diagnosis-title">([^<]*)<', alone_page) == ["Wrong value"]


def test_a_point_resting_on_what_the_code_reported_carries_a_claim_badge(
    web: Any, catalog: Any, alice_learner: Any
) -> None:
    why = "`w` could not be given hidden starting values"
    stored = report(
        check("x.grad equals 60", claim=why),
        check("claim: no built-in derivative"),
        check("y equals 10"),
    )
    page = feedback_page(web, alice_learner, submitted(alice_learner, catalog, stored))

    badges = re.findall(
        r'<span class="badge badge-claim" data-testid="claim" title="([^"]*)"', page
    )
    assert len(badges) == 2
    assert all("what your code reported about itself" in title for title in badges)
    assert escape(why) in badges[0]


def test_the_learners_page_counts_each_named_mistake_over_their_submissions(
    web: Any, catalog: Any, alice_learner: Any, bob_instructor: Any
) -> None:
    broken = check("x.grad equals 60", "graph-broken", "x.grad is None")
    generic = check("z equals 100", "wrong-value", "z differs")
    submitted(alice_learner, catalog, report(broken, generic))
    submitted(alice_learner, catalog, report(broken, {**broken, "name": "w.grad equals 3"}))
    submitted(alice_learner, catalog, report(generic))

    url = reverse("web:teach_learner", args=[MODULE, alice_learner.pk])
    page = web(bob_instructor).get(url).content.decode()

    table = page[page.index('data-testid="mistakes"') :]
    rows = re.findall(r'<th scope="row">([^<]*)</th><td class="num"[^>]*>(\d+)</td>', table)
    assert rows == [("Gradient never reached this tensor", "2"), ("Wrong value", "1")]
