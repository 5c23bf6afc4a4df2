"""Autograd instrumentation: records every backward call and optimizer step.

Runs inside the sandbox's runner child, installed before the learner's code. Each
wrapper records the call, then calls the original; an error is recorded and re-raised.

Each call also records its provenance (FORMAT.md section 3): which tracked names the
root is (`roots`), which tracked tensors its graph reaches (`graph`, from a walk of
`grad_fn.next_functions` before the call), the tracked names among `inputs=` and, for
`torch.autograd.grad`, the gradient it returned per tracked input (`results`). The
recorder also keeps the grads right after the last accumulating backward call (also
beyond the recorded calls) and the tracked parameters' values around optimizer steps.

Each call also looks for evidence that the autograd engine really ran: a hook on the
root's graph node (or on a leaf root's gradient accumulation, or on the `inputs=`
leaves) must fire. A call that returned, changed the tracked gradients (or returned
gradients) and fired none is reported as `autograd-not-run`: something below the
wrappers was replaced.

A run with a gradient scale (the envelope's `"grad_scale"`, script jobs only) multiplies
every gradient seed of the learner's calls by it before the original runs: the implicit
1.0 of a scalar root, an explicit `gradient=` / `grad_tensors=` / `grad_outputs=`
(floating-point tensors only; anything else is passed on untouched, so every error the
call would raise stays the same). Every gradient autograd computes then follows the
scale, and so does every value derived from one; a value typed in does not. The same run
also starts from other values (grader/rewrite.py): a fake loss root follows the scale, not those.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import sys
import weakref
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import torch
from values import grads_of_value, number, params_of_value, plain_tensor

MAX_RECORDED_CALLS = 10_000  # backward calls recorded at all
MAX_CALLS_WITH_GRADS = 1_000  # of those, calls whose tracked grads are encoded
MAX_MESSAGE = 2_000
MAX_GRAPH_NODES = 5_000  # graph nodes walked per call; a larger graph: `graph` is None
MAX_STEP_RECORDS = 1_000  # optimizer steps whose parameter values are kept
MAX_STEP_ELEMENTS = 10_000  # parameter values per step snapshot; more: no snapshot
MAX_MRO = 32
MARK = "gradlab"  # the recorder's note in a graph node's metadata (graph_marks)
ACCUMULATING = ("Tensor.backward", "autograd.backward")  # calls that write .grad


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
        self.total_calls = 0
        self.last_backward: dict[str, Any] | None = None  # {"index", "grads_after"}
        self.grad_results: dict[str, Any] = {}  # latest autograd.grad result per name
        self.steps: list[dict[str, Any]] = []  # {"index", "before", "after"}
        self.steps_truncated = False
        self.last_step: dict[str, Any] | None = None
        self._before_step: dict[str, Any] | None = None
        self.grad_scale: float | None = None  # the seeds' factor (module docstring)
        # Function exercises: the observed values, and the names among them to which an
        # accumulating backward call left a non-zero grad (a grad later cleared is named).
        self.watch: Callable[[], dict[str, Any]] = dict
        self.filled: set[str] = set()
        self.identities = Identities()  # which tensor each tracked name holds, per call
        self.derivatives = 0  # derivatives made with create_graph, numbered (graph_marks)

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
        self.total_calls = 0
        self.last_backward = None
        self.grad_results = {}
        self.filled = set()
        self.identities = Identities()
        self.derivatives = 0

    def provenance(self) -> dict[str, Any]:
        """What the final values are compared with (FORMAT.md section 3)."""
        return {
            "calls": self.total_calls,
            "last_backward": self.last_backward,
            "grad_results": self.grad_results,
            "steps": self.steps,
            "steps_truncated": self.steps_truncated,
            "last_step": self.last_step,
        }

    def install(self) -> None:
        autograd = torch.autograd
        # Replacing the method is the point: every learner call goes through the recorder.
        torch.Tensor.backward = self._wrap(  # type: ignore[method-assign]
            torch.Tensor.backward, "Tensor.backward", "self"
        )
        autograd.backward = self._wrap(autograd.backward, "autograd.backward", "tensors")
        autograd.grad = self._wrap(autograd.grad, "autograd.grad", "outputs")
        from torch.optim.optimizer import (
            register_optimizer_step_post_hook,
            register_optimizer_step_pre_hook,
        )

        register_optimizer_step_pre_hook(self._before_step_hook)
        register_optimizer_step_post_hook(self._on_step)

    def _before_step_hook(self, *_: Any) -> None:
        self._before_step = self._params()

    def _on_step(self, *_: Any) -> None:
        index = self.optimizer_steps
        self.optimizer_steps += 1
        before, self._before_step = self._before_step, None
        after = self._params()
        step = {"index": index, "before": before, "after": after}
        last = self.last_step
        irregular = last is not None and before != last["after"]
        if index < MAX_STEP_RECORDS or irregular:
            if irregular and last is not None and (not self.steps or self.steps[-1] is not last):
                self._log_step(last)  # the step it must start from, to compare with
            self._log_step(step)
        self.last_step = step

    def _log_step(self, step: dict[str, Any]) -> None:
        if len(self.steps) < 2 * MAX_STEP_RECORDS:
            self.steps.append(step)
        else:
            self.steps_truncated = True

    def _params(self) -> dict[str, Any] | None:
        """The values of the tracked tensors that require grad (and of tracked modules'
        parameters); None when they hold more than MAX_STEP_ELEMENTS values."""
        try:
            values = self.lookup()
        except Exception:
            return None
        found: dict[str, Any] = {}
        size = 0
        for name, value in values.items():
            size += _param_elements(value)
            if size > MAX_STEP_ELEMENTS:
                return None
            try:
                params = params_of_value(value, self.max_elements)
            except Exception:
                continue
            if params is not None:
                found[name] = params
        return found

    def _wrap(self, original: Callable[..., Any], api: str, root: str) -> Callable[..., Any]:
        signature = _signature(original)
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
        index = self.total_calls
        self.total_calls += 1
        if index >= MAX_RECORDED_CALLS:
            self.truncated = True
            return self._unrecorded(original, api, args, kwargs)
        with_grads = index < MAX_CALLS_WITH_GRADS
        tracked = self._tracked()
        call = _describe(api, root, bound)
        nodes = graph_nodes(_tensors(root))
        call.update(_provenance(root, bound, tracked, nodes))
        call.update(graph_marks(nodes, index))
        call["identities"] = self.identities.of(tracked)
        call["grads_before"] = self._grads() if with_grads else {}
        if api in ACCUMULATING:
            call["onto_stale"] = _onto_stale(root, bound)
        self.calls.append(call)
        evidence = Evidence(api, root, bound)
        if self.grad_scale is not None and bound:
            args, kwargs = (), scaled_seeds(api, dict(bound), self.grad_scale)
        try:
            result = original(*args, **kwargs)
        except BaseException as error:
            evidence.remove()
            call["error"] = _error(error)
            after = self._grads()
            call["grads_after"] = after if with_grads else {}
            self._after(api, index, after)
            raise
        evidence.remove()
        after = self._grads()
        call["grads_after"] = after if with_grads else {}
        self._after(api, index, after)
        if bound.get("create_graph"):
            made = mark_derivatives(api, result, bound, nodes, self.derivatives)
            self.derivatives += len(made)
            if made and call["differentiates"] is not None and forward_mode(made):
                serials = {serial for _, serial in made}
                call["differentiates"] = sorted({*call["differentiates"], *serials})
        if api == "autograd.grad":
            call["results"] = self._results(bound, tracked, result)
        untracked = not call["grads_before"]  # nothing to compare: any silence counts
        changed = untracked or call["grads_after"] != call["grads_before"] or result is not None
        if evidence.hooked and not evidence.fired and changed:
            self.on_tamper("autograd-not-run", f"{api} returned but the autograd engine never ran")
        return result

    def _unrecorded(
        self,
        original: Callable[..., Any],
        api: str,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
    ) -> Any:
        """A call beyond MAX_RECORDED_CALLS: only the grads it leaves are kept."""
        index = self.total_calls - 1
        try:
            return original(*args, **kwargs)
        finally:
            if api in ACCUMULATING:
                self._after(api, index, self._grads())

    def _after(self, api: str, index: int, grads: dict[str, Any]) -> None:
        if api in ACCUMULATING:
            self.last_backward = {"index": index, "grads_after": grads}
            self._note_filled()

    def _note_filled(self) -> None:
        try:
            watched = dict(self.watch())
        except Exception:
            return
        for name, value in watched.items():
            with contextlib.suppress(Exception):
                if _holds_gradient(value):
                    self.filled.add(name)

    def _tracked(self) -> dict[str, Any]:
        try:
            return dict(self.lookup())
        except Exception:
            return {}

    def _results(
        self, bound: Mapping[str, Any], tracked: dict[str, Any], result: Any
    ) -> dict[str, Any]:
        """The gradient `torch.autograd.grad` returned for each tracked input."""
        found: dict[str, Any] = {}
        inputs = _tensors(bound.get("inputs"))
        if not isinstance(result, tuple | list) or len(result) != len(inputs):
            return found
        for tensor, grad in zip(inputs, result, strict=True):
            for name in _names_of(tensor, tracked):
                try:
                    encoded = (
                        plain_tensor(grad, self.max_elements)
                        if isinstance(grad, torch.Tensor)
                        else None
                    )
                except Exception:
                    continue
                found[name] = encoded
                self.grad_results[name] = encoded
        return found

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


SEEDS = {"Tensor.backward": ("self", "gradient"), "autograd.backward": ("tensors", "grad_tensors"),
         "autograd.grad": ("outputs", "grad_outputs")}  # fmt: skip


_SIGNATURES: dict[Callable[..., Any], inspect.Signature] = {}


def _signature(function: Callable[..., Any]) -> inspect.Signature:
    """inspect.signature of a function the recorder wraps, computed once per process."""
    found = _SIGNATURES.get(function)
    if found is None:
        found = _SIGNATURES[function] = inspect.signature(function)
    return found


# Computed at import: a zygote imports this module once for all the jobs it forks.
for _wrapped in (torch.Tensor.backward, torch.autograd.backward, torch.autograd.grad):
    _signature(_wrapped)
del _wrapped


def scaled_seeds(api: str, bound: dict[str, Any], scale: float) -> dict[str, Any]:
    """The call's arguments (by name) with every gradient seed multiplied by `scale`."""
    root_name, seed_name = SEEDS[api]
    roots, seeds = bound.get(root_name), bound.get(seed_name)
    single = isinstance(roots, torch.Tensor)
    listed = [roots] if single else roots
    if not isinstance(listed, list | tuple) or not all(isinstance(r, torch.Tensor) for r in listed):
        return bound
    if seeds is None:
        given: list[Any] = [None] * len(listed)
    elif isinstance(seeds, torch.Tensor):
        given = [seeds]
    elif isinstance(seeds, list | tuple):
        given = list(seeds)
    else:
        return bound
    if len(given) != len(listed):
        return bound
    scaled = [_scaled_seed(r, s, scale) for r, s in zip(listed, given, strict=True)]
    bound[seed_name] = scaled[0] if single and not isinstance(seeds, list | tuple) else scaled
    return bound


