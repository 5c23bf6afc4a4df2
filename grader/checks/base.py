"""What every check shares: its manifest entry (`CheckSpec`), the outcome and
`each_trial`, which runs a check's comparison on every trial and names the failure with
the rules of grader.checks.diagnoses. Comparison lives in grader.checks.compare, display
strings in grader.checks.formatting, typed options in grader.checks.options."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from grader.capture import Capture
from grader.checks.budget import BUDGET_EXCEEDED, budget_spent
from grader.checks.diagnoses import catalogue, run
from grader.checks.options import CheckOptions
from grader.checks.trials import Trial, trials


@dataclass(frozen=True)
class CheckSpec:
    """One `[[checks]]` table of a manifest, as grader.spec reads it."""

    name: str
    type: str
    points: int
    target: str | None = None
    options: CheckOptions = field(default_factory=CheckOptions)  # the type's own dataclass
    objectives: tuple[str, ...] = ()  # ids of the module's learning objectives it tests


@dataclass(frozen=True)
class Outcome:
    passed: bool
    message: str
    diagnosis: str = ""
    data: Mapping[str, Any] = field(default_factory=dict)
    # Not empty when the check itself failed on this capture (an exception while
    # comparing): the report flags it for review instead of trusting the verdict.
    grading_error: str = ""


def passed(message: str, **data: Any) -> Outcome:
    return Outcome(True, message, "", data)


def failed(message: str, diagnosis: str = "wrong-value", **data: Any) -> Outcome:
    return Outcome(False, message, diagnosis, data)


BUDGET_SLUG = "grading-budget-exceeded"


def over_budget() -> Outcome:
    """A check not reached within the grading CPU budget (grader.checks.budget): 0
    points, the submission still graded."""
    return failed(BUDGET_EXCEEDED, BUDGET_SLUG, budget_exceeded=True)


def each_trial(
    learner: Capture,
    reference: Capture,
    check: Callable[[Trial], Outcome],
    success: str,
    options: CheckOptions | None = None,
) -> Outcome:
    """Runs `check` on every trial; the first failure (with the trial's label) wins.

    A check's `diagnosis` option names the failure when the check itself recognised no
    specific mistake (its finding is the generic wrong-value): the check's subject is
    that mistake, so the option wins over the run-level context too."""
    fallback = options.diagnosis if options is not None else ""
    undefined = [name for name, ok in learner.defined.items() if not ok]
    if reference.kind == "function" and undefined and learner.exception is None:
        return failed(f"{undefined[0]} is not defined", "missing-name")
    count = 0
    for trial in trials(learner, reference):
        if budget_spent():
            return over_budget()
        outcome = check(trial)
        count += 1
        if not outcome.passed:
            return _named_failure(trial, outcome, fallback)
    if reference.kind == "function" and count > 1:
        success = f"{success} (all {count} cases)"
    return passed(success)


def _named_failure(trial: Trial, outcome: Outcome, fallback: str) -> Outcome:
    context = run.context_diagnosis(trial, outcome.diagnosis)
    if context == "wrong-value" and run.accumulated_onto_stale(trial):
        diagnosis = "forgot-zero-grad"  # what the run did names it, over the check's default
    elif fallback and outcome.diagnosis in ("", "wrong-value"):
        diagnosis = fallback
    elif fallback and context in run.reference_error_slugs(trial):
        diagnosis = fallback  # the error the exercise teaches: the check's subject names it
    else:
        diagnosis = context
    message = outcome.message
    error = trial.learner_exception
    if diagnosis != outcome.diagnosis and error is not None:
        where = f" at line {error.line}" if error.line else ""
        message += f" (your code stopped{where} with {error.type}: {error.message})"
    if trial.visible:
        return Outcome(False, trial.label + message, diagnosis, outcome.data)
    # Values of hidden inputs are never shown: only what kind of mistake it is.
    known = catalogue.DIAGNOSES.get(diagnosis)  # exercise-specific: its slug
    title = known.title.lower() if known else diagnosis.replace("-", " ")
    message = f"{trial.label}the result is not the expected one ({title})"
    return Outcome(False, message, diagnosis, {"case": trial.index})
