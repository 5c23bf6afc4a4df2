"""Skill checks (grader/checks/skills.py) and `module_param`, on hand-built captures: what
each reads of the case runner's "@watch" observation or of the recorded backward calls,
and the mistake it names (pure and fast)."""

from __future__ import annotations

from typing import Any

import pytest
from check_helpers import CONTEXT, run
from grading_helpers import call, function_capture, script_capture, tensor

from grader.checks.options import OptionError
from grader.checks.registry import parse_options


def number(value: int | bool) -> dict[str, Any]:
    if isinstance(value, bool):
        return {"kind": "bool", "value": value}
    return {"kind": "number", "value": value}


def table(**items: Any) -> dict[str, Any]:
    return {
        "kind": "dict",
        "items": {k: table(**v) if isinstance(v, dict) else number(v) for k, v in items.items()},
    }


def phase(calls: int = 0, ops: int = 0, pushed: int = 0) -> dict[str, int]:
    return {"autograd_calls": calls, "graph_ops": ops, "hooks_pushed": pushed}


def watched(**parts: Any) -> Any:
    """A one-case function capture whose case carries the given @watch parts."""
    return function_capture([{"observations": {"@watch": table(**parts)}, "calls": []}])


HONEST_FUNCTION = {"subclass": True, "own_node": True, "graph_kept": False}
QUIET = {"call": phase(ops=1), "backward": phase()}  # save_for_backward packs in the call


def test_a_function_whose_backward_computes_by_hand_passes() -> None:
    both = watched(function=HONEST_FUNCTION, autograd=QUIET)
    assert run("autograd_function", both, both).passed


@pytest.mark.parametrize(
    ("function", "autograd", "slug"),
    [
        ({**HONEST_FUNCTION, "subclass": False, "own_node": False}, QUIET,
         "not-an-autograd-function"),
        ({**HONEST_FUNCTION, "own_node": False}, QUIET, "not-an-autograd-function"),
        (HONEST_FUNCTION, {**QUIET, "backward": phase(calls=1)}, "autograd-in-backward"),
        (HONEST_FUNCTION, {**QUIET, "backward": phase(ops=3)}, "autograd-in-backward"),
        (HONEST_FUNCTION, {**QUIET, "backward": phase(pushed=1)}, "autograd-in-backward"),
        ({**HONEST_FUNCTION, "graph_kept": True}, QUIET, "autograd-in-backward"),
    ],
    ids=["plain-class", "apply-replaced", "grad-call", "graph-built", "hooks-pushed",
         "graph-kept"],
)  # fmt: skip
def test_a_function_that_is_not_one_or_uses_autograd_in_backward_is_named(
    function: dict[str, bool], autograd: dict[str, Any], slug: str
) -> None:
    reference = watched(function=HONEST_FUNCTION, autograd=QUIET)
    outcome = run("autograd_function", watched(function=function, autograd=autograd), reference)
    assert not outcome.passed
    assert outcome.diagnosis == slug


def test_a_case_without_the_watch_fails_instead_of_passing() -> None:
    reference = watched(function=HONEST_FUNCTION, autograd=QUIET)
    learner = function_capture([{"observations": {}, "calls": []}])
    assert not run("autograd_function", learner, reference).passed
    assert not run("no_autograd", learner, reference).passed
    assert not run("max_batch", learner, reference).passed


@pytest.mark.parametrize(
    ("counts", "passed"),
    [(phase(), True), (phase(calls=1), False), (phase(ops=4), False), (phase(pushed=1), False)],
)
def test_no_autograd_fails_on_any_call_graph_or_hidden_hook_in_its_phase(
    counts: dict[str, int], passed: bool
) -> None:
    reference = watched(autograd={"call": phase(), "backward": phase()})
    learner = watched(autograd={"call": counts, "backward": phase()})
    outcome = run("no_autograd", learner, reference)
    assert outcome.passed is passed
    if not passed:
        assert outcome.diagnosis == "used-autograd"


def test_no_autograd_counts_the_recorded_backward_calls_of_the_case_too() -> None:
    reference = watched(autograd={"call": phase(), "backward": phase()})
    learner = function_capture(
        [{"observations": {"@watch": table(autograd={"call": phase(), "backward": phase()})},
          "calls": [call(0.5)]}]
    )  # fmt: skip
    assert run("no_autograd", learner, reference).diagnosis == "used-autograd"


