"""The CPU budget of judging a submission (grader.checks.budget): once it is spent, the
checks not reached score 0 with "grading budget exceeded", and the submission is graded
all the same (never failed, never retried as an infrastructure fault). A budget of 0 s
is certainly spent by any work, so nothing here depends on how fast the machine is."""

from __future__ import annotations

import pytest
from conftest import GradeCode
from grading_helpers import call, package_at, script_capture, tensor

from grader.capture import Capture
from grader.checks.budget import BUDGET_ENV, BUDGET_EXCEEDED, budget_seconds, grading_budget
from grader.report import build_report

CHAIN_RULE = package_at("chain-rule")


def chain_rule_capture() -> Capture:
    """What the chain-rule reference leaves: x = 2, y = x**2 + 1 = 5, z = y**3 = 125."""
    x = tensor([2.0], [], grad=[300.0], requires_grad=True)
    y = tensor([5.0], [], requires_grad=True, is_leaf=False, grad_fn="AddBackward0")
    z = tensor([125.0], [], requires_grad=True, is_leaf=False, grad_fn="PowBackward0")
    grads = {"x": tensor([300.0], [])}
    return script_capture({"x": x, "y": y, "z": z}, [call(125.0, before={}, after=grads)])


def test_a_spent_budget_scores_every_check_not_reached_zero_and_still_grades() -> None:
    capture = chain_rule_capture()

    with grading_budget(0.0):
        report = build_report(CHAIN_RULE, capture, capture, "test", 0.1)

    assert report.status == "graded"
    assert report.score == 0.0
    assert [c.message for c in report.checks] == [BUDGET_EXCEEDED] * len(report.checks)
    assert {c.diagnosis for c in report.checks} == {"grading-budget-exceeded"}
    assert not any(f.kind == "grading-error" for f in report.integrity_flags)


def test_the_same_capture_within_a_generous_budget_earns_its_points() -> None:
    capture = chain_rule_capture()

    with grading_budget(3_600.0):
        report = build_report(CHAIN_RULE, capture, capture, "test", 0.1)

    assert report.status == "graded"
    assert report.score > 0.0
    assert all(c.message != BUDGET_EXCEEDED for c in report.checks)


def test_the_budget_is_read_from_the_environment_with_a_generous_default(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(BUDGET_ENV, raising=False)
    assert budget_seconds() == 20.0
    monkeypatch.setenv(BUDGET_ENV, "0.5")
    assert budget_seconds() == 0.5
    for junk in ("soon", "-1", "nan"):
        monkeypatch.setenv(BUDGET_ENV, junk)
        assert budget_seconds() == 20.0


def test_a_nested_budget_keeps_the_outer_one() -> None:
    with grading_budget(0.0) as outer, grading_budget(3_600.0) as inner:
        assert inner is outer
        assert inner.spent()


@pytest.mark.sandbox
def test_a_submission_that_exhausts_the_budget_is_graded_with_the_report_saying_so(
    grade_code: GradeCode, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(BUDGET_ENV, "0")

    report = grade_code("chain-rule", CHAIN_RULE.solution)

    assert report.status == "graded"
    assert report.score == 0.0
    assert report.message.startswith(BUDGET_EXCEEDED)
    assert all(c.message.endswith(BUDGET_EXCEEDED) for c in report.checks)
