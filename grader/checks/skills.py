"""Skill checks (FORMAT.md section 4): did the learner's code use the technique the
exercise teaches, not just reach its numbers? Each reads what the harness itself
observed: the case runner's "@watch" observation (grader/harness/casework.py: hooks it
installs before the entry is called) or the backward calls and `retains_grad` the
recorder saw in a script run."""

from __future__ import annotations

from dataclasses import dataclass

from grader.capture import Capture, DictValue, ScalarValue, TensorValue, Value
from grader.checks.base import CheckSpec, Outcome, each_trial, failed, passed
from grader.checks.formatting import Missing, kind_name
from grader.checks.options import CheckOptions, one_of, option, options_of
from grader.checks.trials import Trial

WATCH_KEY = "@watch"
PHASES = ("call", "backward")
PHASE_WORDS = {"call": "while your function ran", "backward": "during the backward pass"}
AUTOGRAD_UNAVAILABLE = "AutogradUnavailable"  # a NumPy-only call's autograd refused


@dataclass(frozen=True)
class NoAutogradOptions(CheckOptions):
    """`no_autograd`: the phase of each case that must run without autograd: "call" (the
    entry's call) or "backward" (the case's backward steps, e.g. a custom backward)."""

    during: str = option("call", one_of(*PHASES))


def _watched(trial: Trial, part: str) -> DictValue | None:
    """The part ("function", "autograd", "batch") of the learner's @watch observation."""
    watch = trial.got(WATCH_KEY)
    if not isinstance(watch, DictValue):
        return None
    found = watch.items.get(part)
    return found if isinstance(found, DictValue) else None


def _int(value: DictValue | None, key: str) -> int:
    item = value.items.get(key) if value is not None else None
    if isinstance(item, ScalarValue) and isinstance(item.value, int | float):
        return int(item.value)
    return 0


def _flag(value: DictValue | None, key: str) -> bool:
    item = value.items.get(key) if value is not None else None
    return isinstance(item, ScalarValue) and item.value is True


def _not_run(trial: Trial) -> Outcome | None:
    """A case whose learner run raised before the watch could report (no verdict here:
    the value checks name the crash)."""
    if isinstance(trial.got(WATCH_KEY), Missing):
        if trial.learner_exception is not None:
            return failed("your code raised before it could be watched", "crashed")
        return failed("the grader could not watch your code on this case", "wrong-value")
    return None


def _autograd_use(trial: Trial, phase: str) -> str:
    """What autograd use the watch saw in a phase ("" when none)."""
    counts = _watched(trial, "autograd")
    phases = counts.items.get(phase) if counts is not None else None
    found = phases if isinstance(phases, DictValue) else None
    calls = _int(found, "autograd_calls")
    if phase == "call":
        calls = max(calls, len(trial.learner_calls))
    if calls:
        return f"{calls} call(s) of backward() / torch.autograd.grad"
    ops = _int(found, "graph_ops")
    if ops:
        return f"an autograd graph was built ({ops} tensors saved for backward)"
    if _int(found, "hooks_pushed"):
        return "saved-tensor hooks were installed (they hide the graph being built)"
    return ""


def check_autograd_function(learner: Capture, reference: Capture, spec: CheckSpec) -> Outcome:
    """The entry subclasses torch.autograd.Function, its own backward node made the
    result, and that backward computed the gradient without autograd."""
    options = options_of(spec.options, CheckOptions)

    def one(trial: Trial) -> Outcome:
        early = _not_run(trial)
        if early is not None:
            return early
        function = _watched(trial, "function")
        if not _flag(function, "subclass"):
            return failed(
                "your entry is not a subclass of torch.autograd.Function",
                "not-an-autograd-function",
            )
        if not _flag(function, "own_node"):
            return failed(
                "the result was not made by your Function's own backward node (call it "
                "through .apply, and let forward compute the output)",
                "not-an-autograd-function",
            )
        use = _autograd_use(trial, "backward")
        if use:
            return failed(
                f"your backward used autograd ({use}): it must compute the derivative itself",
                "autograd-in-backward",
            )
        if _flag(function, "graph_kept"):
            return failed(
                "forward kept an autograd graph on ctx for backward to differentiate: "
                "backward must compute the derivative itself",
                "autograd-in-backward",
            )
        return passed("a torch.autograd.Function whose backward computes the derivative itself")

    return each_trial(learner, reference, one, "a custom Function with its own backward", options)