def _scaled_seed(root: torch.Tensor, seed: Any, scale: float) -> Any:
    """`seed` times `scale`; None: the implicit 1.0, where torch would make one (a scalar
    floating-point root that requires grad)."""
    if seed is None:
        if root.numel() == 1 and root.requires_grad and root.is_floating_point():
            return torch.full_like(root, scale, memory_format=torch.preserve_format)
        return None
    if isinstance(seed, torch.Tensor) and seed.is_floating_point():
        return seed * scale
    return seed


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


def _error(error: BaseException) -> dict[str, Any]:
    return {"type": type(error).__name__, "message": _message(error), "mro": mro_names(error)}


def mro_names(error: BaseException) -> list[str]:
    """The exception's classes, most derived first, as `module.qualname` (a class named
    like a builtin but defined elsewhere keeps its own module)."""
    names = []
    for cls in type(error).__mro__[:MAX_MRO]:
        try:
            names.append(f"{cls.__module__}.{cls.__qualname__}"[:300])
        except Exception:
            names.append("?")
    return names


def _names_of(tensor: Any, tracked: Mapping[str, Any]) -> list[str]:
    return [name for name, value in tracked.items() if value is tensor]


def _param_elements(value: Any) -> int:
    try:
        if isinstance(value, torch.Tensor):
            return value.numel() if value.requires_grad else 0
        if isinstance(value, torch.nn.Module):
            return sum(p.numel() for p in value.parameters())
    except Exception:
        return 0
    return 0


