"""Rules on what the run did (backward calls, grads, errors): `context_diagnosis` (course
errors and crashes over generic findings, cut graphs), `missing_grad_slug`,
`grad_written_by_hand`, `count_slug`, `history_slug`, `graph_facts_slug` and the facts
they read (`accumulated`, `stale_names`, `no_backward`, ...)."""

from __future__ import annotations

import bisect
import math
from collections import Counter
from collections.abc import Sequence

from grader.capture import (
    BackwardCall,
    DictValue,
    ErrorInfo,
    ListValue,
    ModuleValue,
    NdarrayValue,
    ScalarValue,
    TensorValue,
    Value,
)
from grader.checks.compare import Difference, Tolerance, all_close, compare_tensors
from grader.checks.diagnoses.differences import difference_slug
from grader.checks.diagnoses.errors import error_slug
from grader.checks.diagnoses.provenance import was_filled
from grader.checks.trials import Trial

# Diagnoses that only say "something is missing or off": an uncaught exception that the
# reference did not raise is the better explanation for them.
GENERIC = frozenset(
    {
        "wrong-value",
        "missing-name",
        "graph-broken",
        "missing-retain-grad",
        "loss-flat",
        "no-backward",
    }
)


def _error_slugs(calls: Sequence[BackwardCall], exception: ErrorInfo | None) -> Counter[str]:
    found: Counter[str] = Counter()
    messages = [c.error.message for c in calls if c.error is not None]
    for message in messages:
        slug = error_slug(message)
        if slug:
            found[slug] += 1
    if exception is not None and exception.message not in messages:
        slug = error_slug(exception.message)
        if slug:
            found[slug] += 1
    return found


def course_error(trial: Trial) -> str | None:
    """A course error (non-scalar backward, freed graph, ...) the learner hit more often
    than the reference did."""
    mine = _error_slugs(trial.learner_calls, trial.learner_exception)
    theirs = _error_slugs(trial.reference_calls, trial.reference_exception)
    for slug, count in mine.items():
        if count > theirs.get(slug, 0):
            return slug
    return None


def reference_error_slugs(trial: Trial) -> set[str]:
    """The course errors the reference's own run raised (the exercise's subject)."""
    return set(_error_slugs(trial.reference_calls, trial.reference_exception))


def crashed(trial: Trial) -> bool:
    mine, theirs = trial.learner_exception, trial.reference_exception
    return mine is not None and (theirs is None or not mine.is_a(theirs))


def context_diagnosis(trial: Trial, found: str) -> str:
    """The real mistake: a course error the learner hit (more often than the reference,
    or uncaught), then a crash over a generic finding, then the check's own finding."""
    error = course_error(trial)
    if error:
        return error
    if crashed(trial):
        assert trial.learner_exception is not None
        error = error_slug(trial.learner_exception.message)
        if error:
            return error
        if found in GENERIC:
            return "crashed"
    if early_freed_graph(trial):
        return "freed-graph"
    if found in ROOT_FINDINGS and off_root(trial):
        return "wrong-backward-root"
    if found in SEED_FINDINGS and missing_seed(trial):
        return "missing-seed"
    if found in PER_INPUT_FINDINGS and backward_per_input(trial):
        return "backward-per-input"
    theirs_stale = stale(trial.ok_reference_calls)
    if found == "scaled-by-n" and theirs_stale and not stale(trial.ok_learner_calls):
        return "wrong-value"  # a missing accumulation, not a mean/sum mix-up
    if found == "scaled-by-n" and graph_cut(trial):
        return "graph-broken"  # a factor from a cut path (.item(), detach), not mean/sum
    return found or "wrong-value"


# Findings that unseeded random starting values explain better (the values only differ).
SEED_FINDINGS = frozenset({"", "wrong-value", "scaled-by-n", "sign-error", "loss-flat"})


def missing_seed(trial: Trial) -> bool:
    """The exercise asks the learner to seed torch (`seed_by_learner`: the harness leaves
    it unseeded), the reference's run seeded it and the learner's did not."""
    return trial.reference_seeded is True and trial.learner_seeded is False


# Findings that one backward() per variable (where the reference makes one) explains.
PER_INPUT_FINDINGS = frozenset({"", "wrong-value", "forgot-zero-grad", "scaled-by-n"})


