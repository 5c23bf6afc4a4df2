"""Other starting values: the second run of a script exercise (FORMAT.md section 2, the
envelope's `"shift"`).

In that run every floating-point leaf tensor that requires grad and that the code under
test creates itself is moved, at its creation and before any use, by an affine map
`x -> scale * x + offset` (its data replaced under no_grad: the tensor keeps its identity,
dtype, device and shape; a tensor it shared memory with, the one it was detached from,
keeps its values, as it does in the reference's run). With `scale > 0` and `offset > 0`
a positive value stays positive (a leaf under a log or a square root keeps its domain),
a zero moves, and a value with few binary digits stays exact; 1 - scale holds a factor
3, so no floating-point value is a fixed point of the map. The routes hooked:

- a factory called with `requires_grad=True` (`torch.tensor`, `ones`, `zeros`, `full`,
  `randn`, `rand`, `arange`, `linspace`, `*_like`, `Tensor.new_*`, ...; not `empty*`,
  whose values are not yet written);
- `Tensor.requires_grad_()` and `t.requires_grad = True` on a leaf that did not require
  grad (so `.detach().requires_grad_()` and `.clone().requires_grad_()` too);
- `torch.nn.Parameter(...)`.

Factories and the two switches are seen by a TorchFunctionMode (`ShiftMode`, entered
around the code under test like the stand-in GPU's mode, so the guard's check for a
mode left active still holds after it); `nn.Parameter.__new__` is wrapped. Only calls
made directly from the code under test (a frame of `submission.py`) count: torch's own
leaves (an `nn.Linear`'s parameters, `torch.autograd.functional`'s copies) stay as they
are, in the reference's run as in the learner's.

Which leaves move: with `"allowed": null` (the reference's own run) every one; with a
list of fingerprints (the learner's run: those of the leaves the reference's run moved)
only a leaf whose fingerprint (dtype, shape and values before the move) is one of the
list's not yet taken; with `"indices"` (a reference run limited to the leaves a learner's
run moved) only the leaves of those positions among the leaves it could move, counted
from 0 in creation order. A leaf the reference does not have (an input marked to
require grad, a leaf re-created from updated values in a loop) stays as it is; a leaf of
the reference's made by a route not hooked stays as it is too. The run reports the
fingerprints of the leaves it moved, in order (`provenance.shifted`); the engine grades
the learner against a reference run that moved the same ones (grader.engine).
"""

from __future__ import annotations

import hashlib
import sys
from collections import Counter
from collections.abc import Callable
from typing import Any

import torch
from torch.overrides import TorchFunctionMode

SUBMISSION = "submission.py"
MAX_SHIFTED = 1_000  # leaves moved per run at most (each is fingerprinted)
FINGERPRINT_CHARS = 16
_SET_REQUIRES_GRAD = torch._C.TensorBase.requires_grad.__set__
_REQUIRES_GRAD_ = "requires_grad_"
# torch's calls go through a frame of no file: a warning they raise (reading a non-leaf's
# .grad) names it instead of this module, whose source it would read (a harness-file event).
_call: Callable[[Any, Any, Any], Any] = eval(  # a fixed, constant lambda
    compile("lambda func, args, kwargs: func(*args, **kwargs)", "<torch>", "eval")
)


def fingerprint(tensor: torch.Tensor) -> str:
    """A digest of the tensor's dtype, shape and values (bit for bit)."""
    data = tensor.detach()
    if data.device.type != "cpu":
        data = data.cpu()
    digest = hashlib.sha256(f"{data.dtype}|{tuple(data.shape)}|".encode())
    flat = data.reshape(-1).contiguous()
    digest.update(flat.view(torch.uint8).numpy().tobytes())
    return digest.hexdigest()[:FINGERPRINT_CHARS]


class Shift:
    """The map and the record of the leaves it moved."""

    def __init__(
        self,
        scale: float,
        offset: float,
        allowed: list[str] | None,
        indices: list[int] | None = None,
    ) -> None:
        self.scale = scale
        self.offset = offset
        self.remaining: Counter[str] | None = None if allowed is None else Counter(allowed)
        self.indices: frozenset[int] | None = None if indices is None else frozenset(indices)
        self.candidates = 0  # leaves seen that the run could move
        self.shifted: list[str] = []
        self._depth = 0

    def consider(self, tensor: Any) -> None:
        """Moves `tensor` if it is a floating-point leaf that requires grad and is one the
        run may move (module docstring)."""
        if not isinstance(tensor, torch.Tensor) or self._depth > 0:
            return
        if not (tensor.is_leaf and tensor.requires_grad and tensor.is_floating_point()):
            return
        if len(self.shifted) >= MAX_SHIFTED:
            return
        self._depth += 1
        index, self.candidates = self.candidates, self.candidates + 1
        try:
            if self.indices is not None and index not in self.indices:
                return
            mark = fingerprint(tensor)
            if self.remaining is not None:
                if self.remaining[mark] <= 0:
                    return
                self.remaining[mark] -= 1
            with torch.no_grad():
                tensor.data = tensor.detach().mul(self.scale).add_(self.offset)
            self.shifted.append(mark)
        except Exception:  # a tensor that cannot be read or written stays as it is
            return
        finally:
            self._depth -= 1


def _from_submission(frame: Any) -> bool:
    return frame is not None and frame.f_code.co_filename == SUBMISSION


class ShiftMode(TorchFunctionMode):
    """Sees the factories and the requires-grad switches (module docstring)."""

    def __init__(self, shift: Shift) -> None:
        super().__init__()
        self.shift = shift

    def __torch_function__(
        self,
        func: Callable[..., Any],
        types: Any,
        args: tuple[Any, ...] = (),
        kwargs: dict[str, Any] | None = None,
    ) -> Any:
        kwargs = kwargs or {}
        if kwargs.get("requires_grad") is True:
            result = _call(func, args, kwargs)
            name = getattr(func, "__name__", "")
            if not name.startswith("empty") and _from_submission(sys._getframe(1)):
                self.shift.consider(result)
            return result
        switch = func == _SET_REQUIRES_GRAD or getattr(func, "__name__", "") == _REQUIRES_GRAD_
        if switch and args and isinstance(args[0], torch.Tensor):
            tensor = args[0]
            before = tensor.requires_grad
            result = _call(func, args, kwargs)
            if not before and _from_submission(sys._getframe(1)):
                self.shift.consider(tensor)
            return result
        return _call(func, args, kwargs)


def install(shift: Shift) -> ShiftMode:
    """Wraps `nn.Parameter`'s constructor and returns the mode to enter around the code
    under test (once per runner child: the child is forked per job)."""
    parameter = torch.nn.Parameter
    original = parameter.__new__

    def __new__(cls: type, data: Any = None, requires_grad: bool = True) -> Any:
        made = original(cls, data, requires_grad)
        if requires_grad and _from_submission(sys._getframe(1)):
            shift.consider(made)
        return made

    parameter.__new__ = staticmethod(__new__)  # type: ignore[assignment]
    return ShiftMode(shift)