def _provenance(
    root: Any, bound: Mapping[str, Any], tracked: Mapping[str, Any], nodes: list[Any] | None
) -> dict[str, Any]:
    """`roots`: the tracked names the root is; `graph`: the tracked names whose tensor the
    root's graph reaches (None: too large to walk); `inputs`: the tracked names among
    `inputs=` (None when no inputs were given)."""
    roots = _tensors(root)
    given = bound.get("inputs")
    inputs = None
    if given is not None:
        inputs = sorted({n for t in _tensors(given) for n in _names_of(t, tracked)})
    return {
        "roots": sorted({n for t in roots for n in _names_of(t, tracked)}),
        "graph": None if nodes is None else _graph_names(roots, tracked, nodes),
        "inputs": inputs,
    }


def graph_nodes(roots: list[torch.Tensor]) -> list[Any] | None:
    """The nodes of the roots' graph, from a walk of `next_functions` (None: more than
    MAX_GRAPH_NODES). The list holds the nodes, so their ids stay unique while it lives."""
    stack = [t.grad_fn for t in roots if t.grad_fn is not None]
    seen: dict[int, Any] = {}
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        if len(seen) >= MAX_GRAPH_NODES:
            return None
        seen[id(node)] = node
        try:
            following = node.next_functions
        except Exception:
            continue
        stack.extend(item[0] for item in following if item[0] is not None)
    return list(seen.values())


