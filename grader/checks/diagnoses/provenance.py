"""Provenance: did autograd (or an optimizer step) put the final values there?
`grad_explained`, `grad_overwritten`, `params_explained`, `params_edited`, `was_filled`."""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence

from grader.capture import BackwardCall, DictValue, ModuleValue, Provenance, TensorValue, Value
from grader.checks.compare import Tolerance, compare_tensors
from grader.checks.trials import Trial


def is_cleared(grad: TensorValue) -> bool:
    """An all-zero grad (zero_grad(set_to_none=False), grad.zero_())."""
    return grad.complete and all(v == 0 for v in grad.floats())


def _grads_of(value: Value | None) -> dict[str, TensorValue | None]:
    """A recorded grad as {"": tensor-or-None}, or a module's as {param: ...}."""
    if isinstance(value, DictValue):
        return {k: v if isinstance(v, TensorValue) else None for k, v in value.items.items()}
    return {"": value if isinstance(value, TensorValue) else None}


def final_grads(value: Value | None) -> dict[str, TensorValue | None] | None:
    """A captured name's final grads: {"": grad} for a tensor, {param: grad} for a
    module; None for anything else."""
    if isinstance(value, TensorValue):
        return {"": value.grad}
    if isinstance(value, ModuleValue):
        return {k: p.grad for k, p in value.params.items()}
    return None


def _same(got: TensorValue | None, want: TensorValue | None) -> bool:
    if got is None or want is None:
        return got is want
    return compare_tensors(got, want, Tolerance()) is None


# autograd.grad results a grad is compared with inside the tolerance, per key (the most
# recent ones); every earlier result still counts when it is an exact copy (a hash): a
# capture of MAX_CALLS calls costs linear work, not one comparison per pair of calls.
RESULTS_COMPARED = 16


def _fingerprint(grad: TensorValue) -> tuple[object, ...]:
    return (grad.shape, grad.dtype, grad.device_type, grad.data)


class _Results:
    """The autograd.grad results of one name seen so far, for `_explains`."""

    def __init__(self) -> None:
        self._exact: dict[str, set[tuple[object, ...]]] = {}
        self._recent: dict[str, deque[TensorValue]] = {}

    def add(self, grads: dict[str, TensorValue | None]) -> None:
        for key, grad in grads.items():
            if grad is None:
                continue
            self._exact.setdefault(key, set()).add(_fingerprint(grad))
            self._recent.setdefault(key, deque(maxlen=RESULTS_COMPARED)).append(grad)

    def holds(self, grad: TensorValue, key: str) -> bool:
        if _fingerprint(grad) in self._exact.get(key, ()):
            return True
        return any(_same(grad, result) for result in self._recent.get(key, ()))


def _explains(
    grad: TensorValue | None,
    key: str,
    left: dict[str, TensorValue | None] | None,
    results: _Results,
) -> bool:
    """`grad` is None or cleared, what autograd `left` there, or an autograd.grad result
    (or data-less, on the meta device: there is nothing to judge)."""
    if grad is None or is_cleared(grad) or not grad.complete:
        return True
    if left is not None and key in left and _same(grad, left[key]):
        return True
    return results.holds(grad, key)


def _chain_explained(name: str, calls: Sequence[BackwardCall]) -> bool:
    """Before each accumulating call whose grads are recorded, `name`'s grads were None,
    cleared, what the previous accumulating call left, or an autograd.grad result: a grad
    written by hand and then topped up by a throw-away backward is not."""
    left: dict[str, TensorValue | None] | None = None
    results = _Results()
    for call in calls:
        if name in call.results:
            results.add(_grads_of(call.results[name]))
        if not call.accumulates:
            continue
        if name not in call.grads_before or name not in call.grads_after:
            return True  # not recorded from here on: nothing more to judge
        for key, grad in _grads_of(call.grads_before[name]).items():
            if not _explains(grad, key, left, results):
                return False
        left = _grads_of(call.grads_after[name])
    return True


