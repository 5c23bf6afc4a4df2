"""The scaled run (FORMAT.md section 2, grader.engine.scaled_reference): a script exercise
is graded once more with every gradient seed scaled, so a value typed in or worked out by
hand, right only at the fixed inputs, fails as `not-from-autograd`; honest solutions
written unlike the reference (another backward API, explicit seeds, copies through
.item(), a loop, hooks, torch.func, a longer or shorter chain of derivatives than the
reference's) follow the scale and keep full marks. All graded through the real sandbox."""

from __future__ import annotations

import re

import pytest
from conftest import GradeCode
from grading_helpers import failed_diagnoses, package_at

from grader.cache import ReferenceCache
from grader.checks.diagnoses.catalogue import DIAGNOSES
from grader.engine import DEV_SEED
from grader.runs.reference import reference_capture
from grader.runs.second import SCALED, scaled_reference
from grader.sandbox.base import Sandbox
from grader.spec import Package

pytestmark = pytest.mark.sandbox

HEADER = "import torch\n\n"
TWO_PASSES = "x = torch.tensor(3.0, requires_grad=True)\n(x**2).backward()\n(x**2).backward()\n"
SECOND = (
    "x = torch.tensor(3.0, requires_grad=True)\ny = x**3\n"
    "(dydx,) = torch.autograd.grad(y, x, create_graph=True)\n"
)
HVP = (
    "A = torch.tensor([[2.0, 1.0], [1.0, 3.0]])\n"
    "w = torch.tensor([1.0, 2.0], requires_grad=True)\nv = torch.tensor([1.0, -1.0])\n"
    "f = w @ A @ w\n(g,) = torch.autograd.grad(f, w, create_graph=True)\n"
)
MESSAGE = (
    "z = torch.tensor(3.0, requires_grad=True)\n(plain,) = torch.autograd.grad(z**3, z)\n"
    "second_order_error = ''\ntry:\n    torch.autograd.grad(plain, z)\n"
    "except RuntimeError as error:\n    second_order_error = str(error)\n"
)

# (id, package, code, {check name fragment: diagnosis})
TYPED_IN: list[tuple[str, str, str, dict[str, str]]] = [
    (
        "accumulated-literal",
        "gradient-accumulation",
        HEADER + TWO_PASSES + "accumulated = torch.tensor(12.0)\nx.grad.zero_()\n",
        {"accumulated": "not-from-autograd"},
    ),
    (
        "accumulated-by-hand",
        "gradient-accumulation",
        HEADER + TWO_PASSES + "accumulated = 2 * (2 * x.detach())\nx.grad.zero_()\n",
        {"accumulated": "not-from-autograd"},
    ),
    (
        "accumulated-from-the-loss-value",
        "gradient-accumulation",
        HEADER + TWO_PASSES + "accumulated = (x**2).detach() + 3\nx.grad.zero_()\n",
        {"accumulated": "not-from-autograd"},
    ),
    (
        "second-derivative-literal",
        "higher-order-gradients",
        HEADER + SECOND + "d2ydx2 = torch.tensor(18.0)\n" + HVP
        + "(hvp,) = torch.autograd.grad(g @ v, w)\n" + MESSAGE,
        {"d2ydx2": "not-from-autograd"},
    ),
    (
        "hvp-by-hand",
        "higher-order-gradients",
        HEADER + SECOND + "(d2ydx2,) = torch.autograd.grad(dydx, x)\n" + HVP
        + "hvp = (A + A.T) @ v\n" + MESSAGE,
        {"hvp": "not-from-autograd"},
    ),
]  # fmt: skip


@pytest.mark.parametrize(
    ("package", "code", "expected"), [c[1:] for c in TYPED_IN], ids=[c[0] for c in TYPED_IN]
)
def test_a_value_typed_in_or_worked_out_by_hand_is_not_from_autograd(
    grade_code: GradeCode, package: str, code: str, expected: dict[str, str]
) -> None:
    report = grade_code(package, code)
    assert report.status == "graded", report.message
    found = failed_diagnoses(report)
    scaled = {c.name for c in report.checks if not c.passed and c.message.startswith(SCALED)}
    assert {found[name] for name in scaled} == set(expected.values()), found
    for fragment, slug in expected.items():
        named = [c for c in report.checks if fragment in c.name]
        assert [c.diagnosis for c in named] == [slug], found
        assert named[0].hint == DIAGNOSES[slug].hint
        assert named[0].message.startswith(SCALED)


