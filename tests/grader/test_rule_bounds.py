"""Complexity bounds of the trusted grader's rules: each rule that reads a capture's
backward calls does work linear in the capture, proved on a worst-case capture at the
capture's own limits (grader/capture.py MAX_CALLS, MAX_NAMES, MAX_RESULT_BYTES).

Work is counted, never timed: `counted` runs a rule with a line tracer on the grader's
own frames and stops it once it has executed more lines than the bound allows (so a
quadratic rule fails at once instead of running for minutes).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Any, TypeVar

import pytest
from check_helpers import spec_of
from grading_helpers import call, script_capture, tensor
from test_grading_never_crashes import PACKAGES

import grader
from grader.capture import MAX_CALLS, MAX_NAMES, MAX_RESULT_BYTES, Capture, TensorValue
from grader.checks.compare import Tolerance
from grader.checks.diagnoses.provenance import grad_explained
from grader.checks.diagnoses.run import copied_too_early, grad_from_other_root
from grader.checks.registry import run_check
from grader.checks.trials import Trial, trials
from grader.report import build_report

# heavy: each counts the lines of a grading of captures at their limits
pytestmark = pytest.mark.heavy

GRADER = str(Path(grader.__file__).resolve().parent)
T = TypeVar("T")


class TooMuchWork(BaseException):  # run_check turns an Exception into an outcome
    pass


def counted(rule: Callable[[], T], limit: int) -> tuple[T, int]:
    """`rule()` and the number of grader lines it executed; raises TooMuchWork past
    `limit` lines."""
    executed = 0

    def local(frame: FrameType, event: str, arg: Any) -> Any:
        nonlocal executed
        if event == "line":
            executed += 1
            if executed > limit:
                raise TooMuchWork(f"more than {limit} lines executed")
        return local

    def outer(frame: FrameType, event: str, arg: Any) -> Any:
        return local if frame.f_code.co_filename.startswith(GRADER) else None

    previous = sys.gettrace()
    sys.settrace(outer)
    try:
        result = rule()
    finally:
        sys.settrace(previous)
    return result, executed


def within_limits(capture_calls: list[dict[str, Any]], variables: dict[str, Any]) -> Capture:
    capture = script_capture(variables, capture_calls)
    assert len(json.dumps(dict(capture.raw))) < MAX_RESULT_BYTES  # a capture the parser takes
    return capture


def fitting(one: dict[str, Any], fixed: int = 0) -> int:
    """How many calls like `one` a capture holds: MAX_CALLS, or fewer where its bytes
    would pass MAX_RESULT_BYTES (`fixed`: bytes the rest of the capture takes)."""
    size = len(json.dumps(one)) + 1
    return min(MAX_CALLS, (MAX_RESULT_BYTES * 9 // 10 - fixed) // size)


def trial_of(learner: Capture, reference: Capture) -> Trial:
    return next(trials(learner, reference))


def provenance_call(index: int) -> dict[str, Any]:
    entry = call(
        float(index),
        before={"x": tensor([float(index)])},
        after={"x": tensor([index + 0.5])},
    )
    entry["results"] = {"x": tensor([float(index)])}
    return entry


def test_grad_provenance_is_linear_in_calls_whose_grads_match_only_the_latest_result() -> None:
    # Each call's grad before it is the autograd.grad result recorded just before it:
    # searched from the first result, every call compares against all earlier ones.
    count = fitting(provenance_call(MAX_CALLS))
    calls = [provenance_call(index) for index in range(count)]
    last = count - 1 + 0.5
    capture = within_limits(calls, {"x": tensor([1.0], grad=[last], requires_grad=True)})
    value = capture.variables["x"]
    bound = 200 * count

    explained, lines = counted(
        lambda: grad_explained("x", value, capture.backward_calls, None), bound
    )

    assert count > 2_000
    assert explained is True  # every grad is one autograd produced
    assert lines <= bound


def test_a_copy_taken_early_is_found_in_one_pass_over_a_capture_of_many_names() -> None:
    # The last call records MAX_NAMES names; thousands of earlier calls record one each:
    # asking every earlier call for every name is names x calls.
    last = {f"n{i}": tensor([-1.0]) for i in range(MAX_NAMES - 1)}
    last["w"] = tensor([-2.0])  # what the last call left: not the value copied
    fixed = len(json.dumps(call(1.0, after=last)))
    count = fitting(call(1.0, after={"w": tensor([-123456.0])}), fixed)
    earlier = [call(1.0, after={"w": tensor([-float(i + 10)])}) for i in range(count - 1)]
    copied = call(1.0, after={"w": tensor([7.0])})
    capture = within_limits([*earlier, copied, call(1.0, after=last)], {})
    trial = trial_of(capture, capture)
    got = trial.learner_calls[-2].grads_after["w"]
    assert isinstance(got, TensorValue)
    bound = 200 * (count + MAX_NAMES)

    found, lines = counted(lambda: copied_too_early(trial, got, Tolerance()), bound)

    assert count > 2_000
    assert found is True  # w held 7 after an earlier call, not after the last
    assert lines <= bound


def test_a_root_is_matched_against_many_reference_losses_in_log_time() -> None:
    # Every learner call backpropagates from a root the reference's never passes
    # through, with the value of the reference's last loss: compared with the losses one
    # by one, each call scans them all.
    count = fitting({**call(123456.0), "graph": ["x", "y"], "roots": ["y"]}) // 2
    theirs = [{**call(float(i)), "graph": ["x", "y"], "roots": ["y"]} for i in range(count)]
    mine = [{**call(float(count - 1)), "graph": ["x"]} for _ in range(count)]
    trial = trial_of(within_limits(mine, {}), within_limits(theirs, {}))
    bound = 200 * count

    other, lines = counted(lambda: grad_from_other_root(trial, "x"), bound)

    assert count > 2_000
    assert other is False  # the reference's loss value: the same function, recomputed
    assert lines <= bound


def test_a_root_off_every_reference_loss_is_found() -> None:
    theirs = [{**call(float(i)), "graph": ["x", "y"], "roots": ["y"]} for i in range(50)]
    for loss, other in [(10.25, True), (10.0, False), (-3.0, True), (49.0000001, False)]:
        mine = [{**call(loss), "graph": ["x"]}]
        trial = trial_of(within_limits(mine, {}), within_limits(theirs, {}))
        assert grad_from_other_root(trial, "x") is other, loss


def test_counting_backward_calls_that_reach_graded_names_is_linear_in_large_graphs() -> None:
    # The reference's graph reaches MAX_NAMES names, each learner call's graph as many
    # others: asking each call, name by name, whether it reaches one scans its graph.
    theirs = [{**call(1.0), "graph": [f"n{i}" for i in range(MAX_NAMES)]}]
    one = {**call(1.0), "graph": [f"m{i}" for i in range(MAX_NAMES)]}
    count = fitting(one, len(json.dumps(theirs)))
    learner = within_limits([one] * count, {})
    reference = within_limits(theirs, {})
    bound = 200 * (count + MAX_NAMES)

    outcome, lines = counted(
        lambda: run_check(spec_of("backward_calls"), learner, reference), bound
    )

    assert count > 300
    assert not outcome.passed and not outcome.grading_error
    assert lines <= bound


def test_the_line_counter_stops_a_rule_that_does_more_work_than_its_bound() -> None:
    capture = within_limits([call(1.0) for _ in range(100)], {})
    with pytest.raises(TooMuchWork):
        counted(lambda: run_check(spec_of("backward_calls"), capture, capture), 10)


def test_leaves_held_at_many_calls_are_counted_in_one_pass_for_many_reference_names() -> None:
    # The reference's call holds MAX_NAMES tensors; thousands of learner calls hold one:
    # counting each name's objects over every call is names x calls.
    names = {f"n{i:03d}": i for i in range(MAX_NAMES)}
    theirs = [{**call(1.0), "identities": names}]
    one = {**call(1.0), "identities": {"n999": 5}}
    count = fitting(one, len(json.dumps(theirs)))
    learner = within_limits([one] * count, {})
    reference = within_limits(theirs, {})
    bound = 200 * (count + MAX_NAMES)

    outcome, lines = counted(lambda: run_check(spec_of("same_leaf"), learner, reference), bound)

    assert count > 2_000
    assert outcome.passed  # n999 stayed one tensor
    assert lines <= bound


def worst_call(index: int) -> dict[str, Any]:
    """A call that feeds every rule: grads before and after, an autograd.grad result,
    a graph, a root and an identity, each new at every call."""
    entry = call(
        float(index),
        before={"x": tensor([float(index)]), "w": tensor([1.0])},
        after={"x": tensor([index + 0.5]), "w": tensor([2.0])},
    )
    entry.update(
        results={"x": tensor([float(index)])},
        graph=["x", "w", "y"],
        roots=["y"],
        identities={"x": abs(index), "w": 1},
        onto_stale=True,
    )
    return entry


def test_every_check_type_judges_a_capture_at_its_limits_with_linear_work() -> None:
    count = fitting(worst_call(MAX_CALLS))
    variables = {
        "x": tensor([1.0], grad=[count - 0.5], requires_grad=True),
        "w": tensor([1.0], grad=[2.0], requires_grad=True),
        "y": tensor([1.0], requires_grad=True, is_leaf=False, grad_fn="AddBackward0"),
    }
    learner = within_limits([worst_call(index) for index in range(count)], variables)
    reference = within_limits([worst_call(-index) for index in range(1, 4)], variables)
    package = PACKAGES["script"]
    bound = 40 * len(package.manifest.checks) * count

    report, lines = counted(lambda: build_report(package, learner, reference, "", 0.0), bound)

    assert count > 2_000
    assert report.status == "graded" and len(report.checks) == len(package.manifest.checks)
    assert not any(flag.kind == "grading-error" for flag in report.integrity_flags)
    assert lines <= bound, lines