def _graph_names(
    roots: list[torch.Tensor], tracked: Mapping[str, Any], graph: list[Any]
) -> list[str]:
    leaves: dict[int, str] = {}
    nodes: dict[int, str] = {}
    for name, value in tracked.items():
        tensors = [value] if isinstance(value, torch.Tensor) else []
        if isinstance(value, torch.nn.Module):
            with contextlib.suppress(Exception):
                tensors = list(value.parameters())[:1_000]
        for tensor in tensors:
            node = tensor.grad_fn
            if node is None:
                leaves[id(tensor)] = name
            else:
                nodes[id(node)] = name
    found = {leaves[id(t)] for t in roots if id(t) in leaves}
    for node in graph:
        if id(node) in nodes:
            found.add(nodes[id(node)])
        variable = getattr(node, "variable", None)
        if variable is not None and id(variable) in leaves:
            found.add(leaves[id(variable)])
    return sorted(found)


def _note(node: Any) -> dict[str, Any] | None:
    """The recorder's note on a graph node (kept in the node's own metadata, so it lives
    exactly as long as the node: a rebuilt graph is new nodes without notes)."""
    try:
        metadata = node.metadata
        note = metadata.setdefault(MARK, {})
    except Exception:
        return None
    return note if isinstance(note, dict) else None


def _accumulator(node: Any) -> bool:
    """A leaf's AccumulateGrad node: shared by every graph built from the leaf."""
    return getattr(node, "variable", None) is not None


def graph_marks(nodes: list[Any] | None, index: int) -> dict[str, Any]:
    """`graph_reused`: the call's graph goes through a node an earlier call's graph went
    through (a retained graph used again; a leaf's gradient accumulator does not count);
    `differentiates`: the serials of the derivatives made by earlier calls with
    create_graph that the graph goes through (a derivative differentiated again). Both
    None when the graph was not walked. Nodes not yet walked are noted as walked by call
    `index`."""
    if nodes is None:
        return {"graph_reused": None, "differentiates": None}
    reused = False
    derivatives: set[int] = set()
    for node in nodes:
        note = None if _accumulator(node) else _note(node)
        if note is None:
            continue
        if isinstance(note.get("walked"), int):
            reused = True
        else:
            note["walked"] = index
        if isinstance(note.get("derivative"), int):
            derivatives.add(note["derivative"])
    return {"graph_reused": reused, "differentiates": sorted(derivatives)}


