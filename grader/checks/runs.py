"""Checks on what happened during the run: backward calls, gradient history, the loss
curve, fresh gradients, exceptions, printed output; each with its typed options."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

from grader.capture import BackwardCall, Capture, ListValue, Value
from grader.checks.base import CheckSpec, Outcome, each_trial, failed, passed
from grader.checks.compare import NUMBER_TOLERANCE, Tolerance, close, compare_values
from grader.checks.diagnoses import curves, errors, run
from grader.checks.formatting import Missing, fmt_number, show
from grader.checks.options import (
    CheckOptions,
    OptionError,
    count,
    flag,
    listed_names,
    number,
    one_of,
    option,
    options_of,
    tolerance,
    variants,
)
from grader.checks.trials import Trial

NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|[-+]?inf|nan", re.IGNORECASE)
PRINTED_RTOL = 1e-3  # a printed loss may be rounded to about 4 significant digits
SHOWN_LOSSES = 6
LOSS_CURVE_MODES = ("pointwise", "properties")
STDOUT_MODES = ("exact", "losses")
CALL_FACTS = ("count", "retain_graph", "gradient_given")


@dataclass(frozen=True)
class BackwardCallsOptions(CheckOptions):
    """`backward_calls`: the facts to compare (none set: the count), and `steps_match`
    (one optimizer step per successful backward call)."""

    count: bool = option(False, flag)
    retain_graph: bool = option(False, flag)
    gradient_given: bool = option(False, flag)
    steps_match: bool = option(False, flag)

    @property
    def facts(self) -> list[str]:
        chosen = [fact for fact in CALL_FACTS if getattr(self, fact)]
        return chosen or ([] if self.steps_match else ["count"])


@dataclass(frozen=True)
class GradHistoryOptions(CheckOptions):
    """`grad_history`: tolerances, and variants (lists: the grad after each call)."""

    rtol: float | None = option(None, tolerance)
    atol: float | None = option(None, tolerance)
    variants: tuple[tuple[str, str], ...] = option((), variants)


@dataclass(frozen=True)
class LossCurveOptions(CheckOptions):
    """`loss_curve`: "pointwise" compares each loss with the reference's (rtol, atol);
    "properties" judges the learner's own curve (falls, final_below, min/max_steps)."""

    mode: str = option("pointwise", one_of(*LOSS_CURVE_MODES))
    rtol: float | None = option(None, tolerance)
    atol: float | None = option(None, tolerance)
    falls: bool = option(False, flag)
    final_below: float | None = option(None, number)
    min_steps: int | None = option(None, count)
    max_steps: int | None = option(None, count)

    def validate(self, given: set[str]) -> None:
        own = {"pointwise": {"rtol", "atol"}, "properties": {"falls", "final_below",
               "min_steps", "max_steps"}}  # fmt: skip
        for mode, keys in own.items():
            for key in sorted(given & keys):
                if mode != self.mode:
                    raise OptionError(key, f'applies only in mode = "{mode}"')
        low, high = self.min_steps, self.max_steps
        if low is not None and high is not None and low > high:
            raise OptionError("min_steps", "must not exceed max_steps")


@dataclass(frozen=True)
class FreshGradsOptions(CheckOptions):
    """`fresh_grads`: the tracked names to watch (default: all)."""

    names: tuple[str, ...] | None = option(None, listed_names)


@dataclass(frozen=True)
class StdoutOptions(CheckOptions):
    """`stdout`: "exact" (the printed lines) or "losses" (each backward loss printed)."""

    mode: str = option("exact", one_of(*STDOUT_MODES))


def _calls_word(amount: int) -> str:
    return f"{amount} successful backward call" + ("" if amount == 1 else "s")