def grad_explained(
    name: str,
    value: Value | None,
    calls: Sequence[BackwardCall],
    provenance: Provenance | None,
) -> bool | None:
    """Is every final .grad of `name` what autograd left there: None or cleared, the
    grad right after the last accumulating backward call, or a result of
    torch.autograd.grad for it (stored by hand, which is legitimate)? And was it so
    before every recorded backward call too? None: cannot tell (no call at all, or no
    record of the last call's grads)."""
    finals = final_grads(value)
    if finals is None or not calls:
        return None
    left: dict[str, TensorValue | None] | None = None
    if provenance is not None and provenance.last_backward is not None:
        if name not in provenance.after_last_backward:
            return None
        left = _grads_of(provenance.after_last_backward[name])
    elif provenance is None:
        accumulating = [c for c in calls if c.accumulates]
        if accumulating:
            if name not in accumulating[-1].grads_after:
                return None
            left = _grads_of(accumulating[-1].grads_after[name])
    results = _Results()
    for call in calls:
        if name in call.results:
            results.add(_grads_of(call.results[name]))
    if provenance is not None and name in provenance.grad_results:
        results.add(_grads_of(provenance.grad_results[name]))
    if not all(_explains(final, key, left, results) for key, final in finals.items()):
        return False
    return _chain_explained(name, calls)


def grad_overwritten(trial: Trial, name: str) -> bool:
    """The learner's final .grad of `name` is not what autograd left (written or changed
    by hand after the last backward), while the reference's is: hard-coded, whatever
    other backward calls ran."""
    mine = grad_explained(
        name, trial.learner.get(name), trial.learner_calls, trial.learner_provenance
    )
    if mine is not False:
        return False
    theirs = grad_explained(
        name, trial.reference.get(name), trial.reference_calls, trial.reference_provenance
    )
    return theirs is True


def _tensor_values(value: Value | None) -> dict[str, TensorValue] | None:
    if isinstance(value, TensorValue):
        return {"": value}
    if isinstance(value, ModuleValue):
        return dict(value.params)
    if isinstance(value, DictValue):
        return {k: v for k, v in value.items.items() if isinstance(v, TensorValue)}
    return None


def _same_values(got: Value | None, want: Value | None) -> bool | None:
    """Do two recorded parameter values hold the same numbers (None: cannot tell)?"""
    mine, theirs = _tensor_values(got), _tensor_values(want)
    if mine is None or theirs is None or set(mine) != set(theirs):
        return None
    for key, tensor in mine.items():
        other = theirs[key]
        if not (tensor.complete and other.complete) or tensor.shape != other.shape:
            return None
        if tensor.data != other.data and compare_tensors(tensor, other, Tolerance()):
            return False
    return True


def params_explained(
    name: str, value: Value | None, provenance: Provenance | None, param: str | None = None
) -> bool | None:
    """Did `name`'s values (only its module's parameter `param`, when given) change only
    in optimizer steps: each step starts where the previous one ended, and the final value
    is where the last step left it? None: no optimizer step, or no record to judge by."""
    if provenance is None or provenance.last_step is None:
        return None
    steps = {s.index: s for s in provenance.steps}
    for index, step in steps.items():
        previous = steps.get(index - 1)
        if previous is None or step.before is None or previous.after is None:
            continue
        known = name in step.before and name in previous.after
        if known and (
            _same_values(_part(step.before[name], param), _part(previous.after[name], param))
            is False
        ):
            return False
    last = provenance.last_step.after
    if last is None or name not in last or value is None:
        return None
    return _same_values(_part(value, param), _part(last[name], param))


def _part(value: Value | None, param: str | None) -> Value | None:
    """A recorded value, narrowed to its module's parameter `param` when given."""
    if param is None or value is None:
        return value
    if isinstance(value, ModuleValue):
        return value.params.get(param)
    if isinstance(value, DictValue):
        found = value.items.get(param)
        return found if isinstance(found, TensorValue) else None
    return None


def params_edited(trial: Trial, name: str, source: tuple[str, str | None] | None = None) -> bool:
    """The reference's `name` changed only in optimizer steps, the learner's did not
    (set or changed by hand between or after the steps). `source`: where the learner's
    value came from, (name, module parameter), when not `name` itself (`module_param`:
    the learner's `model.weight` checked against the reference's `w`)."""
    held, param = source or (name, None)
    mine = params_explained(held, trial.learner.get(held), trial.learner_provenance, param)
    if mine is not False:
        return False
    theirs = params_explained(name, trial.reference.get(name), trial.reference_provenance)
    return theirs is True


def was_filled(
    name: str, param: str, calls: Sequence[BackwardCall], provenance: Provenance | None
) -> bool:
    """Did some backward call leave a non-zero grad in `name` (a module's `param`)?"""
    recorded = [c.grads_after.get(name) for c in calls if c.accumulates]
    if provenance is not None:
        recorded.append(provenance.after_last_backward.get(name))
    for value in recorded:
        grad = _grads_of(value).get(param)
        if grad is not None and not is_cleared(grad):
            return True
    return False
