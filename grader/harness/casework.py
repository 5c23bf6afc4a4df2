"""The harness's generic case runner for function exercises (FORMAT.md section 1).

A case is plain data made by the exercise's `make_cases` in the reference sandbox:

    {"visible": bool,
     "inputs": {name: value},                 # tensors, arrays, numbers, strings, lists
     "build": [step, ...],                    # harness operations on named values
     "call": {"args": [name, ...], "method": "apply" | None, "store": "result"},
     "after": [step, ...],                    # e.g. a backward through the result
     "observe": {key: expression}}            # what goes into the capture

A step is {"set": name, "op": op, "args": [operand, ...]} (+ "no_grad": true, for
"function" a "param", "body" and "returns", for "micro_batches" a "records" name: the
parameters' grads recorded before each micro-batch is handed out, construct.py; the
runner seals its X and y into the stream first, `seal`, and no step can name them); an
operand is a name, a number, a string literal {"lit": value} or a list of operands.
Every op is a fixed torch/numpy operation listed in OPS: no exercise code runs here, so
nothing in the learner's sandbox computes an answer. The harness's own autograd calls
(the "backward" and "gradcheck" ops) go through the functions saved before the learner's
code and are not recorded.

A case may also ask the case runner to watch the learner's code ("watch": a list of
"function", "autograd", "batch"; FORMAT.md section 1): the runner's own observations,
stored under the observation key "@watch" (no case's `observe` may use a key starting
with "@"), made by hooks this module installs before the entry is called:

- "function": is the entry a `torch.autograd.Function` subclass whose own backward node
  made the result (`grad_fn._forward_cls is entry`), and does that node keep a graph of
  its own (a tensor with a grad_fn among its attributes)?
- "autograd": per phase ("call": the entry's call; "backward": the case's backward steps)
  the learner's autograd API calls (recorded or not), the tensors autograd saved for a
  graph being built (a saved-tensors pack hook), and saved-tensor hooks pushed by anyone
  else (which would hide that graph from ours).
- "batch": forward pre-hooks on every layer with parameters of each model the case built
  (`sequential`): the most samples one call of a layer saw, the fewest samples any layer
  saw in all, and whether every hook was still registered at the end.
"""

from __future__ import annotations

import signal
from collections.abc import Callable, Iterator, Mapping, MutableMapping
from contextlib import contextmanager
from typing import Any

import construct
import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

MAX_STEPS = 200
MAX_GRADCHECK_MESSAGE = 600
UNARY = ("neg", "exp", "log", "sin", "cos", "sigmoid", "tanh", "relu", "sum", "mean", "t")
BINARY: dict[str, Callable[[Any, Any], Any]] = {
    "add": lambda a, b: a + b,
    "sub": lambda a, b: a - b,
    "mul": lambda a, b: a * b,
    "div": lambda a, b: a / b,
    "pow": lambda a, b: a**b,
    "matmul": lambda a, b: a @ b,
}
ACTIVATIONS: dict[str, Callable[[], nn.Module]] = {
    "relu": nn.ReLU,
    "tanh": nn.Tanh,
    "sigmoid": nn.Sigmoid,
}
LOSSES: dict[str, Callable[[], nn.Module]] = {
    "cross_entropy": nn.CrossEntropyLoss,
    "mse": nn.MSELoss,
}


class CaseError(Exception):
    """A malformed case (an exercise bug, never the learner's)."""


# Saved before any learner code runs: the harness's own autograd calls use these.
_BACKWARD = torch.Tensor.backward
_AUTOGRAD_BACKWARD = torch.autograd.backward
_GRADCHECK = torch.autograd.gradcheck
_FUNCTION = torch.autograd.Function
_BACKWARD_NODE = torch.autograd.function.BackwardCFunction
_SAVED_HOOKS = torch.autograd.graph.saved_tensors_hooks
_PUSH_HOOKS = torch._C._autograd._push_saved_tensors_default_hooks
WATCH_KEY = "@watch"
WATCHES = ("function", "autograd", "batch")
PHASES = ("call", "backward")
MAX_CTX_ITEMS = 100
_pushes = [0]  # saved-tensor hooks pushed by code other than the watch (install_watchers)


