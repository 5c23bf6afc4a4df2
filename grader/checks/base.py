"""What every check shares: the outcome, trials (one per script run or function case),
dtype-aware tolerances, value comparison and the run-level diagnosis context."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from grader import diagnose
from grader.capture import (
    BackwardCall,
    Capture,
    DictValue,
    ErrorInfo,
    ExceptionValue,
    ListValue,
    ModuleValue,
    NdarrayValue,
    ObjectValue,
    ScalarValue,
    TensorValue,
    Value,
)
from grader.spec import CheckSpec

# torch.testing's defaults per dtype: (rtol, atol).
TOLERANCES: Mapping[str, tuple[float, float]] = {
    "float64": (1e-7, 1e-7),
    "complex128": (1e-7, 1e-7),
    "float32": (1.3e-6, 1e-5),
    "complex64": (1.3e-6, 1e-5),
    "float16": (1e-3, 1e-5),
    "bfloat16": (1.6e-2, 1e-5),
}
NUMBER_TOLERANCE = (1.3e-6, 1e-5)  # Python floats are usually float32 results (.item())
EXACT = (0.0, 0.0)
SHOWN_ELEMENTS = 8
# Diagnoses that only say "something is missing or off": an uncaught exception that the
# reference did not raise is the better explanation for them.
GENERIC = frozenset(
    {"wrong-value", "missing-name", "graph-broken", "missing-retain-grad", "loss-flat"}
)


@dataclass(frozen=True)
class Outcome:
    passed: bool
    message: str
    diagnosis: str = ""
    data: Mapping[str, Any] = field(default_factory=dict)


def passed(message: str, **data: Any) -> Outcome:
    return Outcome(True, message, "", data)


def failed(message: str, diagnosis: str = "wrong-value", **data: Any) -> Outcome:
    return Outcome(False, message, diagnosis, data)


class Missing:
    """A name that does not exist (distinct from a name holding None)."""

    kind = "missing"

    def __repr__(self) -> str:
        return "<missing>"


MISSING = Missing()


@dataclass(frozen=True)
class Trial:
    """One comparison unit: the script run, or one case of a function exercise."""

    index: int
    count: int
    visible: bool
    function: bool
    learner: Mapping[str, Value]
    reference: Mapping[str, Value]
    learner_calls: tuple[BackwardCall, ...]
    reference_calls: tuple[BackwardCall, ...]
    learner_exception: ErrorInfo | None
    reference_exception: ErrorInfo | None
    learner_stdout: str
    reference_stdout: str

    def got(self, key: str) -> Value | Missing:
        return self.learner.get(key, MISSING)

    def want(self, key: str) -> Value | Missing:
        return self.reference.get(key, MISSING)

    @property
    def label(self) -> str:
        if not self.function:
            return ""
        if self.visible:
            return f"on the example input (case {self.index + 1} of {self.count}): "
        return f"on a hidden input (case {self.index + 1} of {self.count}): "

    @property
    def ok_learner_calls(self) -> tuple[BackwardCall, ...]:
        return tuple(c for c in self.learner_calls if c.ok)

    @property
    def ok_reference_calls(self) -> tuple[BackwardCall, ...]:
        return tuple(c for c in self.reference_calls if c.ok)


def trials(learner: Capture, reference: Capture) -> Iterator[Trial]:
    """Script: one trial. Function: one per reference case (the reference's visibility)."""
    if reference.kind == "script":
        yield Trial(
            index=0,
            count=1,
            visible=True,
            function=False,
            learner=learner.variables,
            reference=reference.variables,
            learner_calls=learner.backward_calls,
            reference_calls=reference.backward_calls,
            learner_exception=learner.exception,
            reference_exception=reference.exception,
            learner_stdout=learner.stdout,
            reference_stdout=reference.stdout,
        )
        return
    count = len(reference.cases)
    for index, want in enumerate(reference.cases):
        got = learner.cases[index] if index < len(learner.cases) else None
        exception = got.exception if got else learner.exception or _NO_RESULT
        yield Trial(
            index=index,
            count=count,
            visible=want.visible,
            function=True,
            learner=got.observations if got else {},
            reference=want.observations,
            learner_calls=got.backward_calls if got else (),
            reference_calls=want.backward_calls,
            learner_exception=exception,
            reference_exception=want.exception,
            learner_stdout=got.stdout if got else "",
            reference_stdout=want.stdout,
        )


_NO_RESULT = ErrorInfo("RuntimeError", "your code produced no result for this input")


def each_trial(
    learner: Capture,
    reference: Capture,
    check: Callable[[Trial], Outcome],
    success: str,
) -> Outcome:
    """Runs `check` on every trial; the first failure (with the trial's label) wins."""
    undefined = [name for name, ok in learner.defined.items() if not ok]
    if reference.kind == "function" and undefined and learner.exception is None:
        return failed(f"{undefined[0]} is not defined", "missing-name")
    count = 0
    for trial in trials(learner, reference):
        outcome = check(trial)
        count += 1
        if not outcome.passed:
            diagnosis = context_diagnosis(trial, outcome.diagnosis)
            message = outcome.message
            error = trial.learner_exception
            if diagnosis != outcome.diagnosis and error is not None:
                where = f" at line {error.line}" if error.line else ""
                message += f" (your code stopped{where} with {error.type}: {error.message})"
            if trial.visible:
                return Outcome(False, trial.label + message, diagnosis, outcome.data)
            # Values of hidden inputs are never shown: only what kind of mistake it is.
            title = diagnose.describe(diagnosis).title.lower()
            message = f"{trial.label}the result is not the expected one ({title})"
            return Outcome(False, message, diagnosis, {"case": trial.index})
    if reference.kind == "function" and count > 1:
        success = f"{success} (all {count} cases)"
    return passed(success)


# -- diagnosis context ---------------------------------------------------------------


def _error_slugs(calls: Sequence[BackwardCall], exception: ErrorInfo | None) -> Counter[str]:
    found: Counter[str] = Counter()
    messages = [c.error.message for c in calls if c.error is not None]
    for message in messages:
        slug = diagnose.error_slug(message)
        if slug:
            found[slug] += 1
    if exception is not None and exception.message not in messages:
        slug = diagnose.error_slug(exception.message)
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


def crashed(trial: Trial) -> bool:
    mine, theirs = trial.learner_exception, trial.reference_exception
    return mine is not None and (theirs is None or theirs.type != mine.type)


def context_diagnosis(trial: Trial, found: str) -> str:
    """The real mistake: a course error the learner hit (more often than the reference,
    or uncaught), then a crash over a generic finding, then the check's own finding."""
    error = course_error(trial)
    if error:
        return error
    if crashed(trial):
        assert trial.learner_exception is not None
        error = diagnose.error_slug(trial.learner_exception.message)
        if error:
            return error
        if found in GENERIC:
            return "crashed"
    theirs_stale = _stale(trial.ok_reference_calls)
    if found == "scaled-by-n" and theirs_stale and not _stale(trial.ok_learner_calls):
        return "wrong-value"  # a missing accumulation, not a mean/sum mix-up
    return found or "wrong-value"


def _stale(calls: Sequence[BackwardCall]) -> bool:
    return any(stale_names(call) for call in calls)


def accumulated(trial: Trial, names: Sequence[str] | None = None) -> bool:
    """Did the learner's run accumulate gradients (more calls, or stale grads)?"""
    if len(trial.ok_learner_calls) > len(trial.ok_reference_calls):
        return True
    return any(stale_names(call, names) for call in trial.ok_learner_calls)


def stale_names(call: BackwardCall, names: Sequence[str] | None = None) -> list[str]:
    """Tracked names whose grad was neither None nor zero before this call."""
    stale = []
    for name, grad in call.grads_before.items():
        if names is not None and name not in names:
            continue
        if grad is not None and any(v != 0 for v in flat_numbers(grad)):
            stale.append(name)
    return stale


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


# -- formatting ----------------------------------------------------------------------


def fmt_number(value: float | int | bool) -> str:
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            return str(value)
        text = f"{value:.6g}"
        return text if any(c in text for c in ".e") else f"{text}.0"
    return str(value)


def show(value: Value | Missing | None) -> str:
    if value is None:
        return "None"
    if isinstance(value, Missing):
        return "not defined"
    if isinstance(value, TensorValue | NdarrayValue):
        items = ", ".join(fmt_number(v) for v in value.data[:SHOWN_ELEMENTS])
        more = ", ..." if len(value.data) > SHOWN_ELEMENTS else ""
        name = "tensor" if isinstance(value, TensorValue) else "array"
        body = f"[{items}{more}]" if value.shape else items
        return f"{name}({body}, dtype={value.dtype})"
    if isinstance(value, ScalarValue):
        return "None" if value.kind == "none" else repr(value.value)
    if isinstance(value, ExceptionValue):
        return f"{value.type}: {value.message}"
    if isinstance(value, ModuleValue):
        return f"{value.type} module"
    if isinstance(value, ObjectValue):
        return f"a {value.type} object"
    if isinstance(value, ListValue):
        return "[" + ", ".join(show(v) for v in value.items[:SHOWN_ELEMENTS]) + "]"
    if isinstance(value, DictValue):
        return "{" + ", ".join(f"{k!r}: {show(v)}" for k, v in list(value.items.items())[:8]) + "}"
    return type(value).__name__


def kind_name(value: Value | Missing | None) -> str:
    if value is None:
        return "None"
    if isinstance(value, ScalarValue):
        return {"number": "a number", "bool": "a bool", "str": "a string", "none": "None"}[
            value.kind
        ]
    return {
        "tensor": "a tensor",
        "ndarray": "a NumPy array",
        "list": "a list",
        "dict": "a dict",
        "module": "an nn.Module",
        "exception": "an exception",
        "object": "an object",
        "missing": "not defined",
    }.get(value.kind, value.kind)


# -- comparison ----------------------------------------------------------------------


@dataclass(frozen=True)
class Tolerance:
    rtol: float | None = None
    atol: float | None = None
    device_any: bool = False

    @classmethod
    def of(cls, spec: CheckSpec) -> Tolerance:
        return cls(spec.option("rtol"), spec.option("atol"), spec.option("device") == "any")

    def for_dtype(self, dtype: str | None) -> tuple[float, float]:
        default = NUMBER_TOLERANCE if dtype is None else TOLERANCES.get(dtype, EXACT)
        return (
            default[0] if self.rtol is None else self.rtol,
            default[1] if self.atol is None else self.atol,
        )


@dataclass(frozen=True)
class Difference:
    """Why two values differ: a diagnosis slug and a learner-facing message."""

    slug: str
    message: str


def compare_numbers(
    got: Sequence[float],
    want: Sequence[float],
    tol: tuple[float, float],
    *,
    accumulated: bool,
) -> Difference | None:
    rtol, atol = tol
    if diagnose.all_close(got, want, rtol, atol):
        return None
    slug = diagnose.ratio_slug(got, want, rtol, atol, accumulated=accumulated)
    return Difference(slug or "wrong-value", "")


def compare_tensors(
    got: TensorValue, want: TensorValue, tolerance: Tolerance, *, accumulated: bool
) -> Difference | None:
    if got.shape != want.shape:
        return Difference("shape-mismatch", f"shape {list(got.shape)}, expected {list(want.shape)}")
    if got.dtype != want.dtype:
        return Difference("dtype-mismatch", f"dtype {got.dtype}, expected {want.dtype}")
    if not tolerance.device_any and got.device_type != want.device_type:
        return Difference("device-mismatch", f"device {got.device}, expected {want.device}")
    size = min(len(got.data), len(want.data))
    found = compare_numbers(
        got.floats()[:size],
        want.floats()[:size],
        tolerance.for_dtype(want.dtype),
        accumulated=accumulated,
    )
    if found is None:
        return None
    return Difference(found.slug, f"got {show(got)}, expected {show(want)}")


def compare_values(
    got: Value | Missing | None,
    want: Value | Missing | None,
    tolerance: Tolerance,
    *,
    accumulated: bool = False,
) -> Difference | None:
    """Recursive equality within tolerance; None when equal."""
    if isinstance(want, Missing):
        return None  # nothing to compare with (the engine rejects such references)
    if want is None:
        return None if got is None else _other(got, want)
    if isinstance(got, Missing):
        return Difference("missing-name", "not defined")
    if isinstance(want, TensorValue):
        if not isinstance(got, TensorValue):
            return _wrong_type(got, want)
        return compare_tensors(got, want, tolerance, accumulated=accumulated)
    if isinstance(want, NdarrayValue):
        return _compare_arrays(got, want, tolerance, accumulated)
    if isinstance(want, ScalarValue):
        return _compare_scalars(got, want, tolerance, accumulated)
    if isinstance(want, ListValue):
        return _compare_lists(got, want, tolerance, accumulated)
    if isinstance(want, DictValue):
        return _compare_dicts(got, want, tolerance, accumulated)
    if isinstance(want, ModuleValue):
        return _compare_modules(got, want, tolerance, accumulated)
    if isinstance(want, ExceptionValue):
        if not isinstance(got, ExceptionValue):
            return _wrong_type(got, want)
        if got.type != want.type or normalise(want.message) not in normalise(got.message):
            return Difference("wrong-value", f"got {show(got)}, expected {show(want)}")
        return None
    if isinstance(want, ObjectValue) and (
        not isinstance(got, ObjectValue) or got.type != want.type
    ):
        return _wrong_type(got, want)
    return None


def _other(got: Value | Missing | None, want: Value | Missing | None) -> Difference:
    return Difference("wrong-value", f"got {show(got)}, expected {show(want)}")


def _wrong_type(got: Value | Missing | None, want: Value) -> Difference:
    if isinstance(got, Missing):
        return Difference("missing-name", "not defined")
    return Difference("wrong-type", f"holds {kind_name(got)}, expected {kind_name(want)}")


def _compare_arrays(
    got: Value | Missing | None, want: NdarrayValue, tolerance: Tolerance, accumulated: bool
) -> Difference | None:
    if not isinstance(got, NdarrayValue):
        return _wrong_type(got, want)
    if got.shape != want.shape:
        return Difference("shape-mismatch", f"shape {list(got.shape)}, expected {list(want.shape)}")
    if got.dtype != want.dtype:
        return Difference("dtype-mismatch", f"dtype {got.dtype}, expected {want.dtype}")
    found = compare_numbers(
        got.floats(), want.floats(), tolerance.for_dtype(want.dtype), accumulated=accumulated
    )
    if found is None:
        return None
    return Difference(found.slug, f"got {show(got)}, expected {show(want)}")


def _compare_scalars(
    got: Value | Missing | None, want: ScalarValue, tolerance: Tolerance, accumulated: bool
) -> Difference | None:
    if want.kind == "number":
        if isinstance(got, TensorValue) and got.numel == 1:
            numbers = got.floats()
        elif isinstance(got, ScalarValue) and got.kind == "number":
            numbers = [float(got.value)]  # type: ignore[arg-type]
        else:
            return _wrong_type(got, want)
        found = compare_numbers(
            numbers,
            [float(want.value)],  # type: ignore[arg-type]
            tolerance.for_dtype(None),
            accumulated=accumulated,
        )
        if found is None:
            return None
        return Difference(found.slug, f"got {show(got)}, expected {show(want)}")
    if not isinstance(got, ScalarValue) or got.kind != want.kind:
        return _wrong_type(got, want)
    if want.kind == "str" and normalise(str(got.value)) == normalise(str(want.value)):
        return None
    if got.value == want.value:
        return None
    return Difference("wrong-value", f"got {show(got)}, expected {show(want)}")


def _compare_lists(
    got: Value | Missing | None, want: ListValue, tolerance: Tolerance, accumulated: bool
) -> Difference | None:
    if not isinstance(got, ListValue):
        return _wrong_type(got, want)
    if len(got.items) != len(want.items):
        return Difference(
            "wrong-value",
            f"{len(got.items)} items, expected {len(want.items)}: got {show(got)}, "
            f"expected {show(want)}",
        )
    for index, (mine, theirs) in enumerate(zip(got.items, want.items, strict=True)):
        found = compare_values(mine, theirs, tolerance, accumulated=accumulated)
        if found is not None:
            return Difference(found.slug, f"item {index}: {found.message}")
    return None


def _compare_dicts(
    got: Value | Missing | None, want: DictValue, tolerance: Tolerance, accumulated: bool
) -> Difference | None:
    if not isinstance(got, DictValue):
        return _wrong_type(got, want)
    missing = [k for k in want.items if k not in got.items]
    if missing:
        return Difference("missing-name", f"key {missing[0]!r} is missing")
    for key, theirs in want.items.items():
        found = compare_values(got.items[key], theirs, tolerance, accumulated=accumulated)
        if found is not None:
            return Difference(found.slug, f"[{key!r}]: {found.message}")
    return None


def _compare_modules(
    got: Value | Missing | None, want: ModuleValue, tolerance: Tolerance, accumulated: bool
) -> Difference | None:
    if not isinstance(got, ModuleValue):
        return _wrong_type(got, want)
    if set(got.params) != set(want.params):
        return Difference(
            "wrong-type", f"parameters {sorted(got.params)}, expected {sorted(want.params)}"
        )
    for name, theirs in want.params.items():
        found = compare_tensors(got.params[name], theirs, tolerance, accumulated=accumulated)
        if found is not None:
            return Difference(found.slug, f"parameter {name}: {found.message}")
    return None


def normalise(text: str) -> str:
    return " ".join(text.split())
