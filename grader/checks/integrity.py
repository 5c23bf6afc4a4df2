"""Integrity flags (FORMAT.md section 6): what in a learner's capture an honest run
cannot produce, decided outside the sandbox. A flagged report keeps its checks but the
platform holds its score until an instructor has reviewed it.

- `tamper`: an attempt to reach the harness that its audit hook recorded
  (`Capture.tamper`).
- `impossible-capture`: facts no real tensor or backward call has: data cut shorter
  than our own cap (grader.capture.TENSOR_ELEMENTS) off the meta device, a leaf with a
  grad_fn or a non-leaf without one, a grad_fn on a tensor that does not require grad,
  a successful backward() without a gradient on a non-scalar.
- `grading-error`: a check raised while judging this capture (its verdict is not
  trusted); `invalid-capture`: the capture could not be parsed at all (the engine).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator

from grader.capture import (
    BackwardCall,
    Capture,
    DictValue,
    ListValue,
    ModuleValue,
    NdarrayValue,
    TensorValue,
    Value,
    full_length,
    stored_length,
)
from grader.protocol import IntegrityFlag

MAX_FLAGS = 20  # flags kept per report; a last one counts the rest
DETAIL_CHARS = 500


def capture_flags(capture: Capture) -> list[IntegrityFlag]:
    """Every integrity flag the capture itself raises (tamper records, impossibilities)."""
    flags = [IntegrityFlag("tamper", f"{e.kind}: {e.detail}") for e in capture.tamper]
    flags += [IntegrityFlag("impossible-capture", why) for why in impossibilities(capture)]
    return flags


def limited(flags: Iterable[IntegrityFlag]) -> tuple[IntegrityFlag, ...]:
    """At most MAX_FLAGS flags (details capped); one more says how many were left out."""
    flags = list(flags)
    kept = [IntegrityFlag(f.kind, f.detail[:DETAIL_CHARS]) for f in flags[:MAX_FLAGS]]
    if len(flags) > MAX_FLAGS:
        kept.append(IntegrityFlag("more", f"{len(flags) - MAX_FLAGS} more flags not listed"))
    return tuple(kept)


def impossibilities(capture: Capture) -> Iterator[str]:
    for where, value in _values(capture):
        for name, tensor in _arrays(value, where):
            problem = _array_problem(tensor)
            if problem:
                yield f"{name}: {problem}"
    for where, call in _calls(capture):
        if _implicit_nonscalar(call):
            shape = list(call.loss_shape or [])
            yield f"{where}: backward() without a gradient succeeded on shape {shape}"


def _values(capture: Capture) -> Iterator[tuple[str, Value]]:
    for name, value in capture.variables.items():
        yield name, value
    for index, case in enumerate(capture.cases):
        for key, value in case.observations.items():
            yield f"cases[{index}].{key}", value
    for where, call in _calls(capture):
        for key, grad in [*call.grads_before.items(), *call.grads_after.items()]:
            if grad is not None:
                yield f"{where}.grads.{key}", grad


def _calls(capture: Capture) -> Iterator[tuple[str, BackwardCall]]:
    for index, call in enumerate(capture.backward_calls):
        yield f"backward_calls[{index}]", call
    for number, case in enumerate(capture.cases):
        for index, call in enumerate(case.backward_calls):
            yield f"cases[{number}].backward_calls[{index}]", call


def _arrays(value: Value, where: str) -> Iterator[tuple[str, TensorValue | NdarrayValue]]:
    if isinstance(value, TensorValue):
        yield where, value
        if value.grad is not None:
            yield f"{where}.grad", value.grad
    elif isinstance(value, NdarrayValue):
        yield where, value
    elif isinstance(value, ModuleValue):
        for name, param in value.params.items():
            yield from _arrays(param, f"{where}.{name}")
    elif isinstance(value, ListValue):
        for index, item in enumerate(value.items):
            yield from _arrays(item, f"{where}[{index}]")
    elif isinstance(value, DictValue):
        for key, item in value.items.items():
            yield from _arrays(item, f"{where}[{key!r}]")


def _array_problem(value: TensorValue | NdarrayValue) -> str | None:
    meta = isinstance(value, TensorValue) and value.device_type == "meta"
    if not meta and not value.complete:
        full = full_length(value.numel, value.dtype)
        cap = stored_length(value.numel, value.dtype)
        return f"{len(value.data)} data values where {cap} of {full} are always captured"
    if isinstance(value, TensorValue):
        if value.is_leaf == (value.grad_fn is not None):
            state = "a leaf with" if value.is_leaf else "a non-leaf without"
            return f"{state} a grad_fn"
        if value.grad_fn is not None and not value.requires_grad:
            return "a grad_fn on a tensor that does not require grad"
    return None


def _implicit_nonscalar(call: BackwardCall) -> bool:
    """A successful backward with no gradient given needs a one-element root."""
    if not call.ok or call.gradient_given or call.loss_shape is None:
        return False
    return math.prod(call.loss_shape) != 1
