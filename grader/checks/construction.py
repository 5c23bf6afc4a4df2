"""Skill checks held by construction (issue 29; FORMAT.md section 4): what the harness
made the learner's code do itself, on hidden inputs (grader/harness/construct.py).

- `backward_probe` (zone 1): the harness called the Function's backward on hidden upstream
  gradients with autograd off; each answer must equal the reference's to float64
  precision (`exact`, relative to the case's scale), tighter than any finite difference.
- `exact_values` (zone 1): the named observations equal the reference's to float64
  precision (a backward pass by hand is exact; finite differences are not).
- `grad_per_batch` (zone 1): the harness handed the micro-batches out one at a time and
  copied the parameters' `.grad` before each one; each copy but the first (what the loop
  started from) must equal the reference's partial sum: the gradient accumulated over the
  micro-batches so far.
- `derivative_claim` and `backward_pass_claim` (zone 3, claims, small points): what a
  watch in the learner's interpreter saw while the harness called the code: built-in
  derivative operators, complex numbers, dual numbers.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace

from grader.capture import (
    Capture,
    DictValue,
    ListValue,
    NdarrayValue,
    ScalarValue,
    TensorValue,
    Value,
)
from grader.checks.base import CheckSpec, Outcome, each_trial, failed, passed
from grader.checks.compare import Tolerance, compare_values, dtype_accepted
from grader.checks.formatting import Missing
from grader.checks.options import (
    CheckOptions,
    OptionContext,
    _Invalid,
    option,
    options_of,
    tolerance,
)
from grader.checks.runs import GradHistoryOptions
from grader.checks.trials import Trial

WATCH_KEY = "@watch"
EXACT = 5e-14  # float64: an honest formula is within 1e-15 of the reference (FORMAT.md §4)
LOOSE = 1e-3  # within this but not `exact`: a numerical derivative
FLOAT32 = (1.3e-6, 1e-5)  # torch.testing's float32 rtol, atol
Array = TensorValue | NdarrayValue


def observation_keys(value: object, context: OptionContext) -> tuple[str, ...]:
    if not isinstance(value, list) or not value or any(not isinstance(v, str) for v in value):
        raise _Invalid("must be a non-empty list of observation keys")
    return tuple(str(v) for v in value)


@dataclass(frozen=True)
class ExactOptions(CheckOptions):
    """`exact`: the largest difference allowed, relative to max(1, max |reference|);
    `loose`: a difference below it (but above `exact`) is a numerical derivative."""

    exact: float = option(EXACT, tolerance)
    loose: float = option(LOOSE, tolerance)


@dataclass(frozen=True)
class ExactValuesOptions(ExactOptions):
    keys: tuple[str, ...] = option((), observation_keys)  # none: every array observed


def _item(value: Value | Missing | None, key: str) -> Value | None:
    return value.items.get(key) if isinstance(value, DictValue) else None


def _flag(value: Value | None) -> bool:
    return isinstance(value, ScalarValue) and value.value is True


def _text(value: Value | None) -> str:
    return str(value.value) if isinstance(value, ScalarValue) and value.value else ""


def _scale(want: Array) -> float:
    return max([1.0, *(abs(v) for v in want.floats())])


def inexactness(got: Value | None, want: Value | None, options: ExactOptions) -> str:
    """ "" when `got` equals `want` to float64 precision (float32: torch.testing's defaults),
    "numerical" when it is close but not exact, else "wrong"."""
    if not isinstance(want, TensorValue | NdarrayValue):
        return ""
    if not _comparable(got, want):
        return "wrong"
    assert isinstance(got, TensorValue | NdarrayValue)
    pairs = list(zip(got.floats(), want.floats(), strict=True))
    worst = max((abs(a - b) for a, b in pairs), default=0.0)
    if worst != worst:  # NaN
        return "wrong"
    scale = _scale(want)
    if want.dtype.endswith("float32"):
        rtol, atol = FLOAT32
        if all(abs(a - b) <= atol + rtol * abs(b) for a, b in pairs):
            return ""
    elif worst <= options.exact * scale:
        return ""
    return "numerical" if worst <= options.loose * scale else "wrong"


def _comparable(got: Value | None, want: Array) -> bool:
    """Complete data of an accepted dtype and the same shape (one element: any shape)."""
    if not isinstance(got, TensorValue | NdarrayValue) or not got.complete:
        return False
    if not want.complete or not dtype_accepted(got.dtype, want.dtype):
        return False
    if got.numel != want.numel or len(got.data) != len(want.data):
        return False
    return got.numel == 1 or got.shape == want.shape


# -- backward_probe (zone 1) -----------------------------------------------------------


def _probes(value: Value | Missing | None) -> tuple[Value, ...]:
    grads = _item(value, "grads")
    return grads.items if isinstance(grads, ListValue) else ()


def check_backward_probe(learner: Capture, reference: Capture, spec: CheckSpec) -> Outcome:
    """The harness's own calls of the Function's backward, on hidden upstream gradients
    with autograd off, gave the reference's gradients to float64 precision."""
    target = spec.target or ""
    options = options_of_exact(spec.options)

    def one(trial: Trial) -> Outcome:
        got, want = trial.got(target), trial.want(target)
        if not isinstance(got, DictValue):
            return _not_probed(trial)
        if not _flag(_item(got, "own_node")):
            return failed(
                "the grader could not call your backward: the result was not made by your "
                "Function's own backward node (subclass torch.autograd.Function, call .apply)",
                "not-an-autograd-function",
            )
        error = _text(_item(got, "error"))
        if error:
            return failed(
                f"your backward raised {error} when the grader called it itself, with autograd "
                "off (torch.no_grad and inference mode): compute the derivative from the saved "
                "tensors with ordinary tensor operations",
                "autograd-in-backward",
            )
        mine, theirs = _probes(got), _probes(want)
        if len(mine) != len(theirs):
            return failed("your backward did not answer every call of the grader's")
        if not all(isinstance(m, TensorValue) for m in mine):
            return failed(
                "your backward returned no tensor when the grader called it itself, with "
                "autograd off: compute the derivative from the saved tensors",
                "builtin-derivative" if _derivatives(got) else "wrong-value",
            )
        verdicts = [inexactness(m, t, options) for m, t in zip(mine, theirs, strict=True)]
        if "wrong" in verdicts:
            return failed("your backward, called by the grader on hidden grad_outputs, gave "
                          "another gradient than grad_output * f'(x)")  # fmt: skip
        if "numerical" in verdicts:
            return failed(
                "your backward's gradient is close to grad_output * f'(x) but not exact: "
                "an approximation (finite differences), not the derivative",
                "numerical-derivative",
            )
        return passed("your backward, called by the grader on hidden grad_outputs, is exact")

    return each_trial(learner, reference, one, "backward exact on hidden grad_outputs", options)


def _not_probed(trial: Trial) -> Outcome:
    if trial.learner_exception is not None:
        return failed("your code raised before the grader could watch it", "crashed")
    return failed("the grader could not watch your code on this case")


def options_of_exact(options: CheckOptions) -> ExactOptions:
    if not isinstance(options, ExactOptions):
        raise TypeError(f"expected ExactOptions, got {type(options).__name__}")
    return options


# -- exact_values (zone 1) -------------------------------------------------------------


def check_exact_values(learner: Capture, reference: Capture, spec: CheckSpec) -> Outcome:
    """Each named observation equals the reference's to float64 precision; close but
    inexact is a numerical derivative (the plain value checks name other mistakes)."""
    options = options_of_exact(spec.options)
    chosen = options.keys if isinstance(options, ExactValuesOptions) else ()

    def one(trial: Trial) -> Outcome:
        keys = chosen or _arrays(trial.reference)
        verdicts = {
            key: inexactness(_value(trial.got(key)), _value(trial.want(key)), options)
            for key in keys
        }
        wrong = [key for key, verdict in verdicts.items() if verdict == "wrong"]
        if wrong:
            return failed(f"{', '.join(wrong)}: not the expected gradient")
        inexact = [key for key, verdict in verdicts.items() if verdict == "numerical"]
        if inexact:
            return failed(
                f"{', '.join(inexact)}: close to the gradient but not exact to float64 "
                "precision: an approximation (finite differences), not a backward pass",
                "numerical-derivative",
            )
        return passed("every gradient exact to float64 precision")

    return each_trial(learner, reference, one, "gradients exact to float64 precision", options)


def _arrays(observed: Mapping[str, Value]) -> tuple[str, ...]:
    """The observation keys of the reference's tensors and arrays (not variants or watch)."""
    return tuple(
        key
        for key, value in observed.items()
        if isinstance(value, TensorValue | NdarrayValue) and not key.startswith(("_", "@"))
    )


def _value(value: Value | Missing) -> Value | None:
    return None if isinstance(value, Missing) else value


# -- grad_per_batch (zone 1) ----------------------------------------------------------

NOTHING_ADDED = (
    "your code asked for the next micro-batch before this one's gradient was in .grad: "
    "call backward() on each micro-batch's weighted loss before you take the next one"
)


def check_grad_per_batch(learner: Capture, reference: Capture, spec: CheckSpec) -> Outcome:
    """Before each micro-batch but the first, the grads the harness copied (construct.py,
    `micro_batches`) equal the reference's partial sums; `variants` name known mistakes
    (lists: the copies that mistake leaves before each micro-batch but the first)."""
    target = spec.target or ""
    options = options_of(spec.options, GradHistoryOptions)
    tol = Tolerance(options.rtol, options.atol)

    def one(trial: Trial) -> Outcome:
        got, want = trial.got(target), trial.want(target)
        if not isinstance(want, ListValue) or len(want.items) < 2:
            return passed("a single micro-batch")
        if not isinstance(got, ListValue) or not got.items:
            return _not_probed(trial)
        start, mine, theirs = got.items[0], got.items[1:], want.items[1:]
        found = _first_difference(mine, theirs, tol)
        if found is None:
            return passed("the gradient accumulated micro-batch by micro-batch")
        for slug, key in options.variants:
            if _same_records(mine, trial.want(key), tol):
                return failed(found, slug)
        if _nothing_added(start, mine):
            return failed(f"{found}: {NOTHING_ADDED}", "single-backward")
        return failed(found)

    summary = "the gradient accumulated micro-batch by micro-batch"
    return each_trial(learner, reference, one, summary, options)


def _first_difference(
    mine: tuple[Value, ...], theirs: tuple[Value, ...], tol: Tolerance
) -> str | None:
    """Where the learner's copies first differ from the reference's, or None."""
    total = len(theirs) + 1
    for index, want in enumerate(theirs):
        if index >= len(mine):
            return (
                f"your code took {len(mine) + 1} of the {total} micro-batches: use every "
                "one the iterable gives"
            )
        if compare_values(mine[index], want, tol) is not None:
            return (
                f"when your code asked for micro-batch {index + 2} of {total}, .grad did not "
                f"hold the gradient accumulated over the first {index + 1}"
            )
    return None


def _same_records(mine: tuple[Value, ...], variant: Value | Missing, tol: Tolerance) -> bool:
    if not isinstance(variant, ListValue) or len(variant.items) != len(mine):
        return False
    pairs = zip(mine, variant.items, strict=True)
    return all(compare_values(got, want, tol) is None for got, want in pairs)


def _nothing_added(start: Value, mine: tuple[Value, ...]) -> bool:
    """No gradient arrived while the loop held a micro-batch: every later copy equals the
    one taken before the first micro-batch, or is zero."""
    exact = Tolerance(0.0, 0.0)
    return bool(mine) and all(
        isinstance(item, TensorValue)
        and (compare_values(item, start, exact) is None or not any(item.floats()))
        for item in mine
    )


# -- claims (zone 3) -------------------------------------------------------------------

WATCHED = (
    "rests on a watch inside your process (the grader's own observation there, which code "
    "that works around it could avoid): a claim, worth few points"
)
Check = Callable[[Capture, Capture, CheckSpec], Outcome]


def as_claim(check: Check) -> Check:
    """`check` with `data["claim"]` on its outcome (FORMAT.md section 7): its points rest on
    what a watch in the learner's interpreter saw."""

    def claimed(learner: Capture, reference: Capture, spec: CheckSpec) -> Outcome:
        outcome = check(learner, reference, spec)
        return replace(outcome, data={**outcome.data, "claim": WATCHED})

    return claimed


def _derivatives(probes: Value) -> list[str]:
    """The built-in derivative operators the watch saw during the harness's calls."""
    used = _item(probes, "derivatives")
    items = used.items if isinstance(used, ListValue) else ()
    return [str(item.value) for item in items if isinstance(item, ScalarValue)]


def check_derivative_claim(learner: Capture, reference: Capture, spec: CheckSpec) -> Outcome:
    """A claim: while the harness called the backward, a watch in the learner's
    interpreter saw no built-in derivative operator and no complex tensor."""
    target = spec.target or ""
    options = spec.options

    def one(trial: Trial) -> Outcome:
        got = trial.got(target)
        if not isinstance(got, DictValue):
            return _not_probed(trial)
        if not _flag(_item(got, "intact")):
            return failed("the grader's watch on your backward was removed", "builtin-derivative")
        names = _derivatives(got)
        if names:
            return failed(
                f"your backward called PyTorch's own derivative ({', '.join(names[:3])}): "
                "write f'(x) yourself",
                "builtin-derivative",
            )
        if _flag(_item(got, "complex")):
            return failed(
                "your backward computed with complex numbers (complex-step differentiation): "
                "write f'(x) yourself",
                "numerical-derivative",
            )
        return passed("no built-in derivative seen in your backward (a claim)")

    return each_trial(learner, reference, one, "no built-in derivative seen (a claim)", options)


def check_backward_pass_claim(learner: Capture, reference: Capture, spec: CheckSpec) -> Outcome:
    """A claim: while the harness called a NumPy-only entry, its input arrays saw no complex
    or object (dual-number) arithmetic: the gradients came from a backward pass."""
    options = spec.options

    def one(trial: Trial) -> Outcome:
        watch = trial.got(WATCH_KEY)
        notes = _item(watch, "numpy")
        if not isinstance(notes, DictValue):
            return _not_probed(trial)
        if _flag(_item(notes, "complex")) or _flag(_item(notes, "object")):
            kind = "complex" if _flag(_item(notes, "complex")) else "object (dual-number)"
            return failed(
                f"your code computed with {kind} arrays: differentiation by perturbing the "
                "forward pass, not a backward pass",
                "no-backward-pass",
            )
        return passed("no complex or dual-number arithmetic seen (a claim)")

    return each_trial(learner, reference, one, "a backward pass (a claim)", options)
