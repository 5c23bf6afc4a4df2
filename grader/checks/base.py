"""What every check shares: the outcome, trials (one per script run or function case)
and the run-level diagnosis context. Value comparison lives in grader.checks.compare,
display strings in grader.checks.formatting."""

from __future__ import annotations

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
    ListValue,
    ModuleValue,
    NdarrayValue,
    ScalarValue,
    TensorValue,
    Value,
)
from grader.checks.compare import Tolerance, compare_tensors
from grader.checks.formatting import MISSING, Missing
from grader.spec import CheckSpec

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
    spec: CheckSpec | None = None,
) -> Outcome:
    """Runs `check` on every trial; the first failure (with the trial's label) wins.

    A check's `diagnosis` option names the failure when the check itself recognised no
    specific mistake (its finding is the generic wrong-value): the check's subject is
    that mistake, so the option wins over the run-level context too."""
    fallback = spec.option("diagnosis", "") if spec is not None else ""
    undefined = [name for name, ok in learner.defined.items() if not ok]
    if reference.kind == "function" and undefined and learner.exception is None:
        return failed(f"{undefined[0]} is not defined", "missing-name")
    count = 0
    for trial in trials(learner, reference):
        outcome = check(trial)
        count += 1
        if not outcome.passed:
            if fallback and outcome.diagnosis in ("", "wrong-value"):
                diagnosis = fallback
            else:
                diagnosis = context_diagnosis(trial, outcome.diagnosis)
            message = outcome.message
            error = trial.learner_exception
            if diagnosis != outcome.diagnosis and error is not None:
                where = f" at line {error.line}" if error.line else ""
                message += f" (your code stopped{where} with {error.type}: {error.message})"
            if trial.visible:
                return Outcome(False, trial.label + message, diagnosis, outcome.data)
            # Values of hidden inputs are never shown: only what kind of mistake it is.
            known = diagnose.DIAGNOSES.get(diagnosis)  # exercise-specific: its slug
            title = known.title.lower() if known else diagnosis.replace("-", " ")
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
    if found == "scaled-by-n" and graph_cut(trial):
        return "graph-broken"  # a factor from a cut path (.item(), detach), not mean/sum
    return found or "wrong-value"


def graph_cut(trial: Trial) -> bool:
    """Does the learner's run show a cut graph? Some tensor that requires grad in the
    reference does not in the learner's, or, after backward calls ran, a leaf that
    requires grad has no .grad where the reference's has one."""
    ran = bool(trial.ok_learner_calls)
    for key, want in trial.reference.items():
        got = trial.learner.get(key)
        pairs = _tensor_pairs(got, want)
        for mine, theirs in pairs:
            if theirs.requires_grad and not mine.requires_grad:
                return True
            lost = theirs.grad is not None and mine.grad is None
            if ran and lost and mine.is_leaf and mine.requires_grad:
                return True
    return False


def _tensor_pairs(got: Value | None, want: Value) -> list[tuple[TensorValue, TensorValue]]:
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
        for mine, theirs in _tensor_pairs(trial.learner.get(key), want):
            if theirs.grad is None or mine.grad is None:
                continue
            if compare_tensors(mine.grad, theirs.grad, Tolerance(), accumulated=False) is None:
                return True
    return False


def missing_grad_slug(got: TensorValue, trial: Trial) -> str:
    """Why `got.grad` is None where the reference has one: backward never ran, the
    non-leaf's grad was not retained, or the graph never reached the tensor."""
    if no_backward(trial):
        return "no-backward"
    if not got.is_leaf and got.requires_grad:
        return "missing-retain-grad"
    return "graph-broken"


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