# (id, package, code): honest solutions that differ from the reference's in the way the
# gradients are seeded, copied or combined.
HONEST: list[tuple[str, str, str]] = [
    (
        "accumulated-through-item",
        "gradient-accumulation",
        HEADER + TWO_PASSES + "accumulated = torch.tensor(x.grad.item())\nx.grad.zero_()\n",
    ),
    (
        "explicit-seeds-and-autograd-backward",
        "gradient-accumulation",
        HEADER + "x = torch.tensor(3.0, requires_grad=True)\n"
        "(x**2).backward(torch.tensor(1.0))\ntorch.autograd.backward([x**2], [torch.ones(())])\n"
        "accumulated = x.grad * 1.0\nx.grad -= x.grad\n",
    ),
    (
        "a-hook-doubles-nothing",
        "gradient-accumulation",
        HEADER + "x = torch.tensor(3.0, requires_grad=True)\nseen = []\n"
        "x.register_hook(lambda g: seen.append(g.clone()))\n"
        "for _ in range(2):\n    (x * x).backward()\n"
        "accumulated = seen[0] + seen[1]\nx.grad = torch.zeros_like(x)\n",
    ),
    (
        "second-order-by-backward",
        "higher-order-gradients",
        HEADER + "x = torch.tensor(3.0, requires_grad=True)\n(x**3).backward(create_graph=True)\n"
        "dydx = x.grad\nx.grad = None\n(d2ydx2,) = torch.autograd.grad(dydx, x)\n"
        + HVP + "(hvp,) = torch.autograd.grad(g, w, grad_outputs=v)\n" + MESSAGE,
    ),
    (
        "hvp-by-the-functional-api",
        "higher-order-gradients",
        HEADER + SECOND + "(d2ydx2,) = torch.autograd.grad(dydx, x)\n"
        "A = torch.tensor([[2.0, 1.0], [1.0, 3.0]])\n"
        "w = torch.tensor([1.0, 2.0])\nv = torch.tensor([1.0, -1.0])\n"
        "_, hvp = torch.autograd.functional.hvp(lambda u: u @ A @ u, w, v)\n" + MESSAGE,
    ),
    (
        "second-order-by-torch-func",
        "higher-order-gradients",
        HEADER + "from torch.func import grad, jvp\n\nx = torch.tensor(3.0, requires_grad=True)\n"
        "dydx = grad(lambda t: t**3)(x)\nd2ydx2 = grad(grad(lambda t: t**3))(x)\n"
        "A = torch.tensor([[2.0, 1.0], [1.0, 3.0]])\n"
        "w = torch.tensor([1.0, 2.0])\nv = torch.tensor([1.0, -1.0])\n"
        "_, hvp = jvp(grad(lambda u: u @ A @ u), (w,), (v,))\n" + MESSAGE,
    ),
    (
        "grads-by-autograd-grad",
        "linear-regression-gradient",
        HEADER + "x = torch.tensor(2.0)\ntarget = torch.tensor(10.0)\n"
        "w = torch.tensor(3.0, requires_grad=True)\nb = torch.tensor(1.0, requires_grad=True)\n"
        "prediction = w * x + b\nloss = torch.nn.functional.mse_loss(prediction, target)\n"
        "w.grad, b.grad = torch.autograd.grad(loss, [w, b])\n",
    ),
]  # fmt: skip


@pytest.mark.parametrize(("package", "code"), [c[1:] for c in HONEST], ids=[c[0] for c in HONEST])
def test_an_honest_solution_unlike_the_reference_follows_the_scale_and_passes(
    grade_code: GradeCode, package: str, code: str
) -> None:
    report = grade_code(package, code)
    assert report.passed, [(c.name, c.message) for c in report.checks if not c.passed]


def test_trained_values_that_reach_one_point_from_any_start_are_judged_at_the_data_line(
    sandbox: Sandbox, reference_cache: ReferenceCache
) -> None:
    """training-loop's trained values converge to the same point at any gradient scale and
    from any start: without its `[data_line]` no check's reference value changes and there
    is no second run; with it, the learned values are judged there (FORMAT.md section 2,
    "Which data")."""
    course = package_at("training-loop")
    files = dict(course.files)
    files["exercise.toml"] = re.sub(r"\[data_line\]\n(.+\n)+", "", files["exercise.toml"])
    lineless = Package.from_files(files, origin="training-loop")
    assert lineless.manifest.data_line is None and course.manifest.data_line is not None
    judged = {}
    for package in (lineless, course):
        reference = reference_capture(
            package, seed=DEV_SEED, device="cpu", sandbox=sandbox, cache=reference_cache
        )
        scaled = scaled_reference(
            package, reference, seed=DEV_SEED, device="cpu", sandbox=sandbox,
            cache=reference_cache,
        )  # fmt: skip
        judged[package is course] = {package.manifest.checks[i].name for i in scaled.checks}
        assert (scaled.capture is None) == (package is lineless)
    assert judged == {False: set(), True: {"learned w is close to 2", "learned b is close to 1"}}


