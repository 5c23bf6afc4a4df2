"""Every diagnosis of FORMAT.md section 5, produced by a real wrong submission graded
through the real bubblewrap sandbox. Each test asserts the diagnosis of every failed
check, so a submission that is named for the wrong mistake fails the test."""

from __future__ import annotations

import pytest
from conftest import GradeCode
from grading_helpers import failed_diagnoses

from grader.diagnose import DIAGNOSES

pytestmark = pytest.mark.sandbox

HEADER = "import torch\n\n"
VECTOR = "x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)\n"
RETAIN = "y = x * 2\ny.retain_grad()\n"
SUM = "loss = (y**2).sum()\n"

# (diagnosis, package, code, the failed checks' diagnoses: {check name fragment: slug}
# or one slug that every failed check must carry)
CASES: list[tuple[str, str, str, str | dict[str, str]]] = [
    (
        "forgot-zero-grad",
        "vector-square",
        HEADER + VECTOR + RETAIN + SUM + "loss.backward(retain_graph=True)\nloss.backward()\n",
        {"x.grad": "forgot-zero-grad", "y.grad": "forgot-zero-grad"},
    ),
    (
        "sign-error",
        "vector-square",
        HEADER + VECTOR + RETAIN + SUM + "(-loss).backward()\n",
        "sign-error",
    ),
    (
        "scaled-by-n",
        "vector-square",
        HEADER + VECTOR + RETAIN + "loss = (y**2).mean()\nloss.backward()\n",
        "scaled-by-n",
    ),
    (
        "unscaled-microbatch-loss",
        "chunked-mean",
        "def accumulate(x, chunks):\n    for part in x.chunk(chunks):\n"
        "        (part**2).mean().backward()\n",
        "unscaled-microbatch-loss",
    ),
    (
        "graph-broken",
        "vector-square",
        HEADER
        + VECTOR
        + "y = x.detach() * 2\ny.requires_grad_()\ny.retain_grad()\n"
        + SUM
        + "loss.backward()\n",
        "graph-broken",
    ),
    (
        "missing-retain-grad",
        "vector-square",
        HEADER + VECTOR + "y = x * 2\n" + SUM + "loss.backward()\n",
        "missing-retain-grad",
    ),
    (
        "nonscalar-backward",
        "vector-square",
        HEADER + VECTOR + RETAIN + "loss = y**2\nloss.backward()\n",
        "nonscalar-backward",
    ),
    (
        "freed-graph",
        "first-gradient",
        HEADER + "x = torch.tensor(5.0, requires_grad=True)\ny = x**2\n"
        "y.backward()\ny.backward()\n",
        "freed-graph",
    ),
    (
        "inplace-leaf",
        "vector-square",
        HEADER + VECTOR + "x += 1\n" + RETAIN + SUM + "loss.backward()\n",
        "inplace-leaf",
    ),
    (
        "loss-flat",
        "tiny-training",
        (
            "import torch\n\nx = torch.tensor([1.0, 2.0, 3.0])\nw = torch.zeros(1, "
            "requires_grad=True)\nfor step in range(20):\n    w.grad = None\n"
            "    loss = ((w * x - 2 * x) ** 2).mean()\n    loss.backward()\n"
            "    print(loss.item())\n"
        ),
        "loss-flat",
    ),
    (
        "loss-diverges",
        "tiny-training",
        (
            "import torch\n\nx = torch.tensor([1.0, 2.0, 3.0])\nw = torch.zeros(1, "
            "requires_grad=True)\noptimizer = torch.optim.SGD([w], lr=1.0)\n"
            "for step in range(20):\n    optimizer.zero_grad()\n"
            "    loss = ((w * x - 2 * x) ** 2).mean()\n    loss.backward()\n"
            "    optimizer.step()\n    print(loss.item())\n"
        ),
        "loss-diverges",
    ),
    (
        "not-converged",
        "tiny-training",
        (
            "import torch\n\nx = torch.tensor([1.0, 2.0, 3.0])\nw = torch.zeros(1, "
            "requires_grad=True)\noptimizer = torch.optim.SGD([w], lr=0.005)\n"
            "for step in range(20):\n    optimizer.zero_grad()\n"
            "    loss = ((w * x - 2 * x) ** 2).mean()\n    loss.backward()\n"
            "    optimizer.step()\n    print(loss.item())\n"
        ),
        "not-converged",
    ),
    (
        "no-backward",
        "vector-square",
        HEADER + VECTOR + RETAIN + SUM + "print(x.grad)\n",
        "no-backward",
    ),
    (
        "hard-coded",
        "first-gradient",
        HEADER + "x = torch.tensor(5.0, requires_grad=True)\ny = x**2\n"
        "x.grad = torch.tensor(10.0)\n",
        "hard-coded",
    ),
    (
        "missing-name",
        "vector-square",
        HEADER + VECTOR + RETAIN + "total = (y**2).sum()\ntotal.backward()\n",
        "missing-name",
    ),
    (
        "wrong-type",
        "vector-square",
        HEADER + VECTOR + RETAIN + SUM + "loss.backward()\nloss = loss.item()\n",
        "wrong-type",
    ),
    (
        "shape-mismatch",
        "vector-square",
        HEADER
        + "x = torch.tensor([[1.0, 2.0, 3.0]], requires_grad=True)\n"
        + RETAIN
        + SUM
        + "loss.backward()\n",
        {"x.grad": "shape-mismatch", "y.grad": "shape-mismatch"},
    ),
    (
        "dtype-mismatch",
        "vector-square",
        HEADER + "x = torch.tensor([1.0, 2.0, 3.0], dtype=torch.float16, "
        "requires_grad=True)\n" + RETAIN + SUM + "loss.backward()\n",
        "dtype-mismatch",
    ),
    (
        "device-mismatch",
        "vector-square",
        HEADER
        + "x = torch.tensor([1.0, 2.0, 3.0], device='meta', requires_grad=True)\n"
        + RETAIN
        + SUM
        + "loss.backward()\n",
        "device-mismatch",
    ),
    (
        "crashed",
        "vector-square",
        HEADER + VECTOR + RETAIN + "loss = (y**2).sum() / undefined_scale\nloss.backward()\n",
        "crashed",
    ),
    (
        "wrong-value",
        "vector-square",
        HEADER
        + "x = torch.tensor([1.0, 2.0, 4.0], requires_grad=True)\n"
        + RETAIN
        + SUM
        + "loss.backward()\n",
        "wrong-value",
    ),
]


def test_every_diagnosis_of_the_format_has_a_sandboxed_wrong_submission() -> None:
    assert {case[0] for case in CASES} == set(DIAGNOSES)


@pytest.mark.parametrize(
    ("diagnosis", "package", "code", "expected"), CASES, ids=[c[0] for c in CASES]
)
def test_wrong_submission_is_named_for_its_mistake(
    grade_code: GradeCode,
    diagnosis: str,
    package: str,
    code: str,
    expected: str | dict[str, str],
) -> None:
    report = grade_code(package, code)
    assert report.status == "graded", report.message
    assert not report.passed
    found = failed_diagnoses(report)
    if isinstance(expected, str):
        assert found and set(found.values()) == {expected}, found
    else:
        for fragment, slug in expected.items():
            matching = [d for name, d in found.items() if fragment in name]
            assert matching == [slug], found
        assert diagnosis in found.values()
    named = [c for c in report.checks if c.diagnosis == diagnosis]
    assert all(c.hint == DIAGNOSES[diagnosis].hint for c in named)