def check_no_autograd(learner: Capture, reference: Capture, spec: CheckSpec) -> Outcome:
    """No autograd during the chosen phase of every case."""
    options = options_of(spec.options, NoAutogradOptions)
    where = PHASE_WORDS[options.during]

    def one(trial: Trial) -> Outcome:
        error = trial.learner_exception
        if error is not None and error.type == AUTOGRAD_UNAVAILABLE:  # harness/construct.py
            # the check's `diagnosis` option names it over the run's backward error
            return failed(f"your code reached for torch's autograd {where}, where it is off")
        early = _not_run(trial)
        if early is not None:
            return early
        use = _autograd_use(trial, options.during)
        if use:
            return failed(f"autograd was used {where}: {use}", "used-autograd")
        return passed(f"no autograd {where}")

    return each_trial(learner, reference, one, f"no autograd {where}", options)


def check_max_batch(learner: Capture, reference: Capture, spec: CheckSpec) -> Outcome:
    """The model's layers never saw more samples in one call than in the reference's run,
    and each saw at least as many samples in all (no layer bypassed)."""
    options = options_of(spec.options, CheckOptions)

    def one(trial: Trial) -> Outcome:
        early = _not_run(trial)
        if early is not None:
            return early
        mine = _watched(trial, "batch")
        theirs = _reference_batch(trial)
        if not _flag(mine, "hooks_intact"):
            return failed("the grader's hooks on the model were removed", "layers-bypassed")
        largest, allowed = _int(mine, "largest"), _int(theirs, "largest")
        if largest > allowed:
            return failed(
                f"the model saw {largest} samples in one forward pass, at most {allowed} "
                "are allowed",
                "batch-too-large",
            )
        samples, needed = _int(mine, "samples"), _int(theirs, "samples")
        if samples < needed:
            return failed(
                f"a layer of the model saw {samples} of the {needed} samples: call the model "
                "itself on every micro-batch",
                "layers-bypassed",
            )
        return passed(f"the model saw at most {allowed} samples at once")

    return each_trial(learner, reference, one, "the model saw micro-batches only", options)


def _reference_batch(trial: Trial) -> DictValue | None:
    watch = trial.want(WATCH_KEY)
    found = watch.items.get("batch") if isinstance(watch, DictValue) else None
    return found if isinstance(found, DictValue) else None


def check_retains_grad(learner: Capture, reference: Capture, spec: CheckSpec) -> Outcome:
    """The non-leaf target kept its gradient through retain_grad(): it retains its grad,
    and a backward call filled that grad (not a hand-written .grad)."""
    target = spec.target or ""
    options = options_of(spec.options, CheckOptions)

    def one(trial: Trial) -> Outcome:
        got = trial.got(target)
        if isinstance(got, Missing):
            return failed(f"{target} is not defined", "missing-name")
        if not isinstance(got, TensorValue):
            return failed(f"{target} holds {kind_name(got)}, expected a tensor", "wrong-type")
        if got.is_leaf:
            return failed(
                f"{target} is a leaf: it must stay an intermediate result of the graph",
                "graph-broken",
            )
        if not got.retains_grad:
            return failed(
                f"{target}.retains_grad is False: call {target}.retain_grad() before backward()",
                "missing-retain-grad",
            )
        if not any(_filled(call.grads_after.get(target)) for call in trial.ok_learner_calls):
            return failed(
                f"no backward() call filled {target}.grad: call {target}.retain_grad() "
                "before backward()",
                "missing-retain-grad",
            )
        return passed(f"{target} kept its gradient with retain_grad()")

    return each_trial(learner, reference, one, f"{target} kept its gradient", options)


def _filled(grad: Value | None) -> bool:
    return isinstance(grad, TensorValue)
