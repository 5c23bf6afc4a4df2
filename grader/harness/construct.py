"""Skill checks held by construction (issue 29): calls of the learner's code that the
harness makes itself, on inputs the code cannot predict, under conditions it did not
choose (FORMAT.md section 1, "probe_backward" and the "numpy_only" call).

- `probe_backward`: the harness calls the learner's `Function.backward(ctx, g)` itself,
  with the ctx its forward filled and hidden upstream gradients `g` from the case (drawn
  from the job's seed), under `torch.no_grad()` and `torch.inference_mode()`: no graph
  can be built, so a backward that differentiates with autograd cannot give the answer
  the ordinary way. The returned gradients are compared with the reference's in zone 1.
  While it runs, a dispatch mode of ours notes which built-in derivative operators
  (`aten.*_backward`, dual tensors) ran and whether a complex tensor was made: that part
  is an observation in the learner's interpreter, a claim.
- `numpy_call`: the entry of a NumPy-only exercise is called inside
  `torch.inference_mode()` (torch's autograd records nothing there), with its arrays as
  `Watched` arrays that note complex or object dtypes reaching a NumPy ufunc (complex-
  step or dual-number differentiation, which needs no backward pass): a claim as well.
- `micro_batches`: the learner's accumulation loop gets its data as a one-pass stream of
  (x_micro, y_micro) pairs made by the harness; before it hands out each micro-batch it
  records a copy of every parameter's `.grad` (flattened, in `model.parameters()` order).
  Code that asks for the next micro-batch before it has accumulated this one's gradient
  (one backward over joined micro-batches, one over a summed loss, the whole batch
  gathered first) leaves other values there than the reference's partial sums. Nothing
  else in the process holds the batch: the runner seals it into the stream as soon as
  the case is decoded (`seal`, casework.seal), and the stream keeps its micro-batches in
  a generator frame of its own, out of the learner's gc.get_objects, reachable only
  through audited frame attributes (`micro_batches` below).
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from typing import Any, NamedTuple

import numpy as np
import torch
from torch.utils._python_dispatch import TorchDispatchMode, _get_current_dispatch_mode_stack

MAX_PROBES = 8
MAX_NOTED = 20
MAX_ERROR = 300
DUAL_OPS = ("_make_dual", "_unpack_dual", "_fw_primal")
_NO_GRAD = torch.no_grad
_INFERENCE = torch.inference_mode
_FUNCTION = torch.autograd.Function
# Taken at import, before any learner code: what the micro-batch stream calls while its
# frames are on the stack (`_unobserved_step`), none of which the learner can replace for it.
_GRAD = torch._C.TensorBase.grad
_TENSOR = torch.Tensor
_CAT, _ZEROS, _FULL = torch.cat, torch.zeros, torch.full
_NO_TORCH_FUNCTION = torch._C.DisableTorchFunction
_NO_TORCH_DISPATCH = torch._C._DisableTorchDispatch
_GC_ENABLED, _GC_DISABLE, _GC_ENABLE = gc.isenabled, gc.disable, gc.enable


class DerivativeWatch(TorchDispatchMode):
    """Notes built-in derivative operators and complex tensors seen while it is active."""

    def __init__(self) -> None:
        super().__init__()
        self.derivatives: list[str] = []
        self.complex = False

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        name = str(getattr(func, "__name__", func))
        noted = name in self.derivatives or len(self.derivatives) >= MAX_NOTED
        if not noted and _is_derivative(name):
            self.derivatives.append(name)
        result = func(*args, **(kwargs or {}))
        if not self.complex and _any_complex((args, kwargs, result)):
            self.complex = True
        return result


def _is_derivative(name: str) -> bool:
    base = name.split(".")[0]
    return base.endswith("_backward") or base in DUAL_OPS


def _any_complex(value: Any, depth: int = 0) -> bool:
    if isinstance(value, torch.Tensor):
        return value.is_complex()
    if depth < 3 and isinstance(value, list | tuple):
        return any(_any_complex(item, depth + 1) for item in value[:MAX_NOTED])
    if depth < 3 and isinstance(value, dict):
        return any(_any_complex(item, depth + 1) for item in list(value.values())[:MAX_NOTED])
    return False


def _first_tensor(value: Any) -> torch.Tensor | None:
    if isinstance(value, tuple | list) and value:
        value = value[0]
    return value.detach().clone() if isinstance(value, torch.Tensor) else None


def _own_node(entry: Any, result: Any) -> Any:
    """The result's backward node when the entry's own Function made it, else None."""
    if not (isinstance(entry, type) and issubclass(entry, _FUNCTION)):
        return None
    node = result.grad_fn if isinstance(result, torch.Tensor) else None
    return node if getattr(node, "_forward_cls", None) is entry else None


def probe_backward(entry: Any, result: Any, grads: Any, phase: Callable[[], Any]) -> dict:
    """The learner's backward called by the harness on each hidden upstream gradient.
    `phase()` is the case watch's backward phase (its autograd counts include these
    calls). Returns {"own_node", "grads", "error", "derivatives", "complex", "intact"}."""
    node = _own_node(entry, result)
    found: dict[str, Any] = {"own_node": node is not None, "grads": [], "error": "",
                             "derivatives": [], "complex": False, "intact": True}  # fmt: skip
    if node is None:
        return found
    watch = DerivativeWatch()
    for grad in list(grads)[:MAX_PROBES]:
        upstream = grad.detach().clone() if isinstance(grad, torch.Tensor) else grad
        try:
            with ExitStack() as stack:
                stack.enter_context(phase())
                stack.enter_context(_NO_GRAD())
                stack.enter_context(_INFERENCE())
                stack.enter_context(watch)
                answer = entry.backward(node, upstream)
                found["intact"] = found["intact"] and watch in _get_current_dispatch_mode_stack()
        except Exception as error:  # the learner's backward failed on our call
            found["error"] = f"{type(error).__name__}: {error}"[:MAX_ERROR]
            found["grads"].append(None)
            continue
        found["grads"].append(_first_tensor(answer))
    found["derivatives"] = list(watch.derivatives)
    found["complex"] = watch.complex
    return found


class Watched(np.ndarray):
    """An input array of a NumPy-only call that notes complex or object dtypes reaching a
    ufunc. Results are plain arrays: only the first operation on an input is seen."""

    notes: dict[str, bool] = {"complex": False, "object": False}

    def __array_ufunc__(self, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
        plain = [item.view(np.ndarray) if isinstance(item, Watched) else item for item in inputs]
        out = kwargs.get("out")
        if isinstance(out, tuple):
            kwargs["out"] = tuple(o.view(np.ndarray) if isinstance(o, Watched) else o for o in out)
        _note_kinds(Watched.notes, plain)
        answer = getattr(ufunc, method)(*plain, **kwargs)
        _note_kinds(Watched.notes, [answer])
        return answer


def _note_kinds(notes: dict[str, bool], values: list[Any]) -> None:
    for value in values[:MAX_NOTED]:
        kind = np.asarray(value).dtype.kind if _array_like(value) else ""
        if kind == "c" or isinstance(value, complex):
            notes["complex"] = True
        elif kind == "O":
            notes["object"] = True


def _array_like(value: Any) -> bool:
    return isinstance(value, np.ndarray | np.generic | int | float | complex)


def watched(value: Any) -> Any:
    """A float or integer array as a Watched view (anything else as it is)."""
    if isinstance(value, np.ndarray) and value.dtype.kind in "fiu":
        return value.view(Watched)
    return value


class AutogradUnavailable(RuntimeError):
    """torch's own error, renamed, when a NumPy-only entry reached for autograd (which is
    off while it runs): the checks name it `used-autograd`, not a broken graph."""


UNAVAILABLE = "torch's autograd is off while this function runs (the exercise is NumPy only)"
AUTOGRAD_ERRORS = ("does not require grad", "nference tensor")


def numpy_call(target: Callable[..., Any], args: list[Any]) -> tuple[Any, dict[str, bool]]:
    """Calls a NumPy-only entry inside torch.inference_mode() with Watched arrays;
    returns its result (arrays made plain again) and what the arrays noted."""
    Watched.notes.update(complex=False, object=False)  # in place: the snapshot compares
    with _INFERENCE():
        try:
            result = target(*[watched(arg) for arg in args])
        except RuntimeError as error:
            if not any(text in str(error) for text in AUTOGRAD_ERRORS):
                raise
            raise AutogradUnavailable(f"{UNAVAILABLE}: {error}") from None
    notes = dict(Watched.notes)
    return _plain(result), notes


def _plain(value: Any) -> Any:
    if isinstance(value, Watched):
        return value.view(np.ndarray)
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in list(value.items())[: MAX_NOTED * 5]}
    return value


# Ids of what the streams hold and have not handed out yet: guard.HeapView leaves them
# out of the learner's gc.get_objects (runner.py gives it this set). Ids, not objects:
# reaching the set reaches no tensor.
WITHHELD: set[int] = set()


class Sealed(NamedTuple):
    """A batch cut into micro-batches (`seal`): the primed generator that holds them, and
    how many there are."""

    source: Iterator[tuple[torch.Tensor, torch.Tensor] | None]
    length: int


def seal(X: Any, y: Any, size: Any) -> Sealed:
    """X and y cut into micro-batches of at most `size` samples, copied out of them and
    held from now on by a generator of their own (`_withheld`), reachable only through
    its audited `gi_frame`, whose contents guard.HeapView leaves out (WITHHELD). The case
    runner seals a case's batch first, before any of torch's Python code runs for the case
    (where a hook or a replaced function of the learner's could find it), and lets go of
    X and y. Only torch's C methods of X and y run here."""
    step = int(size)
    pairs = [(X[s : s + step].clone(), y[s : s + step].clone()) for s in range(0, len(X), step)]
    source = _withheld(pairs)
    next(source)  # primed: from here on its `finally` runs however the stream ends
    return Sealed(source, len(pairs))


def micro_batches(
    model: Any, batch: Sealed, records: list[torch.Tensor]
) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
    """A one-pass stream of the sealed batch's (x_micro, y_micro) pairs; before each pair,
    the parameters' gradients at that moment go into `records` (`partial_grads`): before
    the first, what the loop started from, before each later one, the gradient
    accumulated so far. The parameters are the ones the harness built, taken now, before
    any learner code runs.

    Nothing else holds the batch while the learner's code runs (runner.py seals it and
    lets go of the decoded case's X and y): the pairs not handed out yet are in the frame
    of `_withheld`, which the stream's generator holds in turn. Reaching either frame
    (`gi_frame`, a traceback's `tb_frame`) is an audited attribute, `frame-walk`
    (guard.py); the pairs are out of the learner's gc.get_objects (WITHHELD, and
    guard.HeapView leaves out the harness's generators); and no code of the learner's
    runs while either frame is on the stack (`_unobserved_step`), where it could reach
    them through `f_back`, which is not audited. Driving `_withheld` itself only takes
    micro-batches away from the stream: its records then fall short."""
    params = [Param(p, p.numel(), p.dtype, p.device) for p in model.parameters()]
    return _handed_out(params, batch.source, batch.length, records)


def _handed_out(
    params: list[Param],
    source: Iterator[tuple[torch.Tensor, torch.Tensor] | None],
    count: int,
    records: list[torch.Tensor],
) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
    for index in range(count):
        pair = _unobserved_step(params, source, records, index == count - 1)
        if pair is None:
            return
        yield pair


def _withheld(
    pairs: list[tuple[torch.Tensor, torch.Tensor]],
) -> Iterator[tuple[torch.Tensor, torch.Tensor] | None]:
    """Hands out `pairs` in order, each out of WITHHELD as it goes (the learner's own
    from then on); what is left leaves WITHHELD when the stream is dropped. Between the
    priming and the end it makes no container object, so no garbage collection (and no
    finalizer or gc callback of the learner's, whose caller's frame this would be) starts
    while this frame runs."""
    WITHHELD.update(_ids(pairs))
    try:
        yield None
        while pairs:
            pair = pairs.pop(0)
            _let_go(pair)
            yield pair
    finally:
        while pairs:  # dropped before the end: the rest let go of the same way
            _let_go(pairs.pop())
        WITHHELD.discard(id(pairs))


def _let_go(pair: tuple[torch.Tensor, torch.Tensor]) -> None:
    WITHHELD.discard(id(pair))
    WITHHELD.discard(id(pair[0]))
    WITHHELD.discard(id(pair[1]))


def _ids(pairs: list[tuple[torch.Tensor, torch.Tensor]]) -> set[int]:
    return {id(pairs)} | {id(item) for pair in pairs for item in (pair, *pair)}


class Param(NamedTuple):
    """A parameter and what partial_grads compares its grad with, taken before any
    learner code runs (a class the learner gave the parameter later cannot answer)."""

    tensor: torch.Tensor
    numel: int
    dtype: torch.dtype
    device: torch.device


def _unobserved_step(
    params: list[Param],
    source: Iterator[tuple[torch.Tensor, torch.Tensor] | None],
    records: list[torch.Tensor],
    last: bool,
) -> tuple[torch.Tensor, torch.Tensor] | None:
    """Records the grads and takes the next pair with torch function and dispatch modes
    and tensor subclasses off, and automatic garbage collection too (its callbacks and
    the finalizers it runs), so that none of the learner's code runs above the stream's
    frames. Collection is off before anything is allocated (an allocation can start one).
    After the last pair `source` is run to its end here, not closed later by a
    GeneratorExit (an allocation, with collection on)."""
    collecting = _GC_ENABLED()
    _GC_DISABLE()
    try:
        with _NO_TORCH_FUNCTION(), _NO_TORCH_DISPATCH():
            records.append(partial_grads(params))
            pair = next(source)
            if last:
                next(source, None)
            return pair
    finally:
        if collecting:
            _GC_ENABLE()


def partial_grads(params: list[Param]) -> torch.Tensor:
    """Every parameter's `.grad` flattened into one new tensor (None: zeros; anything
    but a plain tensor of the parameter's size and device: NaN, never a match). The grad
    is read with torch's own getter: no property of a subclass runs."""
    parts = []
    for param in params:
        grad = _GRAD.__get__(param.tensor)
        if grad is None:
            parts.append(_ZEROS(param.numel, dtype=param.dtype))
        elif type(grad) is _TENSOR and _same_layout(grad, param):
            parts.append(grad.detach().reshape(-1).to(param.dtype, copy=True))
        else:
            parts.append(_FULL((param.numel,), float("nan"), dtype=param.dtype))
    return _CAT(parts)


def _same_layout(grad: torch.Tensor, param: Param) -> bool:
    same_size = grad.numel() == param.numel and grad.layout == torch.strided
    return same_size and grad.device == param.device and not grad.is_complex()
