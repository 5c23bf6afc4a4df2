"""Shortcut checks (FORMAT.md section 4): the values are right, but did the run use the
technique the statement asks for? Each compares what the recorder saw the learner's run
do with what it saw the reference's do (grader.checks.diagnoses.shortcuts), so an honest
answer written unlike the reference passes and a shortcut with the right numbers fails:

- `double_backward`: derivatives taken with create_graph were differentiated again
  (`no-double-backward`: finite differences or a formula instead);
- `graph_reused`: as many calls went through a graph an earlier call had gone through
  (`graph-not-reused`: the graph rebuilt instead of retained);
- `same_leaf`: each named tensor stays the same object at every backward call where the
  reference's does (`leaf-recreated`: a new leaf each step instead of an in-place update).
"""

from __future__ import annotations

from dataclasses import dataclass

from grader.capture import Capture
from grader.checks.base import CheckSpec, Outcome, each_trial, failed, passed
from grader.checks.diagnoses import shortcuts
from grader.checks.options import CheckOptions, listed_names, option, options_of
from grader.checks.trials import Trial


def _plural(amount: int, word: str) -> str:
    return f"{amount} {word}" + ("" if amount == 1 else "s")


def check_double_backward(learner: Capture, reference: Capture, spec: CheckSpec) -> Outcome:
    """As many first derivatives (taken with create_graph) differentiated again as in the
    reference's run."""
    options = options_of(spec.options, CheckOptions)

    def one(trial: Trial) -> Outcome:
        needed = shortcuts.differentiated(trial.ok_reference_calls) or 0
        done = shortcuts.differentiated(trial.ok_learner_calls)
        if done is None or done >= needed:
            return passed(f"{_plural(needed, 'derivative')} differentiated again by autograd")
        return failed(
            f"{_plural(done, 'derivative')} taken with create_graph=True and differentiated "
            f"again, expected {needed}: a second derivative must come from a backward() or "
            "torch.autograd.grad through the first derivative's own graph, not from finite "
            "differences or a formula",
            "no-double-backward",
        )

    return each_trial(learner, reference, one, "derivatives differentiated by autograd", options)


def check_graph_reused(learner: Capture, reference: Capture, spec: CheckSpec) -> Outcome:
    """As many successful calls went through an already used graph as in the reference's
    run (a graph kept with retain_graph=True and backpropagated through again)."""
    options = options_of(spec.options, CheckOptions)

    def one(trial: Trial) -> Outcome:
        mine = shortcuts.reusing(trial.ok_learner_calls)
        theirs = shortcuts.reusing(trial.ok_reference_calls)
        if mine >= theirs:
            return passed("the retained graph was used again")
        return failed(
            f"{_plural(mine, 'successful backward call')} went through a graph an earlier "
            f"call had used, expected {theirs}: the graph was built again instead of being "
            "retained and reused (call backward() again on the same tensor)",
            "graph-not-reused",
        )

    return each_trial(learner, reference, one, "the retained graph was used again", options)


@dataclass(frozen=True)
class SameLeafOptions(CheckOptions):
    """`same_leaf`: the tracked names that must keep their tensor (default: all)."""

    names: tuple[str, ...] | None = option(None, listed_names)


def check_same_leaf(learner: Capture, reference: Capture, spec: CheckSpec) -> Outcome:
    """Each name (of `names`) holds the same tensor object at every backward call where
    the reference's does: parameters updated in place, not re-created."""
    options = options_of(spec.options, SameLeafOptions)

    def one(trial: Trial) -> Outcome:
        mine, theirs = trial.ok_learner_calls, trial.ok_reference_calls
        held_theirs = shortcuts.objects_held(theirs)
        held_mine = shortcuts.objects_held(mine)
        names = options.names or sorted(held_theirs)
        for name in names:
            if shortcuts.recreated(held_mine, held_theirs, name):
                held = held_mine[name]
                return failed(
                    f"{name} was a new tensor at {held - 1} of the {len(mine)} backward "
                    f"calls: update {name} in place under torch.no_grad() (e.g. "
                    f"{name} -= lr * {name}.grad) so that it stays the same leaf tensor",
                    "leaf-recreated",
                )
        return passed("the parameters stayed the same leaf tensors, updated in place")

    return each_trial(learner, reference, one, "the parameters were updated in place", options)