def backward_per_input(trial: Trial) -> bool:
    """The reference makes one successful backward() whose graph reaches two or more
    tracked leaves; the learner makes more, at most one per leaf, each from a root of the
    reference's loss value (the same result, backpropagated once for each variable)."""
    theirs = [c for c in trial.ok_reference_calls if c.accumulates]
    mine = [c for c in trial.ok_learner_calls if c.accumulates]
    if len(theirs) != 1 or len(mine) < 2 or theirs[0].loss is None or theirs[0].graph is None:
        return False
    leaves = [name for name in theirs[0].graph if _tracked_leaf(trial.reference.get(name))]
    want = theirs[0].loss
    same_root = all(c.loss is not None and _close_loss(c.loss, want) for c in mine)
    return len(leaves) >= 2 and len(mine) <= len(leaves) and same_root


def _tracked_leaf(value: Value | None) -> bool:
    return isinstance(value, TensorValue) and value.is_leaf and value.requires_grad


def copied_too_early(trial: Trial, got: Value, tolerance: Tolerance) -> bool:
    """`got` is what a tracked .grad held after an earlier successful backward call of the
    learner's, not after the last one, while the reference's value is what its last call
    left: a copy taken before the last backward it had to include."""
    if not isinstance(got, TensorValue):
        return False
    mine = [c for c in trial.ok_learner_calls if c.accumulates]
    if len(mine) < 2:
        return False
    moved = {
        name
        for name, last in mine[-1].grads_after.items()
        if isinstance(last, TensorValue) and not _close(got, last, tolerance)
    }
    # one pass over what the earlier calls recorded (linear in the capture, not names x calls)
    for call in mine[:-1]:
        for name, earlier in call.grads_after.items():
            if name not in moved or not isinstance(earlier, TensorValue):
                continue
            if _close(got, earlier, tolerance):
                return True
    return False


def _close(got: TensorValue, want: TensorValue, tolerance: Tolerance) -> bool:
    return compare_tensors(got, want, tolerance) is None


# Findings that a backward from another root than the reference's explains better.
ROOT_FINDINGS = frozenset({"", "wrong-value", "scaled-by-n", "graph-broken", "loss-flat"})
FREED = "trying to backward through the graph a second time"


def _ok_before_freed(calls: Sequence[BackwardCall]) -> int | None:
    """How many calls succeeded before the first freed-graph error (None: no such error)."""
    done = 0
    for call in calls:
        if call.error is not None and FREED in call.error.message.lower():
            return done
        done += call.ok
    return None


def early_freed_graph(trial: Trial) -> bool:
    """The learner's run hit the freed-graph error on a call that had to succeed: fewer
    calls succeeded before it than before the reference's own (or the reference never
    raised it and every later call is the learner's extra)."""
    mine = _ok_before_freed(trial.learner_calls)
    if mine is None:
        return False
    theirs = _ok_before_freed(trial.reference_calls)
    if theirs is None:
        return mine < len(trial.ok_reference_calls)
    return mine < theirs


def _reference_roots(trial: Trial) -> tuple[set[str], set[str]]:
    """The tracked names the reference's successful accumulating calls start from, and
    the tracked names their graphs reach."""
    roots: set[str] = set()
    reached: set[str] = set()
    for call in trial.ok_reference_calls:
        if call.accumulates or call.results:
            roots |= set(call.roots)
            reached |= set(call.graph or ())
    return roots, reached


def grad_from_other_root(trial: Trial, name: str) -> bool:
    """The grad of `name` came from a call that does not start from (or pass through) the
    tracked tensor the reference backpropagates from, and whose scalar root holds another
    value than the reference's roots: a tensor engineered to give the expected grad
    (`(x * 10).backward()` for d(x**2)/dx at 5). A recomputed loss with the reference's
    value is not caught here: it is the same function."""
    roots, _ = _reference_roots(trial)
    if not roots:
        return False
    losses = _Losses([c.loss for c in trial.ok_reference_calls if c.loss is not None])
    for call in trial.ok_learner_calls:
        if not (call.reaches(name) and (call.accumulates or name in call.results)):
            continue
        assert call.graph is not None  # reaches() is True only with a known graph
        if roots & set(call.graph) or call.loss is None:
            continue
        if not losses.near(call.loss):
            return True
    return False


def _close_loss(got: float, want: float) -> bool:
    return all_close([got], [want], LOSS_RTOL, LOSS_ATOL)


LOSS_RTOL, LOSS_ATOL = 1.3e-6, 1e-5


def _close_loss_any(value: float, among: Sequence[float]) -> bool:
    return any(_close_loss(value, other) for other in among)


