"""The check types (FORMAT.md section 4): for each, the function that runs it, the
dataclass of its options and whether it takes a target.

grader.spec calls `parse_options` while reading a manifest; grader.report calls
`run_check`, which turns any exception a check raises on a capture into a failed
outcome that carries the error (the report flags it for review): grading never
crashes on learner data.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from grader.capture import Capture
from grader.checks.base import CheckSpec, Outcome, over_budget
from grader.checks.budget import budget_spent
from grader.checks.construction import (
    ExactOptions,
    ExactValuesOptions,
    as_claim,
    check_backward_pass_claim,
    check_backward_probe,
    check_derivative_claim,
    check_exact_values,
    check_grad_per_batch,
)
from grader.checks.options import CheckOptions, OptionContext, OptionError
from grader.checks.runs import (
    BackwardCallsOptions,
    FreshGradsOptions,
    GradHistoryOptions,
    LossCurveOptions,
    StdoutOptions,
    check_backward_calls,
    check_fresh_grads,
    check_grad_history,
    check_loss_curve,
    check_no_error,
    check_raises,
    check_stdout,
)
from grader.checks.shortcuts import (
    SameLeafOptions,
    check_double_backward,
    check_graph_reused,
    check_same_leaf,
)
from grader.checks.skills import (
    NoAutogradOptions,
    check_autograd_function,
    check_max_batch,
    check_no_autograd,
    check_retains_grad,
)
from grader.checks.values import (
    GraphOptions,
    ValueOptions,
    check_device,
    check_grad,
    check_gradcheck,
    check_graph,
    check_message,
    check_value,
)

Check = Callable[[Capture, Capture, CheckSpec], Outcome]
GRADING_ERROR = "this check could not compare your result; it is held for an instructor"


@dataclass(frozen=True)
class CheckType:
    run: Check
    options: type[CheckOptions]
    needs_target: bool


REGISTRY: Mapping[str, CheckType] = MappingProxyType(
    {
        "value": CheckType(check_value, ValueOptions, needs_target=True),
        "grad": CheckType(check_grad, ValueOptions, needs_target=True),
        "graph": CheckType(check_graph, GraphOptions, needs_target=True),
        "backward_calls": CheckType(check_backward_calls, BackwardCallsOptions, False),
        "grad_history": CheckType(check_grad_history, GradHistoryOptions, needs_target=True),
        "loss_curve": CheckType(check_loss_curve, LossCurveOptions, needs_target=False),
        "fresh_grads": CheckType(check_fresh_grads, FreshGradsOptions, needs_target=False),
        "message": CheckType(check_message, CheckOptions, needs_target=True),
        "raises": CheckType(check_raises, CheckOptions, needs_target=False),
        "stdout": CheckType(check_stdout, StdoutOptions, needs_target=False),
        "gradcheck": CheckType(check_gradcheck, CheckOptions, needs_target=True),
        "no_error": CheckType(check_no_error, CheckOptions, needs_target=False),
        "device": CheckType(check_device, CheckOptions, needs_target=True),
        "autograd_function": CheckType(as_claim(check_autograd_function), CheckOptions, False),
        "no_autograd": CheckType(as_claim(check_no_autograd), NoAutogradOptions, False),
        "max_batch": CheckType(as_claim(check_max_batch), CheckOptions, needs_target=False),
        "retains_grad": CheckType(check_retains_grad, CheckOptions, needs_target=True),
        "double_backward": CheckType(check_double_backward, CheckOptions, needs_target=False),
        "graph_reused": CheckType(check_graph_reused, CheckOptions, needs_target=False),
        "same_leaf": CheckType(check_same_leaf, SameLeafOptions, needs_target=False),
        "backward_probe": CheckType(check_backward_probe, ExactOptions, needs_target=True),
        "exact_values": CheckType(check_exact_values, ExactValuesOptions, needs_target=False),
        "grad_per_batch": CheckType(check_grad_per_batch, GradHistoryOptions, needs_target=True),
        "derivative_claim": CheckType(as_claim(check_derivative_claim), CheckOptions, True),
        "backward_pass_claim": CheckType(as_claim(check_backward_pass_claim), CheckOptions, False),
    }
)


def parse_options(check_type: str, raw: Mapping[str, Any], context: OptionContext) -> CheckOptions:
    """The typed options of one `[[checks]]` table (without name, type, target, points).
    Raises OptionError naming the field; KeyError for an unknown check type."""
    return REGISTRY[check_type].options.parse(raw, context)


def run_check(spec: CheckSpec, learner: Capture, reference: Capture) -> Outcome:
    """Runs one check. Any exception it raises on these captures is a failed outcome with
    `grading_error` set (never an infrastructure retry, never a crash of the report).
    Once the grading CPU budget is spent, a check is not run: it scores 0, "grading
    budget exceeded" (grader.checks.budget)."""
    if budget_spent():
        return over_budget()
    try:
        return REGISTRY[spec.type].run(learner, reference, spec)
    except Exception as error:  # the learner's data must not crash grading
        detail = f"check {spec.name!r} ({spec.type}) raised {type(error).__name__}: {error}"
        return Outcome(False, GRADING_ERROR, "", {}, grading_error=detail[:2_000])


__all__ = ["REGISTRY", "Check", "CheckType", "OptionError", "parse_options", "run_check"]
