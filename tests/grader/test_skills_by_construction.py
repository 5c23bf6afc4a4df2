"""Skills held by construction (issue 29) and shortcuts named by what the run did (issue 30),
graded in the real bubblewrap sandbox: the grader calls a custom Function's backward itself
on hidden upstream gradients with autograd off, and calls numpy-backprop's manual_backward
with torch's autograd off and watched arrays (grader/harness/construct.py). The submissions
here are written apart from the packages' wrong/ and alternatives/ files. On
micro-batch-accumulation the grader hands the loop its micro-batches one at a time and
copies every .grad before each (construct.py, `micro_batches`)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from conftest import GradeCode

from grader.protocol import Report
from grader.sandbox.config import DEFAULT_RUNTIME_DIR

pytestmark = pytest.mark.sandbox

EXERCISES = Path(__file__).resolve().parents[2] / "exercises"
SILU = "custom-autograd-function"
NUMPY = "numpy-backprop"
PROBE = "backward, called by the grader with hidden grad_outputs and autograd off, is exact"
DERIVATIVE_CLAIM = (
    "claim: no built-in derivative (aten *_backward, torch.func, complex step) in backward"
)
EXACT = "every gradient exact to float64 precision (a backward pass, not finite differences)"
PASS_CLAIM = "claim: a backward pass, no complex-step or dual-number differentiation"
AUTOGRAD_CLAIM = "claim: no torch autograd while manual_backward runs (NumPy only)"
MICRO = "micro-batch-accumulation"
PER_BATCH = "before each next micro-batch, param.grad holds the gradient accumulated so far"
FULL_BATCH = "param.grad holds the full-batch gradient"
SIGNATURE = (
    "def accumulate_gradients(model, loss_fn, micro_batches, batch_size, micro_batch_size):\n"
)

# The diagnoses the tests below give real submissions (test_sandboxed_diagnoses checks
# that every diagnosis of FORMAT.md section 5 has one somewhere).
DIAGNOSED = ("builtin-derivative", "numerical-derivative", "no-backward-pass", "single-backward")

SILU_HEAD = (
    "import torch\n\n"
    "class SiLUFunction(torch.autograd.Function):\n"
    "    @staticmethod\n"
    "    def forward(ctx, x):\n"
    "        ctx.save_for_backward(x)\n"
    "        return x * torch.sigmoid(x)\n\n"
    "    @staticmethod\n"
    "    def backward(ctx, g):\n"
    "        (x,) = ctx.saved_tensors\n"
)

NUMPY_LOSS = (
    "import numpy as np\n\n"
    "def loss(W1, b1, W2, b2, x, y):\n"
    "    h = 1 / (1 + np.exp(-(x @ W1.T + b1)))\n"
    "    z = h @ W2.T + b2\n"
    "    return np.mean(np.log(np.exp(z).sum(axis=1)) - z[np.arange(len(y)), y])\n\n"
)


def failures(report: Report) -> dict[str, str]:
    assert report.status == "graded", report.message
    return {c.name: c.diagnosis for c in report.checks if not c.passed}


def test_a_backward_built_on_pytorchs_sigmoid_derivative_is_builtin_derivative(
    grade_code: GradeCode,
) -> None:
    code = SILU_HEAD + (
        "        s = torch.sigmoid(x)\n"
        "        ds = torch.ops.aten.sigmoid_backward(torch.ones_like(s), s)\n"
        "        return g * (s + x * ds)\n"
    )
    report = grade_code(SILU, code)
    assert failures(report) == {DERIVATIVE_CLAIM: "builtin-derivative"}
    claims = {c.name for c in report.checks if "claim" in c.data}
    assert claims == {DERIVATIVE_CLAIM, "claim: a torch.autograd.Function subclass whose "
                      "backward makes no autograd call"}  # fmt: skip


def test_a_fourth_order_finite_difference_backward_is_a_numerical_derivative(
    grade_code: GradeCode,
) -> None:
    code = SILU_HEAD + (
        "        f = lambda t: t * torch.sigmoid(t)\n"
        "        t, h = x.double(), 1e-3\n"
        "        d = (f(t - 2 * h) - 8 * f(t - h) + 8 * f(t + h) - f(t + 2 * h)) / (12 * h)\n"
        "        return (g * d).to(x.dtype)\n"
    )
    assert failures(grade_code(SILU, code)).get(PROBE) == "numerical-derivative"


def test_forward_mode_dual_tensors_in_backward_fail_the_graders_own_call(
    grade_code: GradeCode,
) -> None:
    code = SILU_HEAD + (
        "        import torch.autograd.forward_ad as fw\n"
        "        with fw.dual_level():\n"
        "            d = fw.make_dual(x, g)\n"
        "            return fw.unpack_dual(d * torch.sigmoid(d)).tangent\n"
    )
    found = failures(grade_code(SILU, code))
    assert found.get(PROBE) == "builtin-derivative", found  # no tangent: autograd is off
    assert found.get(DERIVATIVE_CLAIM) == "builtin-derivative", found


def test_autograd_grad_on_a_rebuilt_graph_fails_the_graders_own_call(
    grade_code: GradeCode,
) -> None:
    code = SILU_HEAD + (
        "        with torch.enable_grad():\n"
        "            t = x.detach().requires_grad_()\n"
        "            return torch.autograd.grad(t * torch.sigmoid(t), t, g)[0]\n"
    )
    assert failures(grade_code(SILU, code)).get(PROBE) == "autograd-in-backward"


def test_an_honest_backward_through_exp_and_torch_where_keeps_every_point(
    grade_code: GradeCode,
) -> None:
    code = (
        "import torch\n\n"
        "class SiLUFunction(torch.autograd.Function):\n"
        "    @staticmethod\n"
        "    def forward(ctx, x):\n"
        "        e = torch.exp(-x.abs())\n"
        "        s = torch.where(x >= 0, 1 / (1 + e), e / (1 + e))  # stable sigmoid\n"
        "        ctx.s, ctx.x = s, x\n"
        "        return x * s\n\n"
        "    @staticmethod\n"
        "    def backward(ctx, grad_output):\n"
        "        s, x = ctx.s, ctx.x\n"
        "        return grad_output * s + grad_output * x * s * (1 - s)\n"
    )
    report = grade_code(SILU, code)
    assert report.passed, [(c.name, c.message) for c in report.checks if not c.passed]
    assert not report.integrity_flags


def test_the_hidden_upstream_gradients_come_from_the_jobs_seed() -> None:
    """Two seeds: the visible example's upstream gradient is the same, every hidden one
    differs (make_cases runs in the sandbox's runtime, which has torch)."""
    script = (
        "import runpy, sys\n"
        "make = runpy.run_path(sys.argv[1])['make_cases']\n"
        "one, other = make(11, 6), make(12, 6)\n"
        "pairs = [(p, q) for a, b in zip(one, other) for p, q in\n"
        "         zip(a['inputs']['probes'], b['inputs']['probes'])]\n"
        "print(' '.join(str(bool(p.equal(q))) for p, q in pairs))\n"
    )
    python = str(DEFAULT_RUNTIME_DIR / "bin" / "python")
    cases = str(EXERCISES / SILU / "cases.py")
    done = subprocess.run([python, "-c", script, cases], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    same = done.stdout.split()
    assert same[0] == "True" and len(same) > 1
    assert set(same[1:]) == {"False"}


def test_numpy_finite_differences_of_the_loss_are_a_numerical_derivative(
    grade_code: GradeCode,
) -> None:
    code = NUMPY_LOSS + (
        "def manual_backward(W1, b1, W2, b2, x, y_true):\n"
        "    ps = {'W1': W1, 'b1': b1, 'W2': W2, 'b2': b2}\n"
        "    out, h = {}, 1e-5\n"
        "    for k, p in ps.items():\n"
        "        flat = np.zeros(p.size)\n"
        "        for i in range(p.size):\n"
        "            up, down = dict(ps), dict(ps)\n"
        "            e = np.zeros(p.size)\n"
        "            e[i] = h\n"
        "            up[k] = p + e.reshape(p.shape)\n"
        "            down[k] = p - e.reshape(p.shape)\n"
        "            rise = loss(**up, x=x, y=y_true) - loss(**down, x=x, y=y_true)\n"
        "            flat[i] = rise / (2 * h)\n"
        "        out[k] = flat.reshape(p.shape)\n"
        "    return out\n"
    )
    assert failures(grade_code(NUMPY, code)).get(EXACT) == "numerical-derivative"


def test_numpy_complex_step_differentiation_is_no_backward_pass(grade_code: GradeCode) -> None:
    code = NUMPY_LOSS + (
        "def manual_backward(W1, b1, W2, b2, x, y_true):\n"
        "    ps = [W1, b1, W2, b2]\n"
        "    grads = [np.zeros(p.shape) for p in ps]\n"
        "    for j, p in enumerate(ps):\n"
        "        for i in np.ndindex(p.shape):\n"
        "            moved = [np.zeros(q.shape, dtype=complex) for q in ps]\n"
        "            for m, q in zip(moved, ps):\n"
        "                m[...] = q\n"
        "            moved[j][i] += 1e-25j\n"
        "            grads[j][i] = loss(*moved, x, y_true).imag / 1e-25\n"
        "    return dict(zip(['W1', 'b1', 'W2', 'b2'], grads))\n"
    )
    assert failures(grade_code(NUMPY, code)) == {PASS_CLAIM: "no-backward-pass"}


def test_numpy_backprop_rebuilt_in_torch_cannot_reach_autograd(grade_code: GradeCode) -> None:
    code = (
        "import torch\n\n"
        "def manual_backward(W1, b1, W2, b2, x, y_true):\n"
        "    ws = [torch.tensor(a, requires_grad=True) for a in (W1, b1, W2, b2)]\n"
        "    h = torch.sigmoid(torch.tensor(x) @ ws[0].T + ws[1])\n"
        "    loss = torch.nn.functional.cross_entropy(h @ ws[2].T + ws[3], torch.tensor(y_true))\n"
        "    loss.backward()\n"
        "    return {k: w.grad.numpy() for k, w in zip(['W1', 'b1', 'W2', 'b2'], ws)}\n"
    )
    report = grade_code(NUMPY, code)
    found = failures(report)
    assert found.get(AUTOGRAD_CLAIM) == "used-autograd", found
    assert report.score == 0


def test_numpy_backprop_with_tensordot_and_a_stable_sigmoid_keeps_every_point(
    grade_code: GradeCode,
) -> None:
    code = (
        "import numpy as np\n\n"
        "def manual_backward(W1, b1, W2, b2, x, y_true):\n"
        "    pre = np.tensordot(x, W1, axes=([1], [1])) + b1\n"
        "    hid = np.where(pre >= 0, 1 / (1 + np.exp(-np.abs(pre))),\n"
        "                   np.exp(-np.abs(pre)) / (1 + np.exp(-np.abs(pre))))\n"
        "    logits = np.tensordot(hid, W2, axes=([1], [1])) + b2\n"
        "    p = np.exp(logits - logits.max(1, keepdims=True))\n"
        "    p /= p.sum(1, keepdims=True)\n"
        "    p[np.arange(len(y_true)), y_true] -= 1\n"
        "    g2 = p / len(y_true)\n"
        "    g1 = np.tensordot(g2, W2, axes=([1], [0])) * hid * (1 - hid)\n"
        "    return {'W2': np.tensordot(g2, hid, axes=([0], [0])), 'b2': g2.sum(0),\n"
        "            'W1': np.tensordot(g1, x, axes=([0], [0])), 'b1': g1.sum(0)}\n"
    )
    report = grade_code(NUMPY, code)
    assert report.passed, [(c.name, c.message) for c in report.checks if not c.passed]
    assert not report.integrity_flags


# Each reaches the full-batch gradient at the end and scored 10/10 when the grader gave the
# whole batch and watched the layers with hooks and counted backward calls (the same code
# written for that signature); here the grads copied before each micro-batch give it away.
THROW_AWAY = "        torch.zeros(1, requires_grad=True).sum().backward()  # a call to count\n"
GATHERED_ATTACKS = {
    "the micro-batches joined through F.linear on the weights, the layers called for show": (
        "import torch\nimport torch.nn.functional as F\nfrom torch import nn\n\n"
        + SIGNATURE
        + "    model.zero_grad()\n"
        "    xs, ys = [], []\n"
        "    for x_micro, y_micro in micro_batches:\n"
        "        with torch.no_grad():\n"
        "            model(x_micro)  # every layer sees each micro-batch\n"
        "        xs.append(x_micro)\n"
        "        ys.append(y_micro)\n"
        "    h = torch.cat(xs)\n"
        "    for layer in model:\n"
        "        linear = isinstance(layer, nn.Linear)\n"
        "        h = F.linear(h, layer.weight, layer.bias) if linear else layer(h)\n"
        "    loss_fn(h, torch.cat(ys)).backward()\n"
        "    for _ in xs[1:]:\n" + THROW_AWAY
    ),
    "one backward over the summed weighted losses": (
        "import torch\n\n" + SIGNATURE + "    model.zero_grad()\n"
        "    total = 0\n"
        "    for x_micro, y_micro in micro_batches:\n"
        "        total = total + loss_fn(model(x_micro), y_micro) * len(x_micro) / batch_size\n"
        + THROW_AWAY
        + "    total.backward()\n"
    ),
    "joined outputs, one real backward and one throw-away backward per micro-batch": (
        "import torch\n\n" + SIGNATURE + "    model.zero_grad()\n"
        "    outputs, targets = [], []\n"
        "    for x_micro, y_micro in micro_batches:\n"
        "        outputs.append(model(x_micro))\n"
        "        targets.append(y_micro)\n"
        "        w = torch.ones(1, requires_grad=True)\n"
        "        (w * 2).sum().backward()\n"
        "    loss_fn(torch.cat(outputs), torch.cat(targets)).backward()\n"
    ),
}


@pytest.mark.parametrize("code", GATHERED_ATTACKS.values(), ids=GATHERED_ATTACKS.keys())
def test_micro_batches_joined_into_one_backward_lose_the_accumulation_points(
    grade_code: GradeCode, code: str
) -> None:
    report = grade_code(MICRO, code)
    found = failures(report)
    assert found == {PER_BATCH: "single-backward"}, found  # the final gradient is right
    by_name = {c.name: c for c in report.checks}
    assert by_name[FULL_BATCH].passed
    assert by_name[PER_BATCH].score == 0 and "claim" not in by_name[PER_BATCH].data


HONEST_LOOPS = {
    "a manual next() loop that clears the grads once, after taking the first micro-batch": (
        SIGNATURE + "    stream = iter(micro_batches)\n"
        "    first = True\n"
        "    while True:\n"
        "        try:\n"
        "            x_micro, y_micro = next(stream)\n"
        "        except StopIteration:\n"
        "            break\n"
        "        if first:\n"
        "            model.zero_grad()\n"
        "            first = False\n"
        "        loss = loss_fn(model(x_micro), y_micro) * x_micro.shape[0]\n"
        "        (loss / batch_size).backward()\n"
    ),
    "torch.autograd.backward with the share as the upstream gradient": (
        "import torch\n\n" + SIGNATURE + "    params = list(model.parameters())\n"
        "    for p in params:\n"
        "        p.grad = torch.zeros_like(p)\n"
        "    for x_micro, y_micro in micro_batches:\n"
        "        loss = loss_fn(model(x_micro), y_micro)\n"
        "        share = torch.full_like(loss, len(x_micro) / batch_size)\n"
        "        torch.autograd.backward([loss], [share], inputs=params)\n"
    ),
    "a loop that counts live tensors with gc.get_objects and finds its own among them": (
        "import gc\nimport torch\n\n"
        "def live_tensors():\n"
        "    return [o for o in gc.get_objects() if isinstance(o, torch.Tensor)]\n\n"
        + SIGNATURE
        + "    model.zero_grad()\n"
        "    live = live_tensors()\n"
        "    assert all(any(t is p for t in live) for p in model.parameters())\n"
        "    counts = [len(live)]\n"
        "    for x_micro, y_micro in micro_batches:\n"
        "        live = live_tensors()\n"
        "        assert any(t is x_micro for t in live) and any(t is y_micro for t in live)\n"
        "        counts.append(len(live))\n"
        "        loss = loss_fn(model(x_micro), y_micro) * len(x_micro) / batch_size\n"
        "        loss.backward()\n"
        "    assert min(counts) >= len(list(model.parameters()))\n"
    ),
}


@pytest.mark.parametrize("code", HONEST_LOOPS.values(), ids=HONEST_LOOPS.keys())
def test_honest_accumulation_loops_unlike_the_reference_keep_every_point(
    grade_code: GradeCode, code: str
) -> None:
    report = grade_code(MICRO, code)
    assert report.passed, [(c.name, c.message) for c in report.checks if not c.passed]
    assert not report.integrity_flags


# Each searches the runner child for the full batch (X and y of the hidden case, longer
# than any micro-batch) and, where it finds it, puts in .grad before each next micro-batch
# the gradient over the whole prefix, computed from the full batch in one call: nothing is
# accumulated micro-batch by micro-batch. The stream must be the only holder of the data,
# hidden from gc.get_objects, its state reachable only through audited attributes.
PREFIX_FROM_FULL_BATCH = (
    "import gc\nimport itertools\nimport sys\nimport types\n\nimport torch\n\n"
    "def matching(tensors, part, batch_size):\n"
    "    for t in tensors:\n"
    "        same_kind = t.dim() > 0 and len(t) == batch_size and t.dtype == part.dtype\n"
    "        if same_kind and t.shape[1:] == part.shape[1:] and t[: len(part)].equal(part):\n"
    "            return t\n"
    "    return None\n\n"
    "def full_batch(tensors, first, batch_size, queues=()):\n"
    "    x, y = (matching(tensors, part, batch_size) for part in first)\n"
    "    if x is not None and y is not None:\n"
    "        return x, y\n"
    "    for queue in queues:  # micro-batches not handed out yet, joined\n"
    "        xs, ys = zip(*queue)\n"
    "        if sum(map(len, xs)) == batch_size:\n"
    "            return torch.cat(xs), torch.cat(ys)\n"
    "    return None\n\n"
    "def callers(frame):\n"
    "    found = []\n"
    "    while frame is not None:\n"
    "        found.append(frame.f_locals)\n"
    "        frame = frame.f_back\n"
    "    return found\n\n"
    "def reachable(roots, generators=False):\n"
    "    # what `roots` hold, through attributes CPython does not audit (f_back, f_locals,\n"
    "    # __dict__) and, with `generators`, through a generator's gi_frame\n"
    "    stack, tensors, queues, seen = list(roots), [], [], set()\n"
    "    skipped = (type, types.ModuleType, types.FunctionType, types.MethodType)\n"
    "    while stack and len(seen) < 50_000:\n"
    "        obj = stack.pop()\n"
    "        if id(obj) in seen:\n"
    "            continue\n"
    "        seen.add(id(obj))\n"
    "        if isinstance(obj, torch.Tensor):\n"
    "            tensors.append(obj)\n"
    "        elif type(obj) is dict:\n"
    "            stack.extend(obj.values())\n"
    "        elif isinstance(obj, (list, tuple)):\n"
    "            pairs = [p for p in obj if type(p) is tuple and len(p) == 2]\n"
    "            if obj and len(pairs) == len(obj):\n"
    "                queues.append(list(obj))\n"
    "            stack.extend(obj)\n"
    "        elif isinstance(obj, types.GeneratorType):\n"
    "            if generators and obj.gi_frame is not None:\n"
    "                stack.extend(obj.gi_frame.f_locals.values())\n"
    "        elif not isinstance(obj, skipped):\n"
    "            fields = getattr(obj, '__dict__', None)\n"
    "            stack.extend(fields.values() if type(fields) is dict else ())\n"
    "    return tensors, queues\n\n" + SIGNATURE + "    stream = iter(micro_batches)\n"
    "    first = next(stream)\n"
    "    found = find_full_batch(micro_batches, first, batch_size)\n"
    "    if found is None:\n"
    "        return  # nothing found: the stale grads stay\n"
    "    X, Y = found\n"
    "    params = list(model.parameters())\n"
    "    end = 0\n"
    "    for x_micro, _ in itertools.chain([first], stream):\n"
    "        end += len(x_micro)\n"
    "        loss = loss_fn(model(X[:end]), Y[:end]) * end / batch_size\n"
    "        for p, g in zip(params, torch.autograd.grad(loss, params)):\n"
    "            p.grad = g\n\n"
)
FULL_BATCH_SEARCHES = {
    "every live tensor gc.get_objects lists": (
        "def find_full_batch(micro_batches, first, batch_size):\n"
        "    tensors = [o for o in gc.get_objects() if isinstance(o, torch.Tensor)]\n"
        "    return full_batch(tensors, first, batch_size)\n",
        None,
    ),
    "the callers' frames through f_back and f_locals, which CPython does not audit": (
        "def find_full_batch(micro_batches, first, batch_size):\n"
        "    tensors, _ = reachable(callers(sys._getframe(0).f_back))\n"
        "    return full_batch(tensors, first, batch_size)\n",
        None,
    ),
    "a torch parameter-registration hook's callers while the harness builds the model": (
        "from torch.nn.modules.module import register_module_parameter_registration_hook\n\n"
        "kept = []\n\n"
        "def registered(module, name, param):\n"
        "    kept.extend(reachable(callers(sys._getframe(0).f_back))[0])\n\n"
        "register_module_parameter_registration_hook(registered)\n\n"
        "def find_full_batch(micro_batches, first, batch_size):\n"
        "    return full_batch(kept, first, batch_size)\n",
        None,
    ),
    "the same hook reading the generators those frames hold, through gi_frame": (
        "from torch.nn.modules.module import register_module_parameter_registration_hook\n\n"
        "kept, queues = [], []\n\n"
        "def registered(module, name, param):\n"
        "    tensors, found = reachable(callers(sys._getframe(0).f_back), generators=True)\n"
        "    kept.extend(tensors)\n"
        "    queues.extend(found)\n\n"
        "register_module_parameter_registration_hook(registered)\n\n"
        "def find_full_batch(micro_batches, first, batch_size):\n"
        "    return full_batch(kept, first, batch_size, queues)\n",
        "frame-walk",
    ),
    "what torch.tensor was given while the harness decoded the case (replaced at import)": (
        "made = []\n"
        "real_tensor = torch.tensor\n\n"
        "def spy(data, *args, **kwargs):\n"
        "    made.append(real_tensor(data, *args, **kwargs))\n"
        "    return made[-1]\n\n"
        "torch.tensor = spy\n\n"
        "def find_full_batch(micro_batches, first, batch_size):\n"
        "    found = []\n"
        "    for part in first:\n"
        "        size = batch_size * part[0].numel()\n"
        "        rows = [t.reshape(-1, *part.shape[1:]) for t in made if t.numel() == size]\n"
        "        found.append(matching(rows, part, batch_size))\n"
        "    return None if any(f is None for f in found) else tuple(found)\n",
        None,
    ),
    "a gc callback's callers through f_back while the harness prepares the case": (
        "kept = []\n\n"
        "def collected(phase, info):\n"
        "    frame = sys._getframe(0).f_back\n"
        "    while frame is not None:\n"
        "        for value in list(frame.f_locals.values()):\n"
        "            inputs = value.get('inputs') if type(value) is dict else None\n"
        "            if type(inputs) is dict:\n"
        "                kept.extend(v for v in inputs.values() if isinstance(v, torch.Tensor))\n"
        "        frame = frame.f_back\n\n"
        "gc.callbacks.append(collected)\n"
        "gc.set_threshold(1)  # a collection at every allocation\n\n"
        "def find_full_batch(micro_batches, first, batch_size):\n"
        "    return full_batch(kept, first, batch_size)\n",
        None,
    ),
    "a signal handler's callers on an interval timer while the harness takes the case": (
        "import signal\n\n"
        "kept, taken = [], set()\n\n"
        "def keep(value):\n"
        "    # a decoded tensor, or an encoded one (the case as it arrives), once each\n"
        "    if id(value) in taken:\n"
        "        return\n"
        "    taken.add(id(value))\n"
        "    if isinstance(value, torch.Tensor):\n"
        "        kept.append(value)\n"
        "    elif type(value) is dict and value.get('kind') == 'tensor':\n"
        "        kept.append(torch.tensor(value['data']).reshape(value['shape']))\n\n"
        "def ticked(signum, frame):\n"
        "    while frame is not None:\n"
        "        for value in list(frame.f_locals.values()):\n"
        "            case = value.get('case', value) if type(value) is dict else None\n"
        "            if type(case) is dict and case.get('kind') == 'dict':\n"
        "                case = case.get('items')  # still encoded\n"
        "            inputs = case.get('inputs') if type(case) is dict else None\n"
        "            if type(inputs) is dict and inputs.get('kind') == 'dict':\n"
        "                inputs = inputs.get('items')\n"
        "            if type(inputs) is dict:\n"
        "                for item in list(inputs.values()):\n"
        "                    keep(item)\n"
        "        frame = frame.f_back\n\n"
        "signal.signal(signal.SIGALRM, ticked)\n"
        "signal.setitimer(signal.ITIMER_REAL, 0.0002, 0.0002)  # a tick every 200 us\n\n"
        "def find_full_batch(micro_batches, first, batch_size):\n"
        "    return full_batch(kept, first, batch_size)\n",
        None,
    ),
    "the stream's generator frames, the micro-batches still to come joined": (
        "def find_full_batch(micro_batches, first, batch_size):\n"
        "    tensors, queues = reachable([micro_batches], generators=True)\n"
        "    queues = [[first, *queue] for queue in queues]\n"
        "    return full_batch(tensors, first, batch_size, queues)\n",
        "frame-walk",
    ),
}


@pytest.mark.parametrize(
    ("search", "flagged"), FULL_BATCH_SEARCHES.values(), ids=FULL_BATCH_SEARCHES.keys()
)
def test_the_full_batch_searched_for_in_the_process_earns_no_accumulation_points_unflagged(
    grade_code: GradeCode, search: str, flagged: str | None
) -> None:
    report = grade_code(MICRO, PREFIX_FROM_FULL_BATCH + search)
    flags = [f"{flag.kind} {flag.detail}" for flag in report.integrity_flags]
    per_batch = {c.name: c for c in report.checks}[PER_BATCH]
    assert flags or per_batch.score == 0, (flags, per_batch.message)
    if flagged is None:  # not found: nothing of the full batch is left where it looked,
        # from the first case on (a search that found some cases' batches would fail later)
        assert not flags and not per_batch.passed, (flags, per_batch.message)
        assert "(case 1 of" in per_batch.message, per_batch.message
    else:
        assert any(flag.startswith(f"tamper {flagged}:") for flag in flags), flags


HONEST_ACCUMULATION = (
    "    model.zero_grad()\n"
    "    for x_micro, y_micro in micro_batches:\n"
    "        (loss_fn(model(x_micro), y_micro) * len(x_micro) / batch_size).backward()\n"
)
# A thread of the learner's still running when a hidden case is handed out could read the
# case where the harness receives it, before it is sealed: flagged once, whatever it does.
THREAD_LEFT_RUNNING = (
    "import threading\nimport time\n\n"
    + SIGNATURE
    + HONEST_ACCUMULATION
    + "    threading.Thread(target=time.sleep, args=(30,), daemon=True).start()\n"
)
# A thread that does its work and is joined before the function returns is nobody's concern.
THREAD_JOINED = (
    "import threading\n\n" + SIGNATURE + "    done = []\n"
    "    worker = threading.Thread(target=lambda: done.append(batch_size))\n"
    "    worker.start()\n    worker.join()\n" + HONEST_ACCUMULATION
)


def test_a_thread_left_running_when_a_hidden_case_is_handed_out_is_flagged_once(
    grade_code: GradeCode,
) -> None:
    report = grade_code(MICRO, THREAD_LEFT_RUNNING)
    flags = [flag.detail for flag in report.integrity_flags]
    assert len([f for f in flags if f.startswith("thread: ")]) == 1, flags
    assert "thread(s) of the code still running when a case was handed out" in flags[0]


def test_a_thread_joined_before_the_function_returns_is_not_flagged(
    grade_code: GradeCode,
) -> None:
    report = grade_code(MICRO, THREAD_JOINED)
    assert report.passed, [(c.name, c.message) for c in report.checks if not c.passed]
    assert not report.integrity_flags


# Learner code that torch or the garbage collector calls while the stream works would have
# the stream's frames below it, reachable through f_back (not audited): none is called.
STREAM_CALLERS_PROBE = (
    "import gc\nimport sys\n\nimport torch\n"
    "from torch.overrides import TorchFunctionMode\n"
    "from torch.utils._python_dispatch import TorchDispatchMode\n\n"
    "callers = set()\n\n"
    "def note_callers(frame):\n"
    "    while frame is not None and frame.f_globals.get('__name__') != 'submission':\n"
    "        callers.add(frame.f_globals.get('__name__'))\n"
    "        frame = frame.f_back\n\n"
    "class Functions(TorchFunctionMode):\n"
    "    def __torch_function__(self, func, types, args=(), kwargs=None):\n"
    "        note_callers(sys._getframe(0).f_back)\n"
    "        return func(*args, **(kwargs or {}))\n\n"
    "class Dispatch(TorchDispatchMode):\n"
    "    def __torch_dispatch__(self, func, types, args=(), kwargs=None):\n"
    "        note_callers(sys._getframe(0).f_back)\n"
    "        return func(*args, **(kwargs or {}))\n\n"
    "def collected(phase, info):\n"
    "    note_callers(sys._getframe(0).f_back)\n\n" + SIGNATURE + "    model.zero_grad()\n"
    "    stream = iter(micro_batches)\n"
    "    threshold = gc.get_threshold()\n"
    "    gc.callbacks.append(collected)\n"
    "    while True:\n"
    "        gc.set_threshold(1)  # a collection at every allocation\n"
    "        with Functions(), Dispatch():\n"
    "            pair = next(stream, None)\n"
    "        gc.set_threshold(*threshold)\n"
    "        if pair is None:\n"
    "            break\n"
    "        x_micro, y_micro = pair\n"
    "        (loss_fn(model(x_micro), y_micro) * len(x_micro) / batch_size).backward()\n"
    "    gc.callbacks.remove(collected)\n"
    "    assert 'construct' not in callers, sorted(map(str, callers))\n"
)


def test_learner_code_hooked_into_torch_and_gc_runs_above_none_of_the_streams_frames(
    grade_code: GradeCode,
) -> None:
    report = grade_code(MICRO, STREAM_CALLERS_PROBE)
    assert report.passed, [(c.name, c.message) for c in report.checks if not c.passed]
    assert not report.integrity_flags