class _Losses:
    """The reference's losses, sorted: is a loss within `_close_loss` of one of them, in
    O(log n) (a learner call each, not one comparison per pair of calls). The closeness
    |a - b| <= atol + rtol * |b| (rtol < 1) holds for the nearest value on a side if it
    holds for any value on that side, so the two neighbours decide."""

    def __init__(self, values: Sequence[float]) -> None:
        self._finite = sorted(v for v in values if math.isfinite(v))
        other = [v for v in values if not math.isfinite(v)]
        self._other = [v for v in (math.nan, math.inf, -math.inf) if _close_loss_any(v, other)]

    def near(self, got: float) -> bool:
        if not math.isfinite(got):
            return any(_close_loss(got, want) for want in self._other)
        at = bisect.bisect_left(self._finite, got)
        around = self._finite[max(at - 1, 0) : at + 1]
        return any(_close_loss(got, want) for want in around)


def off_root(trial: Trial) -> bool:
    """A successful learner call backpropagated from another root than the reference's:
    its graph does not pass through the tracked tensor the reference starts from (the
    loss, when the learner starts from the prediction), or, where the reference starts
    from an untracked tensor, reaches none of the tracked tensors the reference's does
    (a throw-away tensor)."""
    roots, reached = _reference_roots(trial)
    if not roots and not reached:
        return False
    for call in trial.ok_learner_calls:
        if call.graph is None:
            continue
        if roots and not roots & set(call.graph):
            return True
        if not roots and not call.graph:  # the learner may track other names (a model)
            return True
    return False


def graph_cut(trial: Trial) -> bool:
    """Does the learner's run show a cut graph? Some tensor that requires grad in the
    reference does not in the learner's, or, after backward calls ran, a leaf that
    requires grad has no .grad where the reference's has one."""
    ran = bool(trial.ok_learner_calls)
    for key, want in trial.reference.items():
        for mine, theirs in tensor_pairs(trial.learner.get(key), want):
            if theirs.requires_grad and not mine.requires_grad:
                return True
            lost = theirs.grad is not None and mine.grad is None
            cut = ran and lost and mine.is_leaf and mine.requires_grad
            if cut and missing_grad_slug(mine, trial, key) == "graph-broken":
                return True
    return False


def graph_facts_slug(got: TensorValue, want: TensorValue) -> str:
    """A graph check's facts differ: losing requires_grad or the grad_fn cuts the graph."""
    broken = (want.requires_grad and not got.requires_grad) or (
        want.grad_fn is not None and got.grad_fn is None
    )
    return "graph-broken" if broken else "wrong-value"


def tensor_pairs(got: Value | None, want: Value) -> list[tuple[TensorValue, TensorValue]]:
    if isinstance(got, TensorValue) and isinstance(want, TensorValue):
        return [(got, want)]
    if isinstance(got, ModuleValue) and isinstance(want, ModuleValue):
        return [(got.params[k], p) for k, p in want.params.items() if k in got.params]
    return []


def no_backward(trial: Trial) -> bool:
    """The learner's run made no backward call at all (not even a failed one)."""
    return not trial.learner_calls


def expected_grads_present(trial: Trial) -> bool:
    """Does some learner tensor hold the reference's (non-None) .grad? Without any
    backward call, such a grad was written by hand."""
    for key, want in trial.reference.items():
        for mine, theirs in tensor_pairs(trial.learner.get(key), want):
            if theirs.grad is None or mine.grad is None:
                continue
            if compare_tensors(mine.grad, theirs.grad, Tolerance()) is None:
                return True
    return False


def grad_written_by_hand(trial: Trial, expects_grads: bool) -> bool:
    """The expected .grad is there, the reference needed a backward call for it, and the
    learner's run made none that succeeded: hard-coded."""
    return expects_grads and bool(trial.ok_reference_calls) and not trial.ok_learner_calls


def missing_grad_slug(got: TensorValue, trial: Trial, name: str = "", param: str = "") -> str:
    """Why `got.grad` is None (or cleared) where the reference has one: backward never
    ran; the non-leaf's grad was not retained; a backward filled it and the code cleared
    it afterwards; torch.autograd.grad computed it and it was never stored; `inputs=`
    left it out; the backward that would fill it was skipped after an error; else the
    graph never reached the tensor."""
    if no_backward(trial):
        return "no-backward"
    if not got.is_leaf and got.requires_grad and not got.retains_grad:
        return "missing-retain-grad"
    calls = trial.learner_calls
    filled = name in trial.learner_filled or was_filled(
        name, param, calls, trial.learner_provenance
    )
    if name and filled:
        return "grad-cleared"
    if name and any(name in c.results for c in calls if c.ok):
        return "grad-not-stored"
    if name and _left_out(name, calls):
        return "inputs-excluded"
    if skipped_after_error(trial):
        return "backward-skipped"
    if not got.is_leaf and got.requires_grad:
        return "missing-retain-grad"
    return "graph-broken"