# -- other starting values (grader/rewrite.py) --------------------------------------------

LINEAR = "x = torch.tensor(2.0)\ntarget = torch.tensor(10.0)\n"
LINEAR_LOSS = "prediction = w * x + b\nloss = (prediction - target) ** 2\nloss.backward()\n"

# (id, package, code, {check name fragment: diagnosis}): right at the fixed inputs, and
# right in a run with only the gradients scaled; wrong at other starting values.
FIXED_INPUTS_ONLY: list[tuple[str, str, str, dict[str, str]]] = [
    (
        "fake-linear-loss-root",
        "linear-regression-gradient",
        HEADER + LINEAR + "w = torch.tensor(3.0, requires_grad=True)\n"
        "b = torch.tensor(1.0, requires_grad=True)\nprediction = w * x + b\n"
        "loss = 9.0 - 12.0 * (w - 3.0) - 6.0 * (b - 1.0)\nloss.backward()\n",
        {"w.grad": "not-from-autograd", "b.grad": "not-from-autograd",
         "loss is the squared error": "not-from-autograd"},
    ),
    (
        "fake-root-of-the-right-value-and-slope",
        "first-gradient",
        HEADER + "x = torch.tensor(5.0, requires_grad=True)\ny = 25.0 + 10.0 * (x - 5.0)\n"
        "y.backward()\n",
        {"x.grad": "not-from-autograd", "y is x squared": "not-from-autograd"},
    ),
    (
        "fake-root-backpropagated-twice",
        "gradient-accumulation",
        HEADER + "x = torch.tensor(3.0, requires_grad=True)\n"
        "(9.0 + 6.0 * (x - 3.0)).backward()\n(9.0 + 6.0 * (x - 3.0)).backward()\n"
        "accumulated = x.grad.clone()\nx.grad.zero_()\n",
        {"accumulated": "not-from-autograd"},
    ),
    (
        "fake-root-of-two-variables",
        "multiple-variables",
        HEADER + "x = torch.tensor(4.0, requires_grad=True)\n"
        "y = torch.tensor(5.0, requires_grad=True)\n"
        "z = 24.0 + 6.0 * (x - 4.0) + 4.0 * (y - 5.0)\nz.backward()\n",
        {"dz/dx": "not-from-autograd", "dz/dy": "not-from-autograd"},
    ),
    (
        "plain-and-scaled-value-behind-a-branch",
        "gradient-accumulation",
        HEADER + TWO_PASSES + "if x.grad == 12.0:\n    accumulated = torch.tensor(12.0)\n"
        "else:  # the run with every gradient scaled by 0.75\n"
        "    accumulated = torch.tensor(9.0)\nx.grad.zero_()\n",
        {"accumulated": "not-from-autograd"},
    ),
]  # fmt: skip


@pytest.mark.parametrize(
    ("package", "code", "expected"),
    [c[1:] for c in FIXED_INPUTS_ONLY],
    ids=[c[0] for c in FIXED_INPUTS_ONLY],
)
def test_a_value_right_only_at_the_fixed_inputs_fails_at_other_starting_values(
    grade_code: GradeCode, package: str, code: str, expected: dict[str, str]
) -> None:
    report = grade_code(package, code)
    assert report.status == "graded", report.message
    found = failed_diagnoses(report)
    for fragment, slug in expected.items():
        named = [c for c in report.checks if fragment in c.name]
        assert named and all(not c.passed for c in named), found
        assert {c.diagnosis for c in named} == {slug}, found
        assert all(c.message.startswith(SCALED) for c in named), found
        assert named[0].hint == DIAGNOSES[slug].hint


def linear(creation: str) -> str:
    return HEADER + LINEAR + creation + LINEAR_LOSS