def test_no_autograd_judges_only_the_phase_it_names() -> None:
    reference = watched(autograd={"call": phase(), "backward": phase()})
    learner = watched(autograd={"call": phase(ops=2), "backward": phase()})
    assert run("no_autograd", learner, reference, during="backward").passed
    assert not run("no_autograd", learner, reference, during="call").passed


def batch(largest: int, samples: int, intact: bool = True) -> Any:
    return watched(batch={"largest": largest, "samples": samples, "hooks_intact": intact})


@pytest.mark.parametrize(
    ("learner", "slug"),
    [
        (batch(2, 4), ""),
        (batch(1, 4), ""),  # smaller micro-batches are fine
        (batch(4, 4), "batch-too-large"),  # one full-batch forward
        (batch(2, 0), "layers-bypassed"),  # the weights used by hand
        (batch(2, 2), "layers-bypassed"),  # half the data went around the layers
        (batch(2, 4, intact=False), "layers-bypassed"),
    ],
)
def test_max_batch_compares_with_the_references_micro_batches(learner: Any, slug: str) -> None:
    outcome = run("max_batch", learner, batch(2, 4))
    assert outcome.passed is (slug == "")
    assert outcome.diagnosis == slug


def retained(*, retains: bool = True, leaf: bool = False) -> dict[str, Any]:
    return {
        **tensor([6.0], [], grad=[12.0], requires_grad=True, is_leaf=leaf,
                 grad_fn=None if leaf else "MulBackward0"),
        "retains_grad": retains,
    }  # fmt: skip


FILLED = call(36.0, before={"y": None}, after={"y": tensor([12.0], [])})
EMPTY = call(36.0, before={"y": None}, after={"y": None})


@pytest.mark.parametrize(
    ("value", "calls", "slug"),
    [
        (retained(), [FILLED], ""),
        (retained(retains=False), [EMPTY], "missing-retain-grad"),  # .grad typed in after
        (retained(), [EMPTY], "missing-retain-grad"),  # retain_grad() only after backward
        (retained(retains=False), [FILLED], "missing-retain-grad"),  # a hook set .grad
        (retained(leaf=True), [FILLED], "graph-broken"),
    ],
    ids=["retained", "written-after", "retained-too-late", "hook-wrote-grad", "leaf"],
)
def test_retains_grad_needs_the_flag_and_a_backward_that_filled_the_grad(
    value: dict[str, Any], calls: list[dict[str, Any]], slug: str
) -> None:
    reference = script_capture({"y": retained()}, [FILLED])
    outcome = run("retains_grad", script_capture({"y": value}, calls), reference, "y")
    assert outcome.passed is (slug == "")
    assert outcome.diagnosis == slug


def linear(weight: float, bias: float) -> dict[str, Any]:
    return {
        "kind": "module",
        "type": "Linear",
        "params": {
            "weight": tensor([weight], [1, 1], requires_grad=True),
            "bias": tensor([bias], [1], requires_grad=True),
        },
    }


def test_a_modules_parameter_stands_in_for_a_named_tensor_only_where_declared() -> None:
    reference = script_capture({"w": tensor([2.0], [], requires_grad=True)})
    learner = script_capture({"model": linear(1.99, 0.01)})
    assert run("value", learner, reference, "w", module_param="model.weight", atol=0.05).passed
    assert not run("value", learner, reference, "w", atol=0.05).passed
    wrong = script_capture({"model": linear(1.5, 0.0)})
    assert not run("value", wrong, reference, "w", module_param="model.weight", atol=0.05).passed


def test_a_tensor_under_the_name_wins_over_the_module() -> None:
    reference = script_capture({"w": tensor([2.0], [], requires_grad=True)})
    learner = script_capture({"w": tensor([0.0], []), "model": linear(2.0, 0.0)})
    assert not run("value", learner, reference, "w", module_param="model.weight").passed


def test_module_param_must_name_a_listed_variable_and_a_parameter() -> None:
    for bad in ("weight", "net.weight", "model.", 3):
        with pytest.raises(OptionError) as raised:
            parse_options("value", {"module_param": bad}, CONTEXT)
        assert raised.value.field == "module_param"
