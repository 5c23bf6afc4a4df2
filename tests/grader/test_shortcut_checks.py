"""Shortcuts graded through the real bubblewrap sandbox: the right numbers reached without
the technique the statement asks for fail the exercise's shortcut check, with its own
diagnosis, from what the recorder saw the run do; honest answers written unlike the
reference (the packages' alternatives, and the variants here) pass it.

SHORTCUTS: (diagnosis, package, code, the shortcut check's name); every other check
passes, since the numbers are right (before these checks each scored 10/10)."""

from __future__ import annotations

import pytest
from conftest import GradeCode
from grading_helpers import REPO, failed_diagnoses

from grader.authoring.mutants import generate
from grader.checks.diagnoses.catalogue import DIAGNOSES

pytestmark = pytest.mark.sandbox


def exercise_file(slug: str, name: str) -> str:
    return (REPO / "exercises" / slug / name).read_text(encoding="utf-8")


SECOND_ORDER = "the second-order values differentiate first derivatives taken with create_graph"
REUSED = "the second backward goes through the graph the first one retained"
SAME_LEAF = "w and b stay the same leaf tensors, updated in place"
PER_BATCH = "before each next micro-batch, param.grad holds the gradient accumulated so far"

# A new leaf made after the old one is gone: its address may be the old one's, and it is
# still another tensor.
DELETED_THEN_REMADE = """import torch

x, target = torch.tensor(2.0), torch.tensor(10.0)
w = torch.tensor(1.0, requires_grad=True)
b = torch.tensor(0.0, requires_grad=True)
for step in range(10):
    loss = (w * x + b - target) ** 2
    loss.backward()
    new_w, new_b = w.item() - 0.01 * w.grad.item(), b.item() - 0.01 * b.grad.item()
    del w, b, loss
    w = torch.tensor(new_w, requires_grad=True)
    b = torch.tensor(new_b, requires_grad=True)
"""

# retain_graph=True, the old graph dropped and y computed again before the second call.
DROPPED_THEN_REBUILT = """import torch

x = torch.tensor(2.0, requires_grad=True)
y = x * x
y.backward(retain_graph=True)
del y
y = x * x
y.backward()
try:
    y.backward()
except RuntimeError as error:
    double_backward_error = str(error)
"""

# d2ydx2 by a formula on the first derivative (hvp honestly): one second derivative short.
FORMULA = """import torch

x = torch.tensor(3.0, requires_grad=True)
(dydx,) = torch.autograd.grad(x**3, x, create_graph=True)
d2ydx2 = 2 * dydx.detach() / x.detach()  # 6x, from 3x^2 by hand
A = torch.tensor([[2.0, 1.0], [1.0, 3.0]])
w = torch.tensor([1.0, 2.0], requires_grad=True)
v = torch.tensor([1.0, -1.0])
(g,) = torch.autograd.grad(w @ A @ w, w, create_graph=True)
(hvp,) = torch.autograd.grad(g @ v, w)
z = torch.tensor(3.0, requires_grad=True)
(plain,) = torch.autograd.grad(z**3, z)
try:
    torch.autograd.grad(plain, z)
except RuntimeError as error:
    second_order_error = str(error)
"""

SHORTCUTS: list[tuple[str, str, str, str]] = [
    (
        "no-double-backward",
        "higher-order-gradients",
        exercise_file("higher-order-gradients", "wrong/finite-differences.py"),
        SECOND_ORDER,
    ),
    ("no-double-backward", "higher-order-gradients", FORMULA, SECOND_ORDER),
    (
        "graph-not-reused",
        "retain-graph",
        exercise_file("retain-graph", "wrong/rebuilt-before-second-call.py"),
        REUSED,
    ),
    ("graph-not-reused", "retain-graph", DROPPED_THEN_REBUILT, REUSED),
    (
        "leaf-recreated",
        "manual-gradient-descent",
        exercise_file("manual-gradient-descent", "wrong/leaf-from-item.py"),
        SAME_LEAF,
    ),
    ("leaf-recreated", "manual-gradient-descent", DELETED_THEN_REMADE, SAME_LEAF),
    (
        "single-backward",
        "micro-batch-accumulation",
        exercise_file("micro-batch-accumulation", "wrong/concatenated-outputs.py"),
        PER_BATCH,
    ),
]


