"""Diagnoses: the named mistakes (FORMAT.md section 5) and every rule that names one.

A failed check gets at most one diagnosis: `(slug, title, hint)`. The checks compare
(grader.checks.compare says WHAT differs); the rules here say WHICH mistake that is,
from the difference and from what the run did (backward calls, errors, stale grads).
So "why this diagnosis?" is answered by this module alone:

- `DIAGNOSES`: every slug with its title and hint.
- Difference rules: `difference_slug` (shape/dtype/device/kind, then `ratio_slug`:
  sign-error, scaled-by-n, forgot-zero-grad from a whole-number factor).
- Run rules: `context_diagnosis` (course errors and crashes over generic findings, cut
  graphs), `missing_grad_slug`, `grad_written_by_hand`, `count_slug`, `history_slug`, the
  loss-curve rules, `graph_facts_slug`, `typed_error_message`, `message_slug`,
  `error_slug`.

Every rule is total over captured numbers (NaN, infinities, subnormals): none raises.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType

from grader.capture import (
    BackwardCall,
    DictValue,
    ErrorInfo,
    ListValue,
    ModuleValue,
    NdarrayValue,
    Provenance,
    ScalarValue,
    TensorValue,
    Value,
)
from grader.checks.compare import (
    Difference,
    Mismatch,
    Tolerance,
    all_close,
    compare_tensors,
    normalise,
)
from grader.checks.trials import Trial

INTEGER_TOLERANCE = 1e-4  # how close a ratio must be to an integer to count as one
MAX_SCALE = 4096  # larger integer ratios are not recognised as a mean/sum or accumulation
FLAT_RELATIVE_DROP = 0.01  # a curve whose end is within 1% of its start does not fall
# A curve that falls but ends above this fraction of its start barely falls (loss-flat);
# below it, it is on its way but stopped early (not-converged).
BARELY_FALLING = 0.9


@dataclass(frozen=True)
class Diagnosis:
    slug: str
    title: str
    hint: str


def _registry(*items: Diagnosis) -> Mapping[str, Diagnosis]:
    return MappingProxyType({item.slug: item for item in items})


DIAGNOSES: Mapping[str, Diagnosis] = _registry(
    Diagnosis(
        "forgot-zero-grad",
        "Gradients accumulated",
        "PyTorch adds each backward() into .grad: clear it (optimizer.zero_grad() or "
        "x.grad.zero_()) before every backward pass.",
    ),
    Diagnosis(
        "sign-error",
        "Sign error",
        "Your result is the negative of the expected one: check the sign of the expression "
        "you backpropagate from or of your update.",
    ),
    Diagnosis(
        "scaled-by-n",
        "Scaled by a whole number",
        "Your result is off by a whole factor N: check mean versus sum (divide or multiply "
        "by the number of elements).",
    ),
    Diagnosis(
        "unscaled-microbatch-loss",
        "Unscaled micro-batch loss",
        "Divide each micro-batch loss by the number of micro-batches before backward() so "
        "that the accumulated gradient equals the full-batch gradient.",
    ),
    Diagnosis(
        "graph-broken",
        "Gradient never reached this tensor",
        "The tensor is not connected to the graph: create it with requires_grad=True and do "
        "not detach(), .item(), re-wrap it in torch.tensor() or compute under no_grad().",
    ),
    Diagnosis(
        "missing-retain-grad",
        "Gradient of a non-leaf tensor not kept",
        "PyTorch keeps .grad only for leaf tensors: call .retain_grad() on the intermediate "
        "tensor before backward().",
    ),
    Diagnosis(
        "nonscalar-backward",
        "backward() on a non-scalar tensor",
        "backward() without arguments needs a scalar: pass gradient=torch.ones_like(y) (or "
        "the upstream gradient), or reduce to a scalar first.",
    ),
    Diagnosis(
        "freed-graph",
        "Backward through a freed graph",
        "The first backward() frees the graph: pass retain_graph=True to the earlier call if "
        "you need to backpropagate through it again.",
    ),
    Diagnosis(
        "inplace-leaf",
        "In-place change of a leaf that requires grad",
        "Update parameters inside torch.no_grad() (or on .data) instead of changing a leaf "
        "that requires grad in place.",
    ),
    Diagnosis(
        "loss-flat",
        "The loss does not fall",
        "The loss stays flat: check that you call backward() and optimizer.step() every "
        "iteration and that the learning rate is not too small.",
    ),
    Diagnosis(
        "loss-diverges",
        "The loss diverges",
        "The loss grows or becomes NaN: lower the learning rate and check the sign of your "
        "update and that gradients are cleared.",
    ),
    Diagnosis(
        "not-converged",
        "Training stopped too early",
        "The loss falls but does not get low enough: train for more steps or use a larger "
        "learning rate.",
    ),
    Diagnosis(
        "no-backward",
        "backward() was never called",
        "Reading .grad before backward(): gradients exist only after you call backward() "
        "on the result (or torch.autograd.grad).",
    ),
    Diagnosis(
        "hard-coded",
        "Value hard-coded",
        "The expected value is there but autograd did not put it there (no backward() ran, "
        "or .grad was written after the last one): let autograd compute it.",
    ),
    Diagnosis(
        "not-from-autograd",
        "Value right only at the exercise's inputs",
        "The value is right at the exercise's inputs but not when the starting values or the "
        "gradients change (typed in, worked out by hand, or from a stand-in for the loss "
        "built to match at those inputs): compute the real loss from your tensors and take "
        "the value from what autograd computed, for example x.grad.clone().",
    ),
    Diagnosis(
        "wrong-backward-root",
        "backward() from the wrong tensor",
        "Call backward() on the result the exercise asks for (usually the loss), not on an "
        "intermediate result or on a tensor made only to have something to call backward on.",
    ),
    Diagnosis(
        "grad-cleared",
        "Gradient computed, then cleared",
        "backward() did fill .grad, but your code cleared it afterwards (zero_grad(), "
        "grad.zero_() or .grad = None after the last backward()): clear gradients before "
        "backward(), not after it.",
    ),
    Diagnosis(
        "grad-not-stored",
        "Gradient computed but never stored",
        "torch.autograd.grad returns the gradients instead of writing .grad: store its "
        "result (x.grad = grads[0]) or call backward().",
    ),
    Diagnosis(
        "inputs-excluded",
        "Tensor left out of backward(inputs=...)",
        "backward(inputs=[...]) accumulates only into the tensors it lists: list every "
        "tensor whose .grad you need, or leave inputs out.",
    ),
    Diagnosis(
        "backward-skipped",
        "backward() skipped after an error",
        "An earlier call in the same try block raised, so the backward() after it never ran: "
        "put only the call that is expected to fail inside the try block.",
    ),
    Diagnosis(
        "params-edited",
        "Parameters changed outside the optimizer",
        "Let optimizer.step() update the parameters: do not set or change them by hand "
        "(fill_, copy_, assignments under no_grad) between or after the optimizer's steps.",
    ),
    Diagnosis(
        "full-jacobian",
        "The full Jacobian was built",
        "One backward pass with the upstream gradient v gives v^T J directly: pass v as "
        "backward's gradient (or autograd.grad's grad_outputs) instead of building J row by "
        "row.",
    ),
    Diagnosis(
        "missing-name",
        "Name not defined",
        "Define the variable or function the exercise asks for, with exactly that name.",
    ),
    Diagnosis(
        "wrong-type",
        "Wrong kind of value",
        "This name holds another kind of value than expected, such as a float instead of a "
        "tensor: keep the kind of value the exercise asks for.",
    ),
    Diagnosis(
        "shape-mismatch",
        "Wrong shape",
        "The shape differs from the expected one: check broadcasting, reductions and reshapes.",
    ),
    Diagnosis(
        "dtype-mismatch",
        "Wrong dtype",
        "The dtype differs from the expected one: create tensors with the expected dtype "
        "(write 5.0 for a float, not 5).",
    ),
    Diagnosis(
        "device-mismatch",
        "Wrong device",
        "The tensor is on another device than expected: create it on (or move it to) the "
        "device the exercise uses: a `device` variable set to "
        "torch.device('cuda' if torch.cuda.is_available() else 'cpu'), with .to(device).",
    ),
    Diagnosis(
        "not-an-autograd-function",
        "Not a custom autograd Function",
        "Subclass torch.autograd.Function with static forward(ctx, ...) and backward(ctx, "
        "grad_output), and call it through .apply: a plain class or function gets autograd's "
        "own gradient, not yours.",
    ),
    Diagnosis(
        "autograd-in-backward",
        "Autograd used inside backward",
        "backward must compute the derivative itself from what forward saved: no "
        "torch.autograd.grad, no .backward(), no graph built or kept for it.",
    ),
    Diagnosis(
        "used-autograd",
        "Autograd used where the exercise forbids it",
        "Compute the gradients yourself, as the exercise asks (NumPy only): no tensors that "
        "require grad, no backward() or torch.autograd.grad.",
    ),
    Diagnosis(
        "batch-too-large",
        "More samples in one forward pass than allowed",
        "Call the model on micro-batches of at most micro_batch_size samples and let "
        "backward() accumulate their gradients: never on the whole batch at once.",
    ),
    Diagnosis(
        "layers-bypassed",
        "The model's layers were bypassed",
        "Compute the predictions by calling the model itself (model(x_micro)) on every "
        "micro-batch, not its weights by hand.",
    ),
    Diagnosis(
        "backward-per-input",
        "One backward() per variable",
        "A single backward() from the result fills the .grad of every tensor it depends "
        "on: call it once, not once for each variable.",
    ),
    Diagnosis(
        "copied-too-early",
        "Copied before the last backward()",
        "Your value is what .grad held after an earlier backward() call: take the copy "
        "(x.grad.clone()) after the last backward() it must include.",
    ),
    Diagnosis(
        "missing-seed",
        "Random numbers not seeded",
        "The exercise asks you to seed torch: without torch.manual_seed(...) before the model "
        "is created its starting weights are random and your loss curve cannot match the "
        "reference's, so keep the seed line the statement gives.",
    ),
    Diagnosis(
        "crashed",
        "Your code raised an error",
        "Your code stopped with an exception: read the error message and the line it names.",
    ),
    Diagnosis(
        "wrong-value",
        "Wrong value",
        "The value differs from the expected one: compare your computation with the "
        "statement step by step.",
    ),
)

# -- error messages ------------------------------------------------------------------

# Recorded autograd errors of the course, recognised by their message.
ERROR_SIGNATURES: tuple[tuple[str, str], ...] = (
    ("grad can be implicitly created only for scalar outputs", "nonscalar-backward"),
    ("trying to backward through the graph a second time", "freed-graph"),
    ("a leaf variable that requires grad is being used in an in-place operation", "inplace-leaf"),
    ("does not require grad and does not have a grad_fn", "graph-broken"),
    ("expected all tensors to be on the same device", "device-mismatch"),
)


def error_slug(message: str) -> str | None:
    """The diagnosis named by an autograd error message, if it is one of the course's."""
    lowered = message.lower()
    for fragment, slug in ERROR_SIGNATURES:
        if fragment in lowered:
            return slug
    return None


