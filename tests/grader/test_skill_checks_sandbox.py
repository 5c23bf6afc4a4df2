"""Skill checks on real submissions through the real bubblewrap sandbox: code that reaches
the right numbers the forbidden way loses the skill check with the mistake's name, and
honest code written unlike the reference keeps every point. The submissions here are
written apart from the packages' own wrong/ and alternatives/ files."""

from __future__ import annotations

import pytest
from conftest import GradeCode

pytestmark = pytest.mark.sandbox

SKILL_CHECK = {
    "custom-autograd-function": "claim: a torch.autograd.Function subclass whose backward "
    "makes no autograd call",
    "numpy-backprop": "claim: no torch autograd while manual_backward runs (NumPy only)",
    "micro-batch-accumulation": "claim: the model never sees more than micro_batch_size "
    "samples at once",
    "retain-grad": "y kept its gradient through y.retain_grad() before backward()",
}

# Checks held by construction (grader/harness/construct.py): autograd is off where the
# grader calls the code itself, so the forbidden way does not reach those numbers either.
PROBE = "backward, called by the grader with hidden grad_outputs and autograd off, is exact"
HELD = {package: {name} for package, name in SKILL_CHECK.items()}
HELD["custom-autograd-function"].add(PROBE)
# the micro-batches gathered first: .grad holds nothing accumulated when the next one is
# taken (grader/harness/construct.py, `micro_batches`; test_skills_by_construction)
HELD["micro-batch-accumulation"].add(
    "before each next micro-batch, param.grad holds the gradient accumulated so far"
)


FORBIDDEN: list[tuple[str, str, str, str]] = [
    (
        "custom-autograd-function",
        "functorch-free vjp in backward",
        "import torch\n\n"
        "class SiLUFunction(torch.autograd.Function):\n"
        "    @staticmethod\n"
        "    def forward(ctx, x):\n"
        "        ctx.save_for_backward(x)\n"
        "        return x * torch.sigmoid(x)\n\n"
        "    @staticmethod\n"
        "    def backward(ctx, g):\n"
        "        (x,) = ctx.saved_tensors\n"
        "        f = lambda t: t * torch.sigmoid(t)\n"
        "        return torch.autograd.functional.vjp(f, x, g)[1]\n",
        "autograd-in-backward",
    ),
    (
        "custom-autograd-function",
        "a module subclass, not a Function",
        "import torch\n\n"
        "class SiLUFunction(torch.nn.Module):\n"
        "    @staticmethod\n"
        "    def apply(x):\n"
        "        return torch.nn.functional.silu(x)\n",
        "not-an-autograd-function",
    ),
    (
        "numpy-backprop",
        "torch.autograd.grad in a helper",
        "import numpy as np\nimport torch\n\n"
        "def _grads(arrays, x, y):\n"
        "    ts = [torch.from_numpy(a).requires_grad_() for a in arrays]\n"
        "    h = torch.sigmoid(torch.from_numpy(x) @ ts[0].T + ts[1])\n"
        "    logits = h @ ts[2].T + ts[3]\n"
        "    loss = torch.nn.functional.cross_entropy(logits, torch.from_numpy(y))\n"
        "    return [g.detach().numpy() for g in torch.autograd.grad(loss, ts)]\n\n"
        "def manual_backward(W1, b1, W2, b2, x, y_true):\n"
        "    g = _grads([W1, b1, W2, b2], x, y_true)\n"
        "    return dict(zip(['W1', 'b1', 'W2', 'b2'], g, strict=True))\n",
        "used-autograd",
    ),
    (
        "micro-batch-accumulation",
        "the whole batch gathered again",
        "import torch\n\n"
        "def accumulate_gradients(model, loss_fn, micro_batches, batch_size, micro_batch_size):\n"
        "    xs, ys = zip(*micro_batches)\n"
        "    for p in model.parameters():\n"
        "        p.grad = None\n"
        "    out = model(torch.cat(xs))\n"
        "    loss_fn(out, torch.cat(ys)).backward()\n",
        "batch-too-large",
    ),
    (
        "micro-batch-accumulation",
        "one micro-batch through the model for show, the rest by hand",
        "import torch\nimport torch.nn.functional as F\nfrom torch import nn\n\n"
        "def accumulate_gradients(model, loss_fn, micro_batches, batch_size, micro_batch_size):\n"
        "    xs, ys = zip(*micro_batches)\n"
        "    model.zero_grad()\n"
        "    with torch.no_grad():\n"
        "        model(xs[0])\n"
        "    h, y = torch.cat(xs), torch.cat(ys)\n"
        "    for m in model:\n"
        "        h = F.linear(h, m.weight, m.bias) if isinstance(m, nn.Linear) else m(h)\n"
        "    loss_fn(h, y).backward()\n",
        "layers-bypassed",
    ),
    (
        "retain-grad",
        "y.grad from a tensor hook, no retain_grad",
        "import torch\n\n"
        "x = torch.tensor(2.0, requires_grad=True)\n"
        "y = 3 * x\n"
        "seen = []\n"
        "y.register_hook(seen.append)\n"
        "loss = y ** 2\n"
        "loss.backward()\n"
        "y.grad = seen[0]\n",
        "missing-retain-grad",
    ),
]