def _left_out(name: str, calls: Sequence[BackwardCall]) -> bool:
    """A successful backward with `inputs=` reached `name`'s graph but did not list it,
    and no call filled it."""
    restricted = False
    for call in calls:
        if not call.ok or not call.accumulates or call.graph is None:
            continue
        if call.reaches(name):
            return False
        if call.inputs is not None and name in call.graph:
            restricted = True
    return restricted


def skipped_after_error(trial: Trial) -> bool:
    """A backward call raised (and was caught), nothing succeeded after it, and the
    learner's run has fewer successful calls than the reference's: the call that had to
    fill the grads came after the error in the same try block."""
    calls = trial.learner_calls
    failed = [i for i, c in enumerate(calls) if not c.ok]
    if not failed or trial.learner_exception is not None:
        return False
    after = calls[failed[-1] + 1 :]
    return not after and len(trial.ok_learner_calls) < len(trial.ok_reference_calls)


def full_jacobian(trial: Trial) -> bool:
    """The reference made one call from a non-scalar root; the learner made one per
    element of that root (the Jacobian's rows), each on fresh grads."""
    mine, theirs = trial.ok_learner_calls, trial.ok_reference_calls
    if len(theirs) != 1 or theirs[0].loss_shape is None:
        return False
    rows = math.prod(theirs[0].loss_shape)
    return rows > 1 and len(mine) == rows and not stale(mine)


def count_slug(trial: Trial) -> str:
    """Why the number of successful backward calls differs from the reference's."""
    mine, theirs = trial.ok_learner_calls, trial.ok_reference_calls
    if full_jacobian(trial):
        return "full-jacobian"
    if len(mine) > len(theirs) and accumulated(trial):
        return "forgot-zero-grad"
    if not mine and no_backward(trial) and trial.learner_exception is None:
        return "hard-coded" if expected_grads_present(trial) else "no-backward"
    return "wrong-value"


def history_slug(difference: Difference, trial: Trial, target: str) -> str:
    """A grad after some backward call differs: stale grads before the learner's calls
    (where the reference's were fresh) are a forgotten zero_grad."""
    mine_stale = any(stale_names(c, [target]) for c in trial.ok_learner_calls)
    theirs_stale = any(stale_names(c, [target]) for c in trial.ok_reference_calls)
    was_stale = mine_stale and not theirs_stale
    slug = difference_slug(difference, accumulated=was_stale or accumulated(trial))
    return "forgot-zero-grad" if was_stale and slug == "wrong-value" else slug


def accumulated_onto_stale(trial: Trial) -> bool:
    """A successful backward of the learner's added into a leaf's non-zero grad (tracked
    or not: a first derivative differentiated again without clearing `x.grad`), where
    none of the reference's did, with no more successful calls than the reference's (an
    extra call is a mistake of its own, which the check may name)."""
    calls, theirs = trial.ok_learner_calls, trial.ok_reference_calls
    mine = any(call.onto_stale for call in calls) and len(calls) <= len(theirs)
    return mine and not any(call.onto_stale for call in theirs)


def stale(calls: Sequence[BackwardCall]) -> bool:
    return any(stale_names(call) for call in calls)


def accumulated(trial: Trial, names: Sequence[str] | None = None) -> bool:
    """Did the learner's run accumulate gradients (more calls, or stale grads)?"""
    if len(trial.ok_learner_calls) > len(trial.ok_reference_calls):
        return True
    return any(stale_names(call, names) for call in trial.ok_learner_calls)


def stale_names(call: BackwardCall, names: Sequence[str] | None = None) -> list[str]:
    """Tracked names whose grad was neither None nor zero before this call."""
    found = []
    for name, grad in call.grads_before.items():
        if names is not None and name not in names:
            continue
        if grad is not None and any(v != 0 for v in flat_numbers(grad)):
            found.append(name)
    return found


def flat_numbers(value: Value | None) -> list[float]:
    if isinstance(value, TensorValue | NdarrayValue):
        return value.floats()
    if isinstance(value, ScalarValue) and value.kind == "number":
        return [float(value.value)]  # type: ignore[arg-type]
    if isinstance(value, DictValue):
        return [v for item in value.items.values() for v in flat_numbers(item)]
    if isinstance(value, ListValue):
        return [v for item in value.items for v in flat_numbers(item)]
    if isinstance(value, ModuleValue):
        return [v for p in value.params.values() for v in p.floats()]
    return []