def _hit(text: str, trial: Trial, *, reference: bool) -> bool:
    """Did the run hit an error (a recorded backward error or its uncaught exception)
    whose message contains `text`?"""
    calls = trial.reference_calls if reference else trial.learner_calls
    exception = trial.reference_exception if reference else trial.learner_exception
    messages = [c.error.message for c in calls if c.error is not None]
    if exception is not None:
        messages.append(exception.message)
    wanted = normalise(text)
    return bool(wanted) and any(wanted in normalise(m) for m in messages)


def typed_error_message(text: str, trial: Trial) -> bool:
    """A message check holds the expected text of an error the reference's run hit, but
    the learner's run never hit one with that text: typed in, not caught (hard-coded).
    When a backward call of the reference raised it on the exercise's tensors, the
    learner's must come from a backward call whose graph reaches them too (a throw-away
    tensor's error next to a typed-in message does not count)."""
    if not _hit(text, trial, reference=True):
        return False
    if not _hit(text, trial, reference=False):
        return True
    wanted = _error_graph(text, trial.reference_calls)
    if not wanted:
        return False
    found = [c for c in trial.learner_calls if _raised(c, text)]
    return not any(c.graph is None or wanted & set(c.graph) for c in found)


def _raised(call: BackwardCall, text: str) -> bool:
    wanted = normalise(text)
    return call.error is not None and bool(wanted) and wanted in normalise(call.error.message)