def install_watchers() -> None:
    """Counts every push of saved-tensor hooks (the runner calls this before any learner
    code): hooks pushed on top of the watch's would hide the graph it looks for."""

    def push(pack: Any, unpack: Any) -> Any:
        _pushes[0] += 1
        return _PUSH_HOOKS(pack, unpack)

    torch._C._autograd._push_saved_tensors_default_hooks = push


def _same(value: Any) -> Any:
    return value


class Watch:
    """The case runner's own observations of the learner's code (the module docstring).
    `autograd_calls()` counts the learner's autograd API calls so far (the recorder)."""

    def __init__(self, kinds: Any, autograd_calls: Callable[[], int]) -> None:
        if not isinstance(kinds, list) or any(kind not in WATCHES for kind in kinds):
            raise CaseError(f"watch must be a list drawn from {list(WATCHES)}")
        self.kinds = frozenset(kinds)
        self.autograd_calls = autograd_calls
        self.phases = {phase: {"autograd_calls": 0, "graph_ops": 0, "hooks_pushed": 0}
                       for phase in PHASES}  # fmt: skip
        self.function: dict[str, bool] = {}
        self.layers: list[tuple[nn.Module, Any, dict[str, int]]] = []
        self.numpy: dict[str, bool] | None = None  # construct.numpy_call's notes

    @contextmanager
    def phase(self, name: str) -> Iterator[None]:
        if "autograd" not in self.kinds:
            yield
            return
        counts = self.phases[name]

        def pack(tensor: Any) -> Any:
            counts["graph_ops"] += 1
            return tensor

        calls, pushes = self.autograd_calls(), _pushes[0]
        try:
            with _SAVED_HOOKS(pack, _same):
                pushes = _pushes[0]  # our own push is not counted
                yield
        finally:
            counts["autograd_calls"] += max(self.autograd_calls() - calls, 0)
            counts["hooks_pushed"] += max(_pushes[0] - pushes, 0)

    # -- "batch" ----------------------------------------------------------------------

    def attach(self, model: Any) -> None:
        """Forward pre-hooks on every layer of `model` that holds parameters."""
        if "batch" not in self.kinds or not isinstance(model, nn.Module):
            return
        for module in model.modules():
            if not any(True for _ in module.parameters(recurse=False)):
                continue
            stats = {"largest": 0, "samples": 0}

            def hook(_: Any, args: Any, stats: dict[str, int] = stats) -> None:
                first = args[0] if isinstance(args, tuple) and args else None
                rows = _rows(first)
                stats["largest"] = max(stats["largest"], rows)
                stats["samples"] += rows

            self.layers.append((module, module.register_forward_pre_hook(hook), stats))

    def batch(self) -> dict[str, Any]:
        intact = all(handle.id in module._forward_pre_hooks for module, handle, _ in self.layers)
        stats = [s for _, _, s in self.layers]
        return {
            "largest": max((s["largest"] for s in stats), default=0),
            "samples": min((s["samples"] for s in stats), default=0),
            "hooks_intact": intact,
        }

    # -- "function" -------------------------------------------------------------------

    def called(self, entry: Any, method: Any, result: Any) -> None:
        """After the entry's call: what made its result (the "function" watch)."""
        if "function" not in self.kinds:
            return
        subclass = isinstance(entry, type) and issubclass(entry, _FUNCTION)
        node = result.grad_fn if isinstance(result, torch.Tensor) else None
        own = (
            subclass
            and method == "apply"
            and isinstance(node, _BACKWARD_NODE)
            and getattr(node, "_forward_cls", None) is entry
        )
        self.function = {
            "subclass": bool(subclass),
            "own_node": bool(own),
            "graph_kept": bool(own) and _keeps_graph(node),
        }

    def observation(self) -> dict[str, Any]:
        found: dict[str, Any] = {}
        if "function" in self.kinds:
            found["function"] = dict(self.function)
        if "autograd" in self.kinds:
            found["autograd"] = {phase: dict(counts) for phase, counts in self.phases.items()}
        if "batch" in self.kinds:
            found["batch"] = self.batch()
        if self.numpy is not None:
            found["numpy"] = dict(self.numpy)
        return found