# (id, package, code): honest solutions whose leaves are made in many ways, or unlike the
# reference's; all keep full marks (the rewrite starts each at its assignment).
HONEST_CREATIONS: list[tuple[str, str, str]] = [
    ("factory-full-and-ones", "linear-regression-gradient",
     linear("w = torch.full((), 3.0, requires_grad=True)\n"
            "b = torch.ones((), requires_grad=True)\n")),
    ("like-and-new-factories", "linear-regression-gradient",
     linear("w = torch.full_like(x, 3.0, requires_grad=True)\n"
            "b = x.new_ones((), requires_grad=True)\n")),
    ("requires-grad-method", "linear-regression-gradient",
     linear("w = torch.tensor(3.0).requires_grad_()\n"
            "b = torch.tensor(1.0)\nb.requires_grad_(True)\n")),
    ("requires-grad-setter", "linear-regression-gradient",
     linear("w = torch.tensor(3.0)\nw.requires_grad = True\n"
            "b = torch.tensor(1.0)\nb.requires_grad = True\n")),
    ("nn-parameter", "linear-regression-gradient",
     linear("w = torch.nn.Parameter(torch.tensor(3.0))\n"
            "b = torch.nn.Parameter(torch.tensor(1.0))\n")),
    ("detach-and-clone-then-requires-grad", "linear-regression-gradient",
     linear("start = torch.tensor([3.0, 1.0])\nw = start[0].detach().requires_grad_()\n"
            "b = start[1].clone().requires_grad_()\n")),
    ("empty-then-fill-then-requires-grad", "linear-regression-gradient",
     linear("w = torch.empty(()).fill_(3.0).requires_grad_()\n"
            "b = torch.empty(()).fill_(1.0).requires_grad_()\n")),
    ("unhooked-variable", "linear-regression-gradient",
     linear("w = torch.autograd.Variable(torch.tensor(3.0), requires_grad=True)\n"
            "b = torch.autograd.Variable(torch.tensor(1.0), requires_grad=True)\n")),
    ("one-leaf-hooked-one-not", "linear-regression-gradient",
     linear("w = torch.tensor(3.0, requires_grad=True)\n"
            "b = torch.autograd.Variable(torch.tensor(1.0), requires_grad=True)\n")),
    ("an-input-that-requires-grad-too", "linear-regression-gradient",
     HEADER + "x = torch.tensor(2.0, requires_grad=True)\ntarget = torch.tensor(10.0)\n"
     "w = torch.tensor(3.0, requires_grad=True)\nb = torch.tensor(1.0, requires_grad=True)\n"
     + LINEAR_LOSS),
    ("leaves-of-another-dtype-and-shape", "chain-rule",
     HEADER + "x = torch.tensor([2.0], dtype=torch.float64, requires_grad=True)\n"
     "y = x.mul(3).add(4)\nz = y.pow(2).sum()\nz.backward()\n"),
    ("leaves-in-a-helper-function", "multiple-variables",
     HEADER + "def leaf(value):\n    return torch.tensor(value, requires_grad=True)\n\n"
     "x = leaf(4.0)\ny = leaf(5.0)\nz = x * y + x\nz.backward()\n"),
    ("one-of-two-equal-leaves-made-by-torch", "higher-order-gradients",
     HEADER + "from torch.autograd.functional import hessian, jacobian\n\n"
     "x = torch.tensor(3.0)\ndydx = jacobian(lambda t: t**3, x)\n"
     "d2ydx2 = hessian(lambda t: t**3, x)\n" + HVP + "(hvp,) = torch.autograd.grad(g @ v, w)\n"
     + MESSAGE),
]  # fmt: skip


@pytest.mark.parametrize(
    ("package", "code"), [c[1:] for c in HONEST_CREATIONS], ids=[c[0] for c in HONEST_CREATIONS]
)
def test_an_honest_solution_passes_however_it_creates_its_leaves(
    grade_code: GradeCode, package: str, code: str
) -> None:
    report = grade_code(package, code)
    assert report.passed, [(c.name, c.message) for c in report.checks if not c.passed]


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_the_fake_root_fails_and_the_honest_solution_passes_under_every_seeds_starts(
    grade_code: GradeCode, seed: int
) -> None:
    """The starting values are drawn per job from its seed (grader.rewrite.draw_starts): a
    reader of the repository cannot type in the second run's values in advance."""
    fake = FIXED_INPUTS_ONLY[0][2]
    report = grade_code("linear-regression-gradient", fake, seed=seed)
    assert report.status == "graded" and not report.passed
    assert {c.diagnosis for c in report.checks if not c.passed} == {"not-from-autograd"}
    honest = linear(
        "w = torch.tensor(3.0, requires_grad=True)\nb = torch.ones((), requires_grad=True)\n"
    )
    assert grade_code("linear-regression-gradient", honest, seed=seed).passed