def _error_graph(text: str, calls: Sequence[BackwardCall]) -> set[str]:
    """The tracked names the graphs of the reference's calls that raised `text` reach
    (empty: none of them is known to reach a tracked tensor)."""
    names: set[str] = set()
    for call in calls:
        if _raised(call, text):
            if call.graph is None:
                return set()
            names |= set(call.graph) | set(call.roots)
    return names


def message_slug(got: str, want: str) -> str:
    """A message check holds another text: a course error other than the expected one
    names itself; anything else is a wrong value."""
    slug = error_slug(got)
    if slug is None or slug == error_slug(want):
        return "wrong-value"
    return slug


# -- differences between values ------------------------------------------------------

SLUG_OF_MISMATCH: Mapping[Mismatch, str] = MappingProxyType(
    {
        Mismatch.SHAPE: "shape-mismatch",
        Mismatch.DTYPE: "dtype-mismatch",
        Mismatch.DEVICE: "device-mismatch",
        Mismatch.KIND: "wrong-type",
        Mismatch.MISSING: "missing-name",
        Mismatch.LENGTH: "wrong-value",
    }
)


def difference_slug(difference: Difference, *, accumulated: bool) -> str:
    """The mistake a difference shows. Differing numbers are named by their ratio
    (`ratio_slug`); a meta tensor is on the wrong device; data that is not all there
    matches nothing (the report flags it) and is a wrong value."""
    if difference.mismatch is Mismatch.VALUES:
        rtol, atol = difference.tolerance
        found = ratio_slug(difference.got, difference.want, rtol, atol, accumulated=accumulated)
        return found or "wrong-value"
    if difference.mismatch is Mismatch.NO_DATA:
        return "device-mismatch" if difference.meta else "wrong-value"
    return SLUG_OF_MISMATCH[difference.mismatch]