def mark_derivatives(
    api: str, result: Any, bound: Mapping[str, Any], nodes: list[Any] | None, serial: int
) -> list[tuple[torch.Tensor, int]]:
    """After a successful call with create_graph: notes the graph node of each derivative
    it made (autograd.grad's results; the `.grad` of the leaves a backward wrote) with a
    serial number from `serial` on, so that a later call differentiating it says which.
    Returns each derivative it noted, with its serial."""
    if api == "autograd.grad":
        derivatives = _tensors(result)
    else:
        leaves = _tensors(bound.get("inputs"))
        if not leaves:
            leaves = [n.variable for n in nodes or () if _accumulator(n)][:100]
        derivatives = [leaf.grad for leaf in leaves if isinstance(leaf.grad, torch.Tensor)]
    made: list[tuple[torch.Tensor, int]] = []
    for tensor in derivatives:
        number = serial + len(made)
        noted = False
        for level in _levels(tensor):
            node = level.grad_fn
            note = None if node is None else _note(node)
            if note is not None and "derivative" not in note:
                note["derivative"] = number
                noted = True
        if noted:
            made.append((tensor, number))
    return made


def forward_mode(made: list[tuple[torch.Tensor, int]]) -> bool:
    """The derivatives just made are differentiated again in forward mode as they are
    computed: a torch.func `jvp` transform is active around the call (forward over
    reverse, `jvp(grad(f), ...)`), or one of them carries a forward-mode tangent."""
    try:
        functorch = sys.modules.get("torch._functorch.pyfunctorch")
        if functorch is not None:
            stack = functorch.retrieve_all_functorch_interpreters()
            if any("jvp" in str(interpreter.key()).lower() for interpreter in stack):
                return True
        forward = sys.modules.get("torch.autograd.forward_ad")
        if forward is not None:
            return any(forward.unpack_dual(t).tangent is not None for t, _ in made)
    except Exception:
        return False
    return False


def _levels(tensor: torch.Tensor) -> list[torch.Tensor]:
    """The tensor and, for a torch.func transform's wrapper, the tensors it wraps (the
    derivative an inner `grad` makes is differentiated through its unwrapped self)."""
    found = [tensor]
    functorch = getattr(torch._C, "_functorch", None)
    with contextlib.suppress(Exception):
        while functorch is not None and len(found) < 16:
            if not functorch.is_gradtrackingtensor(found[-1]):
                break
            found.append(functorch.get_unwrapped(found[-1]))
    return found


class Identities:
    """Which tensor object each tracked name holds: a serial number per tensor, the same
    while the name keeps holding the same object (a weak reference: a tensor that died
    and a new one at its address are told apart), a new one when the name is rebound."""

    def __init__(self) -> None:
        self.refs: dict[str, Any] = {}
        self.serials: dict[str, int] = {}
        self.count = 0

    def of(self, tracked: Mapping[str, Any]) -> dict[str, int]:
        found: dict[str, int] = {}
        for name, value in tracked.items():
            if not isinstance(value, torch.Tensor):
                continue
            ref = self.refs.get(name)
            if ref is None or ref() is not value:
                try:
                    self.refs[name] = weakref.ref(value)
                except TypeError:
                    continue
                self.serials[name] = self.count
                self.count += 1
            found[name] = self.serials[name]
        return found


def _onto_stale(root: Any, bound: Mapping[str, Any]) -> bool:
    """Before an accumulating call: does a leaf it writes (its `inputs=`, else a leaf of
    the root's graph, at most MAX_GRAPH_NODES nodes walked) already hold a non-zero grad?"""
    try:
        leaves = _tensors(bound.get("inputs"))
        if not leaves:
            stack = [t.grad_fn for t in _tensors(root) if t.grad_fn is not None]
            seen: dict[int, Any] = {}
            while stack and len(seen) < MAX_GRAPH_NODES:
                node = stack.pop()
                if id(node) in seen:
                    continue
                seen[id(node)] = node
                variable = getattr(node, "variable", None)
                if isinstance(variable, torch.Tensor):
                    leaves.append(variable)
                stack.extend(item[0] for item in node.next_functions if item[0] is not None)
        return any(_holds_gradient(leaf) for leaf in leaves)
    except Exception:
        return False


def _holds_gradient(value: Any) -> bool:
    """A tensor, or a module's parameter, holds a grad with a non-zero element."""
    if isinstance(value, torch.nn.Module):
        tensors = list(value.parameters())[:1_000]
    elif isinstance(value, torch.Tensor):
        tensors = [value]
    else:
        return False
    with torch.no_grad():
        return any(t.grad is not None and bool((t.grad != 0).any()) for t in tensors)


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
        "results": {},
        "error": None,
    }