@pytest.mark.parametrize(
    ("diagnosis", "package", "code", "check"),
    SHORTCUTS,
    ids=[f"{s[1]}-{i}" for i, s in enumerate(SHORTCUTS)],
)
def test_a_shortcut_with_the_right_numbers_fails_its_own_check(
    grade_code: GradeCode, diagnosis: str, package: str, code: str, check: str
) -> None:
    report = grade_code(package, code)
    assert report.status == "graded", report.message
    found = failed_diagnoses(report)
    assert found == {check: diagnosis}, found
    named = next(c for c in report.checks if c.name == check)
    assert named.hint == DIAGNOSES[diagnosis].hint


# Honest answers unlike the reference's (besides the packages' own alternatives, which
# package validation grades): the shortcut check must not fail them.
HONEST: list[tuple[str, str, str]] = [
    (
        "higher-order-gradients",
        SECOND_ORDER,
        exercise_file("higher-order-gradients", "alternatives/torch-func.py"),
    ),
    (
        "higher-order-gradients",
        SECOND_ORDER,
        "import torch\n\n"
        "x = torch.tensor(3.0, requires_grad=True)\n"
        "A = torch.tensor([[2.0, 1.0], [1.0, 3.0]])\n"
        "w = torch.tensor([1.0, 2.0], requires_grad=True)\n"
        "v = torch.tensor([1.0, -1.0])\n"
        "dydx, g = torch.autograd.grad([x**3, w @ A @ w], [x, w], create_graph=True)\n"
        "# both second-order values from one call through both derivatives\n"
        "d2ydx2, hvp = torch.autograd.grad([dydx, g @ v], [x, w])\n"
        "z = torch.tensor(3.0, requires_grad=True)\n"
        "(plain,) = torch.autograd.grad(z**3, z)\n"
        "try:\n    torch.autograd.grad(plain, z)\n"
        "except RuntimeError as error:\n    second_order_error = str(error)\n",
    ),
    (
        "retain-graph",
        REUSED,
        exercise_file("retain-graph", "alternatives/helper-function.py"),
    ),
    (
        "manual-gradient-descent",
        SAME_LEAF,
        exercise_file("manual-gradient-descent", "alternatives/copy-in-step.py"),
    ),
    (
        "micro-batch-accumulation",
        PER_BATCH,
        exercise_file("micro-batch-accumulation", "alternatives/autograd-grad-by-hand.py"),
    ),
]


@pytest.mark.parametrize(
    ("package", "check", "code"), HONEST, ids=[f"{h[0]}-{i}" for i, h in enumerate(HONEST)]
)
def test_an_honest_answer_unlike_the_reference_passes_the_shortcut_check(
    grade_code: GradeCode, package: str, check: str, code: str
) -> None:
    report = grade_code(package, code)
    assert report.status == "graded", report.message
    assert report.passed, failed_diagnoses(report)
    assert any(c.name == check and c.passed for c in report.checks)


@pytest.mark.parametrize(
    ("package", "mutation", "diagnosis"),
    [
        ("retain-graph", "rebuilt-graph", "graph-not-reused"),
        ("manual-gradient-descent", "recreated-leaf", "leaf-recreated"),
    ],
)
def test_the_shortcut_mutants_of_the_course_are_caught_by_their_own_check(
    grade_code: GradeCode, package: str, mutation: str, diagnosis: str
) -> None:
    mutants = [m for m in generate(exercise_file(package, "solution.py")) if m.mutation == mutation]
    assert mutants
    for mutant in mutants:
        report = grade_code(package, mutant.source)
        assert set(failed_diagnoses(report).values()) == {diagnosis}, mutant.name