def check_backward_calls(learner: Capture, reference: Capture, spec: CheckSpec) -> Outcome:
    options = options_of(spec.options, BackwardCallsOptions)
    facts = options.facts
    steps_match = options.steps_match

    def one(trial: Trial) -> Outcome:
        mine, theirs = trial.ok_learner_calls, trial.ok_reference_calls
        if not mine and run.no_backward(trial) and theirs:
            return failed("backward() was never called", run.count_slug(trial))
        counted = _graded_calls(mine, theirs)
        if facts and len(counted) != len(theirs):
            message = f"{_calls_word(len(counted))}, expected {len(theirs)}"
            if len(counted) < len(mine):
                message += f" ({len(mine) - len(counted)} reached none of the graded tensors)"
            return failed(message, run.count_slug(trial))
        for fact in ("retain_graph", "gradient_given"):
            if fact not in facts:
                continue
            got = [bool(getattr(c, fact)) for c in mine]
            want = [bool(getattr(c, fact)) for c in theirs]
            for index, (a, b) in enumerate(zip(got, want, strict=True)):
                if a != b:
                    return failed(
                        f"backward call {index + 1}: {fact} is {a}, expected {b}",
                        "wrong-value",
                    )
        if steps_match and learner.optimizer_steps != len(mine):
            return failed(
                f"{_calls_word(len(mine))} but {learner.optimizer_steps} optimizer steps: "
                "expected one backward() per optimizer.step()",
                curves.steps_slug(learner.optimizer_steps),
            )
        if steps_match and not facts:
            return passed(f"one backward call per optimizer step ({len(mine)} steps)")
        return passed(f"{_calls_word(len(mine))}, as expected")

    return each_trial(learner, reference, one, "backward calls as expected", options)


def _graded_calls(
    mine: Sequence[BackwardCall], theirs: Sequence[BackwardCall]
) -> tuple[BackwardCall, ...]:
    """The learner's calls whose gradient reaches a tracked tensor that the reference's
    calls reach (the graded leaves): a throw-away backward of an unrelated tensor, next to
    a typed-in .grad, is not one. A call whose graph was not walked counts; so does every
    call when the reference's reach no tracked tensor (nothing to tell them by)."""
    graded = {name for call in theirs for name in _reached(call)}
    if not graded:
        return tuple(mine)
    return tuple(call for call in mine if call.graph is None or graded & _reached(call))


def _reached(call: BackwardCall) -> set[str]:
    """The tracked names `call`'s gradient reached (`BackwardCall.reaches`, as one set:
    linear in the call's record, where asking per name scans its graph each time)."""
    reached = set(call.graph or ())
    return reached if call.inputs is None else reached & set(call.inputs)


def check_grad_history(learner: Capture, reference: Capture, spec: CheckSpec) -> Outcome:
    target = spec.target or ""
    options = options_of(spec.options, GradHistoryOptions)
    tol = Tolerance(options.rtol, options.atol)

    def one(trial: Trial) -> Outcome:
        found = _history_difference(trial, target, tol)
        if found is None:
            return passed(f"{target}.grad is correct after every backward call")
        message, slug = found
        history = [c.grads_after.get(target) for c in trial.ok_learner_calls]
        data = {
            "label": f"{target}.grad after each backward call",
            "got": [show(v) for v in history[:SHOWN_LOSSES]],
            "want": [
                show(c.grads_after.get(target)) for c in trial.ok_reference_calls[:SHOWN_LOSSES]
            ],
        }
        for variant, key in options.variants:
            if _matches_history(history, trial.want(key), tol):
                return failed(message, variant, **data)
        return failed(message, slug, **data)

    return each_trial(learner, reference, one, f"{target}.grad history is correct", options)


def _matches_history(history: list[Value | None], variant: Value | Missing, tol: Tolerance) -> bool:
    """Do the learner's grads after each call equal a variant (a list, one per call)?"""
    if not isinstance(variant, ListValue) or len(variant.items) != len(history):
        return False
    return all(
        got is not None and compare_values(got, want, tol) is None
        for got, want in zip(history, variant.items, strict=True)
    )