def _rows(value: Any) -> int:
    """Samples in one layer input: every index but the last (a 1-D input is one sample)."""
    if not isinstance(value, torch.Tensor) or value.dim() == 0:
        return 0
    if value.dim() == 1:
        return 1
    return int(value.numel() // max(value.shape[-1], 1)) if value.shape[-1] else 0


def _keeps_graph(node: Any) -> bool:
    """Does a custom Function's node (its ctx) hold a tensor with a graph of its own?"""
    try:
        kept = list(vars(node).values())
    except TypeError:
        return False
    for item in kept[:MAX_CTX_ITEMS]:
        items = list(item)[:MAX_CTX_ITEMS] if isinstance(item, list | tuple) else [item]
        if any(isinstance(t, torch.Tensor) and t.grad_fn is not None for t in items):
            return True
    return False


def _tensor(value: Any) -> torch.Tensor:
    if isinstance(value, torch.Tensor):
        return value
    raise CaseError(f"expected a tensor, got {type(value).__name__}")


def _copy(value: Any) -> Any:
    if isinstance(value, torch.Tensor):
        return value.detach().clone()
    if isinstance(value, np.ndarray):
        return value.copy()
    return value


def _sequential(layers: Any, dtype_name: Any) -> nn.Module:
    """nn.Sequential from [{"type": "linear", "weight", "bias", "grad_weight"?, "grad_bias"?}
    | {"type": "relu" | "tanh" | "sigmoid"}], parameters copied in, stale grads set."""
    dtype = getattr(torch, str(dtype_name))
    modules: list[nn.Module] = []
    for layer in layers:
        kind = layer["type"]
        if kind != "linear":
            modules.append(ACTIVATIONS[kind]())
            continue
        weight = _tensor(layer["weight"])
        linear = nn.Linear(weight.shape[1], weight.shape[0]).to(dtype)
        with torch.no_grad():
            linear.weight.copy_(weight)
            linear.bias.copy_(_tensor(layer["bias"]))
        for name in ("weight", "bias"):
            stale = layer.get(f"grad_{name}")
            if stale is not None:
                getattr(linear, name).grad = _tensor(stale).detach().clone().to(dtype)
        modules.append(linear)
    return nn.Sequential(*modules)


def _untracked(x: Any) -> torch.Tensor:
    tensor = _tensor(x)
    return torch.tensor(tensor.detach().tolist(), dtype=tensor.dtype)


OPS: dict[str, Callable[..., Any]] = {
    "copy": _copy,
    "same": lambda x: x,
    "tensor": lambda values: torch.tensor([float(v) for v in values]),
    "leaf": lambda x: _tensor(x).detach().clone().requires_grad_(True),
    "detach": lambda x: _tensor(x).detach(),
    "untracked": _untracked,
    "float64": lambda x: _tensor(x).detach().to(torch.float64),
    "to_dtype_of": lambda a, b: _tensor(a).to(_tensor(b).dtype),
    "cumsum": lambda x, dim: torch.cumsum(x, dim=int(dim)),
    "softmax": lambda x, dim: torch.softmax(x, dim=int(dim)),
    "log_softmax": lambda x, dim: torch.log_softmax(x, dim=int(dim)),
    "unsqueeze": lambda x, dim: _tensor(x).unsqueeze(int(dim)),
    "reshape": lambda x, shape: _tensor(x).reshape([int(s) for s in shape]),
    "slice": lambda x, start, stop: x[int(start) : int(stop)],
    "index": lambda x, i: x[int(i)],
    "linear": lambda x, w, b: F.linear(x, w, b),
    "sequential": _sequential,
    "loss": lambda name: LOSSES[str(name)](),
    **{name: (lambda op: lambda a, b: op(a, b))(op) for name, op in BINARY.items()},
    **{name: (lambda n: lambda x: getattr(_tensor(x), n)())(name) for name in UNARY},
}


class Env:
    """Named values of one case, plus the harness operations on them."""

    def __init__(self, values: Mapping[str, Any], watch: Watch | None = None) -> None:
        self.values: dict[str, Any] = dict(values)
        self.watch = watch if watch is not None else Watch([], lambda: 0)
        self.sealed: dict[str, construct.Sealed] = {}  # `seal`: by the stream's name

    def operand(self, raw: Any) -> Any:
        if isinstance(raw, str):
            if raw not in self.values:
                raise CaseError(f"unknown name {raw!r}")
            return self.values[raw]
        if isinstance(raw, dict) and set(raw) == {"lit"}:
            return raw["lit"]
        if isinstance(raw, list):
            return [self.operand(item) for item in raw]
        if isinstance(raw, bool | int | float) or raw is None:
            return raw
        raise CaseError(f"bad operand {raw!r}")

    def run(self, steps: Any, entry: Any = None) -> None:
        if not isinstance(steps, list) or len(steps) > MAX_STEPS:
            raise CaseError("steps must be a list of at most 200 steps")
        for step in steps:
            self.step(step, entry)

    def step(self, step: Mapping[str, Any], entry: Any) -> None:
        op = step.get("op")
        if op == "function":
            self.values[step["set"]] = self.function(step)
            return
        if op == "backward":
            output, gradient = (self.operand(a) for a in step["args"])
            with self.watch.phase("backward"):
                _AUTOGRAD_BACKWARD(_tensor(output), gradient)
            return
        if op == "gradcheck":
            self.values[step["set"]] = gradcheck(entry, self.operand(step["args"][0]), step)
            return
        if op == "probe_backward":  # the learner's backward called by us (construct.py)
            result, grads = (self.operand(a) for a in step["args"])
            phase = lambda: self.watch.phase("backward")  # noqa: E731
            self.values[step["set"]] = construct.probe_backward(entry, result, grads, phase)
            return
        if op == "micro_batches":  # the data handed out one micro-batch at a time
            model = self.operand(step["args"][0])
            batch = self.sealed.pop(step["set"], None)
            if batch is None:  # not sealed before (the reference's variants): sealed now
                batch = construct.seal(*(self.operand(a) for a in step["args"][1:]))
            records: list[torch.Tensor] = []
            self.values[step["set"]] = construct.micro_batches(model, batch, records)
            self.values[step["records"]] = records
            return
        if op not in OPS:
            raise CaseError(f"unknown op {op!r}")
        args = [self.operand(a) for a in step.get("args", [])]
        if step.get("no_grad"):
            with torch.no_grad():
                value = OPS[op](*args)
        else:
            value = OPS[op](*args)
        if op == "sequential":
            self.watch.attach(value)
        self.values[step["set"]] = value

    def function(self, step: Mapping[str, Any]) -> Callable[[Any], Any]:
        """A one-argument function built from steps: f(t) runs `body` with `param` = t."""
        param, body, returns = step["param"], step["body"], step["returns"]
        outer = self.values

        def f(t: Any) -> Any:
            inner = Env({**outer, param: t}, self.watch)
            inner.run(body)
            return inner.values[returns]

        return f

    def observe(self, expression: Any) -> Any:
        if isinstance(expression, str):
            return self.operand(expression)
        how, name, *rest = expression
        value = self.operand(name)
        if how == "item":  # result[key] of a dict; anything else as it is
            return value.get(rest[0]) if isinstance(value, dict) else value
        if how == "list":
            return list(value) if isinstance(value, list | tuple) else value
        if how == "len":
            return len(value) if isinstance(value, list | tuple) else None
        if how == "count":
            return list(value).count(rest[0]) if isinstance(value, list | tuple) else None
        if how == "detach":
            return value.detach() if isinstance(value, torch.Tensor) else value
        raise CaseError(f"unknown observation {how!r}")


def gradcheck(entry: Any, point: Any, step: Mapping[str, Any]) -> dict[str, Any]:
    """torch.autograd.gradcheck of the learner's Function in float64 at `point`."""
    from torch.autograd.gradcheck import GradcheckError

    options = step.get("options", {})
    x = _tensor(point).detach().to(torch.float64).clone().requires_grad_(True)
    try:
        ok = _GRADCHECK(
            entry.apply,
            (x,),
            eps=float(options.get("eps", 1e-6)),
            atol=float(options.get("atol", 1e-5)),
            rtol=float(options.get("rtol", 1e-3)),
        )
    except GradcheckError as error:
        return {"ok": False, "message": str(error)[:MAX_GRADCHECK_MESSAGE]}
    return {"ok": bool(ok), "message": ""}


def prepare(
    case: Mapping[str, Any],
    autograd_calls: Callable[[], int] | None = None,
    sealed: dict[str, construct.Sealed] | None = None,
) -> Env:
    """The case's inputs (copied) and built values: also what `variants` receives.
    `autograd_calls` counts the learner's autograd API calls (the "autograd" watch);
    `sealed` holds the batches `seal` took out of the case (each taken out of it by its
    step, so that the caller's dict holds none afterwards)."""
    inputs = case.get("inputs", {})
    if not isinstance(inputs, dict):
        raise CaseError("inputs must be a dict")
    watch = Watch(case.get("watch", []), autograd_calls or (lambda: 0))
    env = Env({name: _copy(value) for name, value in inputs.items()}, watch)
    env.sealed = sealed if sealed is not None else {}
    env.run(case.get("build", []))
    return env


def seal(case: MutableMapping[str, Any]) -> dict[str, construct.Sealed]:
    """The batch of each "micro_batches" build step cut into micro-batches and sealed in
    its stream-to-be (construct.seal), its X and y taken out of the case's inputs: the
    runner calls this on a case as soon as it is decoded, before any of torch's Python
    code runs for it (reseeding, building the model), where a hook or a replaced function
    of the learner's could find the batch while the harness works. X and y can then not
    be named by any step or observation."""
    inputs = case.get("inputs")
    build = case.get("build", [])
    if not isinstance(inputs, dict) or not isinstance(build, list):
        return {}
    sealed: dict[str, construct.Sealed] = {}
    for step in build:
        if not isinstance(step, dict) or step.get("op") != "micro_batches":
            continue
        _, x_name, y_name, size = step["args"]
        if not all(isinstance(name, str) and name in inputs for name in (x_name, y_name)):
            raise CaseError("a micro_batches step takes its X and y by name from the inputs")
        size = inputs[size] if isinstance(size, str) and size in inputs else size
        sealed[step["set"]] = construct.seal(inputs.pop(x_name), inputs.pop(y_name), size)
    return sealed


# Taken at import: what the learner's code does to the signal module later changes
# nothing here (a replaced attribute of a harness module is `replaced`, guard.py).
_SIGNALS = tuple(signal.valid_signals())
_getsignal, _setsignal, _SIG_IGN = signal.getsignal, signal.signal, signal.SIG_IGN


@contextmanager
def signals_held() -> Iterator[None]:
    """The learner's Python signal handlers set to ignore while a hidden case is received,
    decoded and sealed, then put back: a handler runs in this thread between any two
    bytecodes, where its frame's `f_back` would reach the case (an interval timer's
    SIGALRM, say). A signal that arrives meanwhile is dropped: CPython looks the handler
    up when it runs a tripped one, so one already pending finds "ignore" too. Signals
    without a Python handler (the kernel's limits, SIGKILL) are untouched."""
    held = {number: handler for number in _SIGNALS if callable(handler := _getsignal(number))}
    for number in held:
        _setsignal(number, _SIG_IGN)
    try:
        yield
    finally:
        for number, handler in held.items():
            _setsignal(number, handler)


def release(case: MutableMapping[str, Any]) -> None:
    """Lets go of the case's decoded inputs once `prepare` has copied them into the Env:
    the runner calls this before the learner's entry."""
    case.pop("inputs", None)


def call_entry(env: Env, case: Mapping[str, Any], entry: Any) -> None:
    """Calls the learner's entry on the case's arguments (exceptions propagate)."""
    call = case.get("call", {})
    method = call.get("method")
    target = getattr(entry, method) if method else entry
    args = [env.operand(name) for name in call.get("args", [])]
    with env.watch.phase("call"):
        if call.get("numpy_only"):  # NumPy only: torch's autograd off, arrays watched
            result, env.watch.numpy = construct.numpy_call(target, args)
        else:
            result = target(*args)
    env.values[call.get("store", "result")] = result
    env.watch.called(entry, method, result)


def finish(env: Env, case: Mapping[str, Any], entry: Any) -> None:
    """The case's `after` steps (a backward through the result, gradcheck...)."""
    env.run(case.get("after", []), entry)


def observations(env: Env, case: Mapping[str, Any]) -> dict[str, Any]:
    """What the case's `observe` names, plus the runner's own "@watch" when it watches."""
    observe = case.get("observe", {})
    if not isinstance(observe, dict) or any(str(key).startswith("@") for key in observe):
        raise CaseError("observe must be a dict whose keys do not start with @")
    found = {str(key): env.observe(expression) for key, expression in observe.items()}
    if env.watch.kinds:
        found[WATCH_KEY] = env.watch.observation()
    return found