def common_ratio(
    got: Sequence[float], want: Sequence[float], rtol: float, atol: float
) -> float | None:
    """The finite factor r with got == r * want elementwise (within tolerance), or None."""
    if len(got) != len(want) or not want:
        return None
    pivot = max(range(len(want)), key=lambda i: abs(want[i]) if math.isfinite(want[i]) else 0)
    if not math.isfinite(want[pivot]) or abs(want[pivot]) <= atol or not math.isfinite(got[pivot]):
        return None
    ratio = got[pivot] / want[pivot]
    if not math.isfinite(ratio):
        return None
    scaled = [ratio * w for w in want]
    if all_close(got, scaled, rtol * 10, atol * 10):
        return ratio
    return None


def whole(value: float) -> int | None:
    """`value` as an integer when it is one (within INTEGER_TOLERANCE); None for NaN and
    the infinities."""
    if not math.isfinite(value):
        return None
    rounded = round(value)
    if abs(value - rounded) <= INTEGER_TOLERANCE * max(1.0, abs(value)):
        return int(rounded)
    return None


def ratio_slug(
    got: Sequence[float],
    want: Sequence[float],
    rtol: float,
    atol: float,
    *,
    accumulated: bool,
) -> str | None:
    """sign-error / forgot-zero-grad / scaled-by-n from a common factor between values.

    An integer factor k >= 2 is an accumulation when the learner's run shows one
    (`accumulated`: more backward calls than the reference, or grads not fresh before a
    call); otherwise it is a mean/sum scaling.
    """
    ratio = common_ratio(got, want, rtol, atol)
    if ratio is None:
        return None
    factor = whole(ratio)
    if factor == -1:
        return "sign-error"
    if factor is not None and 2 <= factor <= MAX_SCALE:
        return "forgot-zero-grad" if accumulated else "scaled-by-n"
    if ratio != 0:
        inverse = whole(1 / ratio)
        if inverse is not None and 2 <= inverse <= MAX_SCALE:
            return "scaled-by-n"
    return None


# -- loss curves ---------------------------------------------------------------------


def curve_slug(losses: Sequence[float]) -> str | None:
    """loss-diverges (NaN/Inf or growing) or loss-flat (not falling), else None."""
    if not losses:
        return "loss-flat"
    if any(not math.isfinite(v) for v in losses):
        return "loss-diverges"
    first, last = losses[0], losses[-1]
    if last > first * (1 + FLAT_RELATIVE_DROP) + 1e-12:
        return "loss-diverges"
    if len(losses) < 2 or last >= first - abs(first) * FLAT_RELATIVE_DROP:
        return "loss-flat"
    return None