def _history_difference(trial: Trial, target: str, tolerance: Tolerance) -> tuple[str, str] | None:
    mine, theirs = trial.ok_learner_calls, trial.ok_reference_calls
    for index, want_call in enumerate(theirs):
        if index >= len(mine):
            message = f"{_calls_word(len(mine))}, expected {len(theirs)}"
            return message, run.count_slug(trial)
        got = mine[index].grads_after.get(target)
        want = want_call.grads_after.get(target)
        if want is not None and got is None:
            message = (
                f"after backward call {index + 1}: {target}.grad is None, expected {show(want)}"
            )
            return message, "graph-broken"
        diff = compare_values(got, want, tolerance)
        if diff is not None:
            slug = run.history_slug(diff, trial, target)
            return f"after backward call {index + 1}: {target}.grad {diff.message}", slug
    if len(mine) > len(theirs):
        return f"{_calls_word(len(mine))}, expected {len(theirs)}", run.count_slug(trial)
    return None


def losses(calls: Sequence[BackwardCall]) -> list[float]:
    return [c.loss for c in calls if c.ok and c.loss is not None]


def _shown(values: Sequence[float]) -> str:
    head = ", ".join(fmt_number(v) for v in values[:SHOWN_LOSSES])
    return f"[{head}{', ...' if len(values) > SHOWN_LOSSES else ''}] ({len(values)} steps)"


def check_loss_curve(learner: Capture, reference: Capture, spec: CheckSpec) -> Outcome:
    options = options_of(spec.options, LossCurveOptions)

    def one(trial: Trial) -> Outcome:
        mine = losses(trial.learner_calls)
        if any(not math.isfinite(v) for v in mine):
            return failed(f"the loss became NaN or infinite: {_shown(mine)}", "loss-diverges")
        if options.mode == "properties":
            return _properties(mine, options, trial)
        return _pointwise(mine, losses(trial.reference_calls), options, trial)

    return each_trial(learner, reference, one, "the loss curve is as expected", options)


def _pointwise(
    mine: list[float], theirs: list[float], options: LossCurveOptions, trial: Trial
) -> Outcome:
    rtol = NUMBER_TOLERANCE[0] if options.rtol is None else options.rtol
    atol = NUMBER_TOLERANCE[1] if options.atol is None else options.atol
    if len(mine) != len(theirs):
        return failed(
            f"{len(mine)} losses recorded, expected {len(theirs)}: got {_shown(mine)}, "
            f"expected {_shown(theirs)}",
            curves.pointwise_curve_slug(mine, trial) if mine else "wrong-value",
        )
    for index, (a, b) in enumerate(zip(mine, theirs, strict=True)):
        if not close(a, b, rtol, atol):
            return failed(
                f"step {index + 1}: loss {fmt_number(a)}, expected {fmt_number(b)}; "
                f"got {_shown(mine)}, expected {_shown(theirs)}",
                curves.pointwise_curve_slug(mine, trial),
            )
    return passed(f"the loss curve matches the reference ({len(mine)} steps)")


def _properties(mine: list[float], options: LossCurveOptions, trial: Trial) -> Outcome:
    if not mine:
        slug = "no-backward" if run.no_backward(trial) else "loss-flat"
        return failed("no loss was recorded: no backward() on a scalar loss ran", slug)
    min_steps, max_steps = options.min_steps, options.max_steps
    if min_steps is not None and len(mine) < min_steps:
        return failed(f"{len(mine)} training steps, expected at least {min_steps}")
    if max_steps is not None and len(mine) > max_steps:
        return failed(f"{len(mine)} training steps, expected at most {max_steps}")
    if options.falls and curves.curve_slug(mine) is not None:
        slug = curves.properties_curve_slug(mine, trial, falls=True)
        return failed(f"the loss does not fall: {_shown(mine)}", slug)
    below = options.final_below
    if below is not None and not mine[-1] < below:
        return failed(
            f"the final loss {fmt_number(mine[-1])} is not below {fmt_number(below)}: "
            f"{_shown(mine)}",
            curves.properties_curve_slug(mine, trial, falls=False),
        )
    return passed(f"the loss curve has the expected properties: {_shown(mine)}")


def check_fresh_grads(learner: Capture, reference: Capture, spec: CheckSpec) -> Outcome:
    options = options_of(spec.options, FreshGradsOptions)
    names = options.names

    def one(trial: Trial) -> Outcome:
        for index, call in enumerate(trial.ok_learner_calls):
            stale = run.stale_names(call, names)
            if stale:
                return failed(
                    f"before backward call {index + 1}, {stale[0]}.grad still held "
                    f"{show(call.grads_before[stale[0]])} from an earlier call",
                    "forgot-zero-grad",
                )
        return passed("gradients were cleared before every backward call")

    return each_trial(
        learner, reference, one, "gradients were cleared before every backward", options
    )


