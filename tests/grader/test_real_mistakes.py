"""Real wrong submissions, graded through the real bubblewrap sandbox, are named for the
mistake they really make: the diagnosis of one named check is asserted, so a diagnosis
that only appears on some other check does not pass these tests."""

from __future__ import annotations

import pytest
from conftest import GradeCode
from grading_helpers import REPO

pytestmark = pytest.mark.sandbox


def exercise_file(slug: str, name: str) -> str:
    return (REPO / "exercises" / slug / name).read_text(encoding="utf-8")


def no_step(steps: int) -> str:
    return exercise_file("training-loop", "wrong/no-step.py").replace(
        "range(200)", f"range({steps})"
    )


# (package, code, check name, diagnosis of that check)
CASES: list[tuple[str, str, str, str]] = [
    (
        "retain-grad",
        exercise_file("retain-grad", "starter.py"),
        "x.grad is 36",
        "no-backward",
    ),
    (
        "non-scalar-backward",
        exercise_file("non-scalar-backward", "wrong/typed-message.py"),
        "error_message holds the non-scalar backward error",
        "hard-coded",
    ),
    (
        "training-loop",
        no_step(300),
        "the loss falls and ends below 0.001",
        "loss-flat",
    ),
    (
        "training-loop",
        exercise_file("training-loop", "wrong/forgot-zero-grad.py"),
        "the loss falls and ends below 0.001",
        "forgot-zero-grad",
    ),
    (
        "training-loop",
        exercise_file("training-loop", "wrong/backward-twice-per-step.py"),
        "one backward() per optimizer step",
        "extra-backward",
    ),
    (
        "training-loop",
        exercise_file("training-loop", "solution.py").replace("range(200)", "range(12)"),
        "the loss falls and ends below 0.001",
        "not-converged",
    ),
    (
        "safe-backward",
        exercise_file("safe-backward", "wrong/no-valueerror.py"),
        "ValueError exactly where y does not require grad",
        "missing-value-error",
    ),
    (
        "gradient-accumulation",
        exercise_file("gradient-accumulation", "wrong/cleared-between.py"),
        "x.grad after each backward pass: 6, then 12",
        "cleared-between-passes",
    ),
    (
        "multiple-variables",
        exercise_file("multiple-variables", "wrong/item-breaks-graph.py"),
        "x.grad is dz/dx = y + 1 = 6",
        "graph-broken",
    ),
    (
        "on-device",
        "import torch\n\nw = torch.tensor([1.0, 2.0], device='meta')\n",
        "w lives on the worker's device",
        "device-mismatch",
    ),
]


@pytest.mark.parametrize(
    ("package", "code", "check", "diagnosis"),
    CASES,
    ids=[f"{c[0]}-{c[3]}" for c in CASES],
)
def test_the_named_check_gives_the_real_mistake(
    grade_code: GradeCode, package: str, code: str, check: str, diagnosis: str
) -> None:
    report = grade_code(package, code)
    assert report.status == "graded", report.message
    by_name = {c.name: c for c in report.checks}
    assert not by_name[check].passed
    assert by_name[check].diagnosis == diagnosis, [(c.name, c.diagnosis) for c in report.checks]


def test_code_that_uses_the_device_variable_passes_the_device_check(
    grade_code: GradeCode,
) -> None:
    code = exercise_file("device-agnostic-training", "solution.py")
    report = grade_code("device-agnostic-training", code)
    assert report.passed, [(c.name, c.message) for c in report.checks if not c.passed]
    device = {c.name: c for c in report.checks}["the model lives on the worker's device"]
    assert device.passed and ("cpu" in device.message or "cuda" in device.message)


def test_a_failed_grad_check_shows_expected_and_got_for_the_visible_example(
    grade_code: GradeCode,
) -> None:
    code = exercise_file("safe-backward", "wrong/mean-then-backward.py")
    report = grade_code("safe-backward", code)
    grad = {c.name: c for c in report.checks}["x.grad after backward_any(y)"]
    assert grad.diagnosis == "scaled-by-n"
    assert grad.data["got"] != grad.data["want"]
    assert "tensor(" in grad.data["got"] and "tensor(" in grad.data["want"]


def test_a_typed_message_cannot_score_the_message_check(grade_code: GradeCode) -> None:
    report = grade_code(
        "non-scalar-backward", exercise_file("non-scalar-backward", "wrong/typed-message.py")
    )
    assert not report.passed and report.score == report.max_score - 2