@pytest.mark.parametrize(
    ("package", "code", "diagnosis"),
    [(p, code, d) for p, _, code, d in FORBIDDEN],
    ids=[f"{p}-{why}" for p, why, _, _ in FORBIDDEN],
)
def test_the_right_numbers_the_forbidden_way_lose_the_skill_check(
    grade_code: GradeCode, package: str, code: str, diagnosis: str
) -> None:
    report = grade_code(package, code)
    assert report.status == "graded", report.message
    by_name = {c.name: c for c in report.checks}
    skill = by_name[SKILL_CHECK[package]]
    assert not skill.passed
    assert skill.diagnosis == diagnosis, skill.message
    others = [c.name for c in report.checks if not c.passed and c.name not in HELD[package]]
    # retain-grad: a .grad written by hand is also hard-coded; numpy-backprop: autograd
    # is off while manual_backward runs, so no gradient is reached at all
    if package not in ("retain-grad", "numpy-backprop"):
        assert not others, "the numbers are right: only the skill check fails"


HONEST = [
    (
        "micro-batch-accumulation",
        "enumerate over the micro-batches, each loss weighted by its share",
        "def accumulate_gradients(model, loss_fn, micro_batches, batch_size, micro_batch_size):\n"
        "    model.zero_grad(set_to_none=True)\n"
        "    for _, (xb, yb) in enumerate(micro_batches):\n"
        "        (loss_fn(model(xb), yb) * (xb.shape[0] / batch_size)).backward()\n",
    ),
    (
        "numpy-backprop",
        "a NumPy backward with a log-sum-exp",
        "import numpy as np\n\n"
        "def manual_backward(W1, b1, W2, b2, x, y_true):\n"
        "    n = len(x)\n"
        "    a1 = 1 / (1 + np.exp(-(x @ W1.T + b1)))\n"
        "    z2 = a1 @ W2.T + b2\n"
        "    p = np.exp(z2 - np.logaddexp.reduce(z2, axis=1, keepdims=True))\n"
        "    p[np.arange(n), y_true] -= 1\n"
        "    d2 = p / n\n"
        "    d1 = (d2 @ W2) * a1 * (1 - a1)\n"
        "    return {'W1': d1.T @ x, 'b1': d1.sum(0), 'W2': d2.T @ a1, 'b2': d2.sum(0)}\n",
    ),
    (
        "training-loop",
        "nn.Linear with Adam on its own data",
        "import torch\nfrom torch import nn\n\n"
        "model = nn.Linear(1, 1)\n"
        "opt = torch.optim.Adam(model.parameters(), lr=0.05)\n"
        "x = torch.linspace(0, 2, 30).unsqueeze(1)\n"
        "for step in range(600):\n"
        "    opt.zero_grad()\n"
        "    loss = nn.functional.mse_loss(model(x), 2 * x + 1)\n"
        "    loss.backward()\n"
        "    opt.step()\n"
        "    print(step, loss.item())\n",
    ),
]


@pytest.mark.parametrize(
    ("package", "code"), [(p, code) for p, _, code in HONEST], ids=[w for _, w, _ in HONEST]
)
def test_honest_code_written_unlike_the_reference_keeps_every_point(
    grade_code: GradeCode, package: str, code: str
) -> None:
    report = grade_code(package, code)
    assert report.passed, [(c.name, c.message) for c in report.checks if not c.passed]


DEVICE = "device-agnostic-training"
DEVICE_CHECK = "the model lives on the worker's device"
MOVE = "    x, y = x.to(device), y.to(device)\n"


def _device_solution() -> str:
    from grading_helpers import REPO

    return (REPO / "exercises" / DEVICE / "solution.py").read_text(encoding="utf-8")


def test_a_thrown_away_move_fails_on_a_cpu_worker_as_it_would_on_a_gpu(
    grade_code: GradeCode,
) -> None:
    code = _device_solution().replace(MOVE, "    for t in (x, y):\n        t.to(device)\n")
    report = grade_code(DEVICE, code, device="cpu")
    failed = {c.name: c for c in report.checks if not c.passed}
    assert "loss of every training step" in failed
    assert failed["loss of every training step"].diagnosis == "device-mismatch"
    assert failed["loss of every training step"].message.startswith("on a machine with a GPU")


def test_a_hard_coded_cpu_device_fails_the_device_check_on_a_cpu_worker(
    grade_code: GradeCode,
) -> None:
    code = _device_solution().replace(
        'torch.device("cuda" if torch.cuda.is_available() else "cpu")', '"cpu"'
    )
    report = grade_code(DEVICE, code, device="cpu")
    failed = {c.name: c.diagnosis for c in report.checks if not c.passed}
    assert failed == {DEVICE_CHECK: "device-mismatch"}


def test_device_agnostic_code_written_otherwise_passes_both_runs(grade_code: GradeCode) -> None:
    code = (
        _device_solution()
        .replace(
            'device = torch.device("cuda" if torch.cuda.is_available() else "cpu")\n'
            "model.to(device)\n",
            'device = "cuda:0" if torch.cuda.device_count() > 0 else "cpu"\n'
            "model = model.to(device)\n"
            "assert next(model.parameters()).device.type == torch.device(device).type\n",
        )
        .replace(MOVE, "    x = x.to(device)\n    y = torch.as_tensor(y, device=device)\n")
    )
    report = grade_code(DEVICE, code, device="cpu")
    assert report.passed, [(c.name, c.message) for c in report.checks if not c.passed]
