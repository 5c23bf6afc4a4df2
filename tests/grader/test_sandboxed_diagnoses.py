"""Real wrong submissions, graded through the real bubblewrap sandbox, are named for the
mistake they make.

CASES: every diagnosis of FORMAT.md section 5 has a wrong submission (the skill checks'
in test_skill_checks_sandbox.FORBIDDEN), and the test
asserts the diagnosis of every failed check, so one named for the wrong mistake fails.
NAMED_CHECK_CASES: submissions from the course's packages (and variants of them) whose
one named check must carry the real mistake, so a diagnosis that only appears on some
other check does not pass."""

from __future__ import annotations

import pytest
from conftest import GradeCode
from grading_helpers import REPO, failed_diagnoses
from test_shortcut_checks import SHORTCUTS
from test_skill_checks_sandbox import FORBIDDEN as SKILL_FORBIDDEN
from test_skills_by_construction import DIAGNOSED as BY_CONSTRUCTION

from grader.checks.diagnoses.catalogue import DIAGNOSES

pytestmark = pytest.mark.sandbox

HEADER = "import torch\n\n"
VECTOR = "x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)\n"
RETAIN = "y = x * 2\ny.retain_grad()\n"
SUM = "loss = (y**2).sum()\n"
LINEAR = (
    HEADER + "x = torch.tensor(2.0)\ntarget = torch.tensor(10.0)\n"
    "w = torch.tensor(3.0, requires_grad=True)\nb = torch.tensor(1.0, requires_grad=True)\n"
    "prediction = w * x + b\nloss = (prediction - target) ** 2\n"
)

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
        "wrong-backward-root",
        "linear-regression-gradient",
        LINEAR + "prediction.backward()\n",
        {"w.grad": "wrong-backward-root", "b.grad": "wrong-backward-root"},
    ),
    (
        "grad-cleared",
        "first-gradient",
        HEADER + "x = torch.tensor(5.0, requires_grad=True)\ny = x**2\n"
        "y.backward()\nprint(x.grad)\nx.grad = None\n",
        "grad-cleared",
    ),
    (
        "grad-not-stored",
        "first-gradient",
        HEADER + "x = torch.tensor(5.0, requires_grad=True)\ny = x**2\n"
        "print(torch.autograd.grad(y, x)[0])\n",
        "grad-not-stored",
    ),
    (
        "inputs-excluded",
        "linear-regression-gradient",
        LINEAR + "loss.backward(inputs=[w])\n",
        "inputs-excluded",
    ),
    (
        "backward-skipped",
        "non-scalar-backward",
        HEADER + "x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)\ny = x**2\n"
        "try:\n    y.backward()\n    y.backward(torch.ones_like(y))\n"
        "except RuntimeError as error:\n    error_message = str(error)\n",
        {"x.grad": "backward-skipped"},
    ),
    (
        "params-edited",
        "training-loop",
        HEADER + "x = torch.linspace(-1.0, 1.0, 20)\nw = torch.tensor(0.0, requires_grad=True)\n"
        "b = torch.tensor(0.0, requires_grad=True)\n"
        "optimizer = torch.optim.SGD([w, b], lr=0.1)\nfor step in range(10):\n"
        "    optimizer.zero_grad()\n    loss = ((w * x + b - 2 * x - 1) ** 2).mean()\n"
        "    loss.backward()\n    optimizer.step()\n    print(loss.item())\n"
        "with torch.no_grad():\n    w.copy_(torch.tensor(2.0))\n    b.fill_(1.0)\n",
        {"learned w": "params-edited", "learned b": "params-edited"},
    ),
    (
        "not-from-autograd",
        "gradient-accumulation",
        HEADER + "x = torch.tensor(3.0, requires_grad=True)\n"
        "(x**2).backward()\n(x**2).backward()\naccumulated = torch.tensor(12.0)\n"
        "x.grad.zero_()\n",
        {"accumulated": "not-from-autograd"},
    ),
    (
        "full-jacobian",
        "vector-jacobian-product",
        "import torch\n\n\ndef vjp(f, x, v):\n"
        "    jacobian = torch.autograd.functional.jacobian(f, x)\n"
        "    return torch.tensordot(v, jacobian, dims=v.dim())\n",
        {"one backward pass per call": "full-jacobian"},
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


CASES.append(
    (
        "backward-per-input",
        "multiple-variables",
        HEADER + "x = torch.tensor(4.0, requires_grad=True)\n"
        "y = torch.tensor(5.0, requires_grad=True)\nz = x * y + x\n"
        "z.backward(inputs=[x], retain_graph=True)\nz.backward(inputs=[y])\n",
        "backward-per-input",
    )
)
CASES.append(
    (
        "copied-too-early",
        "gradient-accumulation",
        HEADER + "x = torch.tensor(3.0, requires_grad=True)\n(x**2).backward()\n"
        "accumulated = x.grad.clone()\n(x**2).backward()\nx.grad.zero_()\n",
        "copied-too-early",
    )
)
CASES.append(
    (
        "missing-seed",
        "fix-the-training-loop",
        (REPO / "exercises" / "fix-the-training-loop" / "wrong" / "no-seed.py").read_text(
            encoding="utf-8"
        ),
        "missing-seed",
    )
)


def test_every_diagnosis_of_the_format_has_a_sandboxed_wrong_submission() -> None:
    """Here, among the skill checks' forbidden submissions (test_skill_checks_sandbox),
    the shortcuts (test_shortcut_checks) or the checks by construction."""
    skills = {diagnosis for *_, diagnosis in SKILL_FORBIDDEN}
    skills |= {diagnosis for diagnosis, *_ in SHORTCUTS} | set(BY_CONSTRUCTION)
    # Not a learner's mistake: the grader's own budget, graded in the sandbox by
    # tests/grader/test_grading_budget.py.
    ours = {"grading-budget-exceeded"}
    assert {case[0] for case in CASES} | skills | ours == set(DIAGNOSES)


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


def exercise_file(slug: str, name: str) -> str:
    return (REPO / "exercises" / slug / name).read_text(encoding="utf-8")


def no_step(steps: int) -> str:
    return exercise_file("training-loop", "wrong/no-step.py").replace(
        "range(200)", f"range({steps})"
    )


# The course notes' nn.Linear, trained until the loss is below 0.001, then its parameters
# set by hand: read through module_param, they are still params-edited.
LINEAR_THEN_FILLED = (
    exercise_file("training-loop", "alternatives/nn-linear-course-notes.py").replace(
        "range(1500)", "range(150)"
    )
    + "with torch.no_grad():\n    model.weight.fill_(2.0)\n    model.bias.fill_(1.0)\n"
)

# (package, code, check name, diagnosis of that check)
ON_META = (
    exercise_file("device-agnostic-training", "solution.py")
    .replace('torch.device("cuda" if torch.cuda.is_available() else "cpu")', 'torch.device("meta")')
    .replace('    print(f"loss {loss.item():.6f} on {device}")\n', "")
)

NAMED_CHECK_CASES: list[tuple[str, str, str, str]] = [
    ("training-loop", LINEAR_THEN_FILLED, "learned w is close to 2", "params-edited"),
    ("training-loop", LINEAR_THEN_FILLED, "learned b is close to 1", "params-edited"),
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
    # An honest model trained on the data-less meta device: nothing to compare, so the
    # value and grad checks fail even though they accept any device.
    (
        "device-agnostic-training",
        ON_META,
        "parameters after the four training steps",
        "device-mismatch",
    ),
    (
        "device-agnostic-training",
        ON_META,
        "gradients of the last training step",
        "device-mismatch",
    ),
]


@pytest.mark.parametrize(
    ("package", "code", "check", "diagnosis"),
    NAMED_CHECK_CASES,
    ids=[f"{c[0]}-{c[3]}" for c in NAMED_CHECK_CASES],
)
def test_the_named_check_of_a_real_submission_gives_the_real_mistake(
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


def test_a_model_trained_on_the_meta_device_scores_no_value_or_grad_points(
    grade_code: GradeCode,
) -> None:
    assert 'torch.device("meta")' in ON_META and "print(" not in ON_META
    report = grade_code("device-agnostic-training", ON_META)
    assert report.status == "graded", report.message
    assert report.score <= 2 and report.integrity_flags == ()
    right = grade_code(
        "device-agnostic-training", exercise_file("device-agnostic-training", "solution.py")
    )
    assert right.passed


# Odd but honest numbers: a subnormal float64 gradient (10 * 1e-311) and a Python int of
# 401 digits must give a report naming the mistake, never a crash or a retry.
SUBNORMAL_GRAD = (
    "import torch\n\nx = torch.tensor(5.0, dtype=torch.float64, requires_grad=True)\n"
    "y = x**2\n(y * 1e-311).backward()\n"
)
HUGE_INT = (
    "import torch\n\nx = torch.tensor(5.0, requires_grad=True)\n(x**2).backward()\ny = 10**400\n"
)


@pytest.mark.parametrize(
    ("code", "check", "diagnosis"),
    [
        (SUBNORMAL_GRAD, "x.grad is dy/dx = 2x = 10", "wrong-value"),
        (HUGE_INT, "y is x squared", "wrong-type"),
    ],
    ids=["subnormal-grad", "huge-int"],
)
def test_odd_numbers_from_honest_code_are_graded_and_named(
    grade_code: GradeCode, code: str, check: str, diagnosis: str
) -> None:
    report = grade_code("first-gradient", code)
    assert report.status == "graded", report.message
    by_name = {c.name: c for c in report.checks}
    assert (by_name[check].passed, by_name[check].diagnosis) == (False, diagnosis)
    assert not [f for f in report.integrity_flags if f.kind == "grading-error"]
