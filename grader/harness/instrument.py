"""Autograd instrumentation: records every backward call and optimizer step.

Runs inside the sandbox's runner child, installed before the learner's code. Each
wrapper records the call, then calls the original; an error is recorded and re-raised.

Each call also looks for evidence that the autograd engine really ran: a hook on the
root's graph node (or on a leaf root's gradient accumulation, or on the `inputs=`
leaves) must fire. A call that returned, changed the tracked gradients (or returned
gradients) and fired none is reported as `autograd-not-run`: something below the
wrappers was replaced.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import torch
from values import grads_of_value, number

MAX_RECORDED_CALLS = 10_000  # backward calls recorded at all
MAX_CALLS_WITH_GRADS = 1_000  # of those, calls whose tracked grads are encoded
MAX_MESSAGE = 2_000


class Recorder:
    """Collects backward calls; `lookup()` returns the tracked names' current values."""

    def __init__(self, max_elements: int) -> None:
        self.max_elements = max_elements
        self.calls: list[dict[str, Any]] = []
        self.truncated = False
        self.optimizer_steps = 0
        self.lookup: Callable[[], dict[str, Any]] = dict
        self.on_tamper: Callable[[str, str], None] = lambda kind, detail: None
        self._depth = 0
        self.api_calls = 0  # every call of a wrapped function, recorded or not

    @contextmanager
    def paused(self) -> Iterator[None]:
        """The harness's own autograd calls (gradcheck) are not the learner's."""
        self._depth += 1
        try:
            yield
        finally:
            self._depth -= 1

    def reset(self) -> None:
        self.calls = []
        self.truncated = False

    def install(self) -> None:
        autograd = torch.autograd
        # Replacing the method is the point: every learner call goes through the recorder.
        torch.Tensor.backward = self._wrap(  # type: ignore[method-assign]
            torch.Tensor.backward, "Tensor.backward", "self"
        )
        autograd.backward = self._wrap(autograd.backward, "autograd.backward", "tensors")
        autograd.grad = self._wrap(autograd.grad, "autograd.grad", "outputs")
        from torch.optim.optimizer import register_optimizer_step_post_hook

        register_optimizer_step_post_hook(self._on_step)

    def _on_step(self, *_: Any) -> None:
        self.optimizer_steps += 1

    def _wrap(self, original: Callable[..., Any], api: str, root: str) -> Callable[..., Any]:
        signature = inspect.signature(original)
        recorder = self

        def wrapper(*args: Any, **kwargs: Any) -> Any:
            recorder.api_calls += 1
            if recorder._depth > 0:
                return original(*args, **kwargs)
            bound: Mapping[str, Any]
            try:
                bound = signature.bind(*args, **kwargs).arguments
            except TypeError:
                bound = {}
            recorder._depth += 1
            try:
                return recorder._call(original, api, bound.get(root), bound, args, kwargs)
            finally:
                recorder._depth -= 1

        wrapper.__name__ = getattr(original, "__name__", "backward")
        wrapper.__qualname__ = getattr(original, "__qualname__", wrapper.__name__)
        wrapper.__doc__ = getattr(original, "__doc__", None)
        return wrapper

    def _call(
        self,
        original: Callable[..., Any],
        api: str,
        root: Any,
        bound: dict[str, Any],
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
    ) -> Any:
        if len(self.calls) >= MAX_RECORDED_CALLS:
            self.truncated = True
            return original(*args, **kwargs)
        with_grads = len(self.calls) < MAX_CALLS_WITH_GRADS
        call = _describe(api, root, bound)
        call["grads_before"] = self._grads() if with_grads else {}
        self.calls.append(call)
        evidence = Evidence(api, root, bound)
        try:
            result = original(*args, **kwargs)
        except BaseException as error:
            evidence.remove()
            call["error"] = {"type": type(error).__name__, "message": _message(error)}
            call["grads_after"] = self._grads() if with_grads else {}
            raise
        evidence.remove()
        call["grads_after"] = self._grads() if with_grads else {}
        untracked = not call["grads_before"]  # nothing to compare: any silence counts
        changed = untracked or call["grads_after"] != call["grads_before"] or result is not None
        if evidence.hooked and not evidence.fired and changed:
            self.on_tamper("autograd-not-run", f"{api} returned but the autograd engine never ran")
        return result

    def _grads(self) -> dict[str, Any]:
        grads: dict[str, Any] = {}
        try:
            values = self.lookup()
        except Exception:
            return grads
        for name, value in values.items():
            if isinstance(value, torch.Tensor | torch.nn.Module):
                try:
                    grads[name] = grads_of_value(value, self.max_elements)
                except Exception:
                    grads[name] = None
        return grads


class Evidence:
    """Hooks that fire when the autograd engine executes the call's graph."""

    def __init__(self, api: str, root: Any, bound: Mapping[str, Any]) -> None:
        self.fired = False
        self.handles: list[Any] = []
        roots = _tensors(root)
        leaves = _tensors(bound.get("inputs"))
        for tensor in roots:
            node = tensor.grad_fn
            if node is not None:
                self._hook(functools.partial(node.register_prehook, self._mark))
            elif tensor.requires_grad and api != "autograd.grad":
                leaves.append(tensor)
        if api != "autograd.grad":
            for leaf in leaves:
                if leaf.is_leaf and leaf.requires_grad:
                    self._hook(
                        functools.partial(leaf.register_post_accumulate_grad_hook, self._mark)
                    )
        self.hooked = bool(self.handles)

    def _hook(self, register: Callable[[], Any]) -> None:
        with contextlib.suppress(Exception):  # a node that takes no hooks: no evidence
            self.handles.append(register())

    def _mark(self, *_: Any) -> None:
        self.fired = True

    def remove(self) -> None:
        for handle in self.handles:
            with contextlib.suppress(Exception):
                handle.remove()
        self.handles = []


def _tensors(value: Any) -> list[torch.Tensor]:
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, list | tuple):
        return [item for item in value if isinstance(item, torch.Tensor)][:100]
    return []


def _message(error: BaseException) -> str:
    try:
        return str(error)[:MAX_MESSAGE]
    except Exception:
        return "<unprintable message>"


def _first_tensor(root: Any) -> torch.Tensor | None:
    if isinstance(root, torch.Tensor):
        return root
    if isinstance(root, list | tuple) and len(root) == 1 and isinstance(root[0], torch.Tensor):
        return root[0]
    return None


def _describe(api: str, root: Any, bound: dict[str, Any]) -> dict[str, Any]:
    loss_tensor = _first_tensor(root)
    loss: Any = None
    shape: list[int] | None = None
    if loss_tensor is not None:
        shape = list(loss_tensor.shape)
        if loss_tensor.numel() == 1 and not loss_tensor.is_complex():
            try:
                loss = number(float(loss_tensor.detach().reshape(-1)[0].item()))
            except Exception:
                loss = None
    gradient = bound.get("gradient", bound.get("grad_tensors", bound.get("grad_outputs")))
    retain = bound.get("retain_graph")
    return {
        "api": api,
        "loss": loss,
        "loss_shape": shape,
        "gradient_given": gradient is not None,
        "retain_graph": None if retain is None else bool(retain),
        "grads_before": {},
        "grads_after": {},
        "error": None,
    }