def check_raises(learner: Capture, reference: Capture, spec: CheckSpec) -> Outcome:
    options = options_of(spec.options, CheckOptions)

    def one(trial: Trial) -> Outcome:
        mine, theirs = trial.learner_exception, trial.reference_exception
        if theirs is None and mine is None:
            return passed("no exception, as expected")
        if theirs is None and mine is not None:
            return failed(f"raised {mine.type}: {mine.message}", "crashed")
        assert theirs is not None
        if mine is None:
            return failed(f"expected {theirs.type} to be raised, but nothing was raised")
        if not mine.is_a(theirs):
            return failed(f"raised {mine.type}, expected {theirs.type}")
        if mine.type != theirs.type:
            return passed(f"raised {mine.type}, a subclass of {theirs.type}, as expected")
        return passed(f"raised {theirs.type}, as expected")

    return each_trial(learner, reference, one, "exceptions as expected", options)


def _numbers(text: str) -> list[tuple[float, str]]:
    return [(float(m.group(0)), m.group(0)) for m in NUMBER.finditer(text)]


def _printed_matches(printed: tuple[float, str], loss: float) -> bool:
    value, text = printed
    if close(value, loss, PRINTED_RTOL, 1e-6):
        return True
    decimals = len(text.split(".")[1]) if "." in text and "e" not in text.lower() else 0
    return "." in text and abs(value - loss) <= 0.5 * 10.0**-decimals + 1e-12


def check_stdout(learner: Capture, reference: Capture, spec: CheckSpec) -> Outcome:
    options = options_of(spec.options, StdoutOptions)

    def one(trial: Trial) -> Outcome:
        if options.mode == "losses":
            return _printed_losses(trial)
        mine, theirs = _lines(trial.learner_stdout), _lines(trial.reference_stdout)
        if mine == theirs:
            return passed("the printed output is as expected")
        for index, (a, b) in enumerate(zip(mine + [""] * len(theirs), theirs, strict=False)):
            if a != b:
                return failed(f"printed line {index + 1} is {a!r}, expected {b!r}")
        return failed(f"printed {len(mine)} lines, expected {len(theirs)}")

    return each_trial(learner, reference, one, "the printed output is as expected", options)


def _lines(text: str) -> list[str]:
    return [line.rstrip() for line in text.strip().splitlines()]


def _printed_losses(trial: Trial) -> Outcome:
    values = losses(trial.learner_calls)
    if not values:
        return failed("no loss was recorded: no backward() on a scalar loss ran")
    printed = _numbers(trial.learner_stdout)
    position = 0
    for index, loss in enumerate(values):
        while position < len(printed) and not _printed_matches(printed[position], loss):
            position += 1
        if position >= len(printed):
            if trial.learner_stdout_cut and index > 0:
                return passed(
                    f"every loss in the output kept was printed ({index} of {len(values)} "
                    "steps; the rest was past the output limit)"
                )
            return failed(f"the loss of step {index + 1} ({fmt_number(loss)}) was not printed")
        position += 1
    return passed(f"every loss was printed ({len(values)} steps)")


def check_no_error(learner: Capture, reference: Capture, spec: CheckSpec) -> Outcome:
    options = options_of(spec.options, CheckOptions)
    if learner.exception is not None and reference.exception is None:
        error = learner.exception
        where = f" (line {error.line})" if error.line else ""
        slug = errors.error_slug(error.message) or "crashed"
        return failed(f"your code raised {error.type}{where}: {error.message}", slug)

    def one(trial: Trial) -> Outcome:
        mine, theirs = trial.learner_exception, trial.reference_exception
        if mine is not None and theirs is None:
            where = f" (line {mine.line})" if mine.line else ""
            return failed(f"raised {mine.type}{where}: {mine.message}", "crashed")
        return passed("ran without an error")

    return each_trial(learner, reference, one, "your code ran without an error", options)
