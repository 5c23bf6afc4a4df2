"""The scaled run (FORMAT.md section 2, grader.engine.scaled_reference): a script exercise
is graded once more with every gradient seed scaled, so a value typed in or worked out by
hand, right only at the fixed inputs, fails as `not-from-autograd`; honest solutions
written unlike the reference (another backward API, explicit seeds, copies through
.item(), a loop, hooks, torch.func, a longer or shorter chain of derivatives than the
reference's) follow the scale and keep full marks. All graded through the real sandbox."""

from __future__ import annotations

import pytest
from conftest import GradeCode
from grading_helpers import failed_diagnoses

from grader.diagnose import DIAGNOSES

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
    assert set(found.values()) == set(expected.values()), found
    for fragment, slug in expected.items():
        named = [c for c in report.checks if fragment in c.name]
        assert [c.diagnosis for c in named] == [slug], found
        assert named[0].hint == DIAGNOSES[slug].hint
        assert named[0].message.startswith("in a second run with every gradient scaled: ")


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


def test_a_script_whose_values_follow_no_gradient_runs_once(grade_code: GradeCode) -> None:
    """training-loop's trained values converge to the same point at any gradient scale:
    no check changes, no second run (the message of a failure carries no run label)."""
    code = HEADER + "w = torch.tensor(2.0, requires_grad=True)\nb = torch.tensor(1.0)\n"
    report = grade_code("training-loop", code)
    assert not report.passed
    assert all(not c.message.startswith("in a second run") for c in report.checks)
