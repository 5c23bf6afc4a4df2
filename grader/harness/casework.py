"""The harness's generic case runner for function exercises (FORMAT.md section 1).

A case is plain data made by the exercise's `make_cases` in the reference sandbox:

    {"visible": bool,
     "inputs": {name: value},                 # tensors, arrays, numbers, strings, lists
     "build": [step, ...],                    # harness operations on named values
     "call": {"args": [name, ...], "method": "apply" | None, "store": "result"},
     "after": [step, ...],                    # e.g. a backward through the result
     "observe": {key: expression}}            # what goes into the capture

A step is {"set": name, "op": op, "args": [operand, ...]} (+ "no_grad": true, and for
"function" a "param", "body" and "returns"); an operand is a name, a number, a string
literal {"lit": value} or a list of operands. Every op is a fixed torch/numpy operation
listed in OPS: no exercise code runs here, so nothing in the learner's sandbox computes
an answer. The harness's own autograd calls (the "backward" and "gradcheck" ops) go
through the functions saved before the learner's code and are not recorded.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

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
_GRADCHECK = torch.autograd.gradcheck


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

    def __init__(self, values: Mapping[str, Any]) -> None:
        self.values: dict[str, Any] = dict(values)

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
            _BACKWARD(_tensor(output), gradient)
            return
        if op == "gradcheck":
            self.values[step["set"]] = gradcheck(entry, self.operand(step["args"][0]), step)
            return
        if op not in OPS:
            raise CaseError(f"unknown op {op!r}")
        args = [self.operand(a) for a in step.get("args", [])]
        if step.get("no_grad"):
            with torch.no_grad():
                value = OPS[op](*args)
        else:
            value = OPS[op](*args)
        self.values[step["set"]] = value

    def function(self, step: Mapping[str, Any]) -> Callable[[Any], Any]:
        """A one-argument function built from steps: f(t) runs `body` with `param` = t."""
        param, body, returns = step["param"], step["body"], step["returns"]
        outer = self.values

        def f(t: Any) -> Any:
            inner = Env({**outer, param: t})
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


def prepare(case: Mapping[str, Any]) -> Env:
    """The case's inputs (copied) and built values: also what `variants` receives."""
    inputs = case.get("inputs", {})
    if not isinstance(inputs, dict):
        raise CaseError("inputs must be a dict")
    env = Env({name: _copy(value) for name, value in inputs.items()})
    env.run(case.get("build", []))
    return env


def call_entry(env: Env, case: Mapping[str, Any], entry: Any) -> None:
    """Calls the learner's entry on the case's arguments (exceptions propagate)."""
    call = case.get("call", {})
    target = getattr(entry, call["method"]) if call.get("method") else entry
    args = [env.operand(name) for name in call.get("args", [])]
    env.values[call.get("store", "result")] = target(*args)


def finish(env: Env, case: Mapping[str, Any], entry: Any) -> None:
    """The case's `after` steps (a backward through the result, gradcheck...)."""
    env.run(case.get("after", []), entry)


def observations(env: Env, case: Mapping[str, Any]) -> dict[str, Any]:
    observe = case.get("observe", {})
    if not isinstance(observe, dict):
        raise CaseError("observe must be a dict")
    return {str(key): env.observe(expression) for key, expression in observe.items()}