def unconverged_slug(losses: Sequence[float]) -> str:
    """Why a curve that ends too high did: loss-diverges (NaN/Inf or growing),
    loss-flat (barely falls), else not-converged (falls, but not far enough)."""
    shape = curve_slug(losses)
    if shape == "loss-diverges" or not losses:
        return shape or "loss-flat"
    first, last = losses[0], losses[-1]
    if shape == "loss-flat" or last >= BARELY_FALLING * first:
        return "loss-flat"
    return "not-converged"


def pointwise_curve_slug(losses: Sequence[float], trial: Trial) -> str:
    """Pointwise mode: the reference's step count is the learner's too, so more backward
    calls than the reference's are evidence of an accumulation."""
    shape = curve_slug(losses)
    if shape == "loss-diverges":
        return shape
    if accumulated(trial):
        return "forgot-zero-grad"
    return shape or "wrong-value"


def properties_curve_slug(losses: Sequence[float], trial: Trial, *, falls: bool) -> str:
    """Properties mode: the step count is the learner's choice, so only stale grads
    before the learner's backward calls (where the reference's were fresh) show an
    accumulation; otherwise the curve's shape names the mistake."""
    shape = curve_slug(losses)
    if shape == "loss-diverges":
        return shape
    if stale(trial.ok_learner_calls) and not stale(trial.ok_reference_calls):
        return "forgot-zero-grad"
    if falls:
        return shape or "loss-flat"
    return unconverged_slug(losses)


def steps_slug(optimizer_steps: int) -> str:
    """Backward calls and optimizer steps disagree: no step at all leaves the parameters
    where they are (the loss stays flat)."""
    return "loss-flat" if optimizer_steps == 0 else "wrong-value"


# -- the run: backward calls, grads, errors ------------------------------------------

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
    for name, last in mine[-1].grads_after.items():
        if not isinstance(last, TensorValue) or _close(got, last, tolerance):
            continue
        for call in mine[:-1]:
            earlier = call.grads_after.get(name)
            if isinstance(earlier, TensorValue) and _close(got, earlier, tolerance):
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
    losses = [c.loss for c in trial.ok_reference_calls if c.loss is not None]
    for call in trial.ok_learner_calls:
        if not (call.reaches(name) and (call.accumulates or name in call.results)):
            continue
        assert call.graph is not None  # reaches() is True only with a known graph
        if roots & set(call.graph) or call.loss is None:
            continue
        if not any(_close_loss(call.loss, want) for want in losses):
            return True
    return False


def _close_loss(got: float, want: float) -> bool:
    return all_close([got], [want], 1.3e-6, 1e-5)


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


# -- provenance: did autograd put the final values there? ----------------------------


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


def _explains(
    grad: TensorValue | None,
    key: str,
    left: dict[str, TensorValue | None] | None,
    results: Sequence[dict[str, TensorValue | None]],
) -> bool:
    """`grad` is None or cleared, what autograd `left` there, or an autograd.grad result
    (or data-less, on the meta device: there is nothing to judge)."""
    if grad is None or is_cleared(grad) or not grad.complete:
        return True
    if left is not None and key in left and _same(grad, left[key]):
        return True
    return any(key in r and _same(grad, r[key]) for r in results)


def _chain_explained(name: str, calls: Sequence[BackwardCall]) -> bool:
    """Before each accumulating call whose grads are recorded, `name`'s grads were None,
    cleared, what the previous accumulating call left, or an autograd.grad result: a grad
    written by hand and then topped up by a throw-away backward is not."""
    left: dict[str, TensorValue | None] | None = None
    results: list[dict[str, TensorValue | None]] = []
    for call in calls:
        if name in call.results:
            results.append(_grads_of(call.results[name]))
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
    results = [_grads_of(c.results[name]) for c in calls if name in c.results]
    if provenance is not None and name in provenance.grad_results:
        results.append(_grads_of(provenance.grad_results[name]))
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
    filled = name in trial.learner_filled or _was_filled(
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


def _was_filled(
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


def describe(slug: str, extra: Mapping[str, Diagnosis] | None = None) -> Diagnosis:
    """The registry entry for `slug` (exercise-specific ones in `extra` first)."""
    if extra and slug in extra:
        return extra[slug]
    return DIAGNOSES.get(slug, DIAGNOSES["wrong-value"])
