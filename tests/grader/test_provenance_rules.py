"""Gradient provenance on hand-built captures: a final .grad that is not what the last
backward left is hard-coded (whatever backward calls ran), a stored autograd.grad result
is not; a backward from another root than the reference's is named; parameters changed
outside the optimizer are named where the reference trains with one; an expected error
must come from a backward on the exercise's tensors; a missing grad is named for why it
is missing (cleared, never stored, left out by inputs=, skipped after an error, a cut
graph); the freed-graph error on a call that had to succeed; exceptions compare with
isinstance semantics; the new capture fields are validated."""

from __future__ import annotations

import json
from typing import Any

import pytest
from check_helpers import run
from grading_helpers import call, function_capture, script_capture, tensor

from grader.capture import CaptureError, validate_capture

NONSCALAR = "grad can be implicitly created only for scalar outputs"
FREED = "Trying to backward through the graph a second time"


def scalar(value: float, grad: float | None = None, **facts: Any) -> dict[str, Any]:
    return tensor([value], [], grad=None if grad is None else [grad], **facts)


def grad_of(value: float) -> dict[str, Any]:
    return tensor([value], [])


def traced(
    *,
    api: str = "Tensor.backward",
    roots: list[str] | None = None,
    graph: list[str] | None = None,
    inputs: list[str] | None = None,
    results: dict[str, Any] | None = None,
    mro: list[str] | None = None,
    **options: Any,
) -> dict[str, Any]:
    """A backward call with its provenance (what the harness records)."""
    made = call(**options)
    made.update(api=api, roots=roots or [], graph=graph, inputs=inputs, results=results or {})
    if made["error"] is not None and mro is not None:
        made["error"]["mro"] = mro
    return made


def with_fields(capture: Any, **fields: Any) -> Any:
    raw = json.loads(json.dumps(dict(capture.raw)))
    raw.update(fields)
    return validate_capture(raw)


# -- hard-coded after a backward -------------------------------------------------------

REFERENCE_X = script_capture(
    {"x": scalar(5.0, 10.0, requires_grad=True)},
    [traced(roots=["y"], graph=["x", "y"], after={"x": grad_of(10.0)})],
)


def test_a_grad_added_by_hand_after_a_zero_gradient_backward_is_hard_coded() -> None:
    learner = script_capture(
        {"x": scalar(5.0, 10.0, requires_grad=True)},
        [traced(roots=["y"], graph=["x", "y"], after={"x": grad_of(0.0)}, gradient_given=True)],
    )
    outcome = run("grad", learner, REFERENCE_X, "x")
    assert (outcome.passed, outcome.diagnosis) == (False, "hard-coded")
    assert "last backward" in outcome.message


def test_the_grad_the_last_backward_left_passes() -> None:
    learner = script_capture(
        {"x": scalar(5.0, 10.0, requires_grad=True)},
        [traced(roots=["y"], graph=["x", "y"], after={"x": grad_of(10.0)})],
    )
    assert run("grad", learner, REFERENCE_X, "x").passed


def test_an_autograd_grad_result_stored_into_grad_by_hand_passes() -> None:
    learner = script_capture(
        {"x": scalar(5.0, 10.0, requires_grad=True)},
        [traced(api="autograd.grad", roots=["y"], graph=["x", "y"], inputs=["x"],
                results={"x": grad_of(10.0)})],
    )  # fmt: skip
    assert run("grad", learner, REFERENCE_X, "x").passed


def test_an_autograd_grad_result_changed_before_it_is_stored_is_hard_coded() -> None:
    learner = script_capture(
        {"x": scalar(5.0, 10.0, requires_grad=True)},
        [traced(api="autograd.grad", roots=["y"], graph=["x", "y"], inputs=["x"],
                results={"x": grad_of(5.0)})],
    )  # fmt: skip
    assert run("grad", learner, REFERENCE_X, "x").diagnosis == "hard-coded"


def test_the_grads_after_the_last_backward_come_from_the_provenance_record() -> None:
    """Beyond the calls whose grads are recorded, the last backward's grads still are."""
    learner = script_capture({"x": scalar(5.0, 10.0, requires_grad=True)}, [traced()])
    left = {"calls": 1, "last_backward": {"index": 0, "grads_after": {"x": grad_of(0.0)}}}
    assert run("grad", with_fields(learner, provenance=left), REFERENCE_X, "x").diagnosis == (
        "hard-coded"
    )
    right = {"calls": 1, "last_backward": {"index": 0, "grads_after": {"x": grad_of(10.0)}}}
    assert run("grad", with_fields(learner, provenance=right), REFERENCE_X, "x").passed


def test_a_grad_written_by_hand_and_topped_up_by_a_zero_backward_is_hard_coded() -> None:
    """x.grad = 10 by hand, then (x * 0).backward(): the last backward left 10 there."""
    learner = script_capture(
        {"x": scalar(5.0, 10.0, requires_grad=True)},
        [traced(graph=["x"], before={"x": grad_of(10.0)}, after={"x": grad_of(10.0)})],
    )
    assert run("grad", learner, REFERENCE_X, "x").diagnosis == "hard-coded"
    honest = script_capture(
        {"x": scalar(5.0, 20.0, requires_grad=True)},
        [
            traced(graph=["x", "y"], before={"x": None}, after={"x": grad_of(10.0)}),
            traced(graph=["x", "y"], before={"x": grad_of(10.0)}, after={"x": grad_of(20.0)}),
        ],
    )
    assert run("grad", honest, REFERENCE_X, "x").diagnosis == "forgot-zero-grad"


def test_the_rule_holds_only_where_the_reference_keeps_what_its_backward_left() -> None:
    """A reference that changes .grad itself (clipping, say) switches the rule off."""
    reference = script_capture(
        {"x": scalar(5.0, 10.0, requires_grad=True)},
        [traced(roots=["y"], graph=["x", "y"], after={"x": grad_of(20.0)})],
    )
    learner = script_capture(
        {"x": scalar(5.0, 10.0, requires_grad=True)},
        [traced(roots=["y"], graph=["x", "y"], after={"x": grad_of(0.0)})],
    )
    assert run("grad", learner, reference, "x").passed


def test_a_wrong_value_written_after_the_backward_is_named_hard_coded() -> None:
    learner = script_capture(
        {"x": scalar(5.0, 7.0, requires_grad=True)},
        [traced(roots=["y"], graph=["x", "y"], after={"x": grad_of(0.0)})],
    )
    assert run("grad", learner, REFERENCE_X, "x").diagnosis == "hard-coded"


# -- the root of the backward call -----------------------------------------------------

LINEAR = ["b", "loss", "prediction", "w"]
REFERENCE_W = script_capture(
    {"w": scalar(3.0, -12.0, requires_grad=True)},
    [traced(roots=["loss"], graph=LINEAR, after={"w": grad_of(-12.0)})],
)


def test_a_backward_from_the_prediction_instead_of_the_loss_is_named() -> None:
    learner = script_capture(
        {"w": scalar(3.0, 2.0, requires_grad=True)},
        [traced(roots=["prediction"], graph=["b", "prediction", "w"], after={"w": grad_of(2.0)})],
    )
    assert run("grad", learner, REFERENCE_W, "w").diagnosis == "wrong-backward-root"


def test_a_backward_from_a_throw_away_tensor_is_named() -> None:
    reference = script_capture(
        {"w": scalar(3.0, -12.0, requires_grad=True)},
        [traced(graph=["w"], after={"w": grad_of(-12.0)})],
    )
    learner = script_capture({"w": scalar(3.0, requires_grad=True)}, [traced(graph=[])])
    assert run("grad", learner, reference, "w").diagnosis == "wrong-backward-root"


def test_the_expected_grad_from_an_engineered_root_is_the_wrong_root() -> None:
    """(x * 10).backward() gives d(x**2)/dx at x = 5 without backpropagating from y."""
    engineered = script_capture(
        {"x": scalar(5.0, 10.0, requires_grad=True)},
        [traced(loss=50.0, graph=["x"], after={"x": grad_of(10.0)})],
    )
    reference = script_capture(
        {"x": scalar(5.0, 10.0, requires_grad=True)},
        [traced(loss=25.0, roots=["y"], graph=["x", "y"], after={"x": grad_of(10.0)})],
    )
    assert run("grad", engineered, reference, "x").diagnosis == "wrong-backward-root"
    recomputed = script_capture(
        {"x": scalar(5.0, 10.0, requires_grad=True)},
        [traced(loss=25.0, graph=["x"], after={"x": grad_of(10.0)})],
    )
    assert run("grad", recomputed, reference, "x").passed


def test_a_model_tracked_under_another_name_is_not_a_wrong_root() -> None:
    """w and b, or model.weight and model.bias: a graph through the model is no throw-away."""
    reference = script_capture({"w": scalar(2.0, requires_grad=True)}, [traced(graph=["b", "w"])])
    learner = script_capture({"w": scalar(1.5, requires_grad=True)}, [traced(graph=["model"])])
    assert run("value", learner, reference, "w").diagnosis == "wrong-value"


def test_a_backward_through_the_negated_loss_keeps_its_sign_error() -> None:
    learner = script_capture(
        {"w": scalar(3.0, 12.0, requires_grad=True)},
        [traced(graph=LINEAR, after={"w": grad_of(12.0)})],
    )
    assert run("grad", learner, REFERENCE_W, "w").diagnosis == "sign-error"


# -- parameters changed outside the optimizer ------------------------------------------


def step(index: int, before: float, after: float) -> dict[str, Any]:
    return {"index": index, "before": {"w": grad_of(before)}, "after": {"w": grad_of(after)}}


def trained(final: float, steps: list[dict[str, Any]]) -> Any:
    capture = script_capture({"w": scalar(final, requires_grad=True)}, [traced(graph=["w"])])
    log = {"calls": 1, "steps": steps, "last_step": steps[-1] if steps else None}
    return with_fields(capture, provenance=log, optimizer_steps=len(steps))


def test_parameters_set_by_hand_after_training_are_named() -> None:
    reference = trained(2.0, [step(0, 0.0, 1.0), step(1, 1.0, 2.0)])
    learner = trained(2.0, [step(0, 0.0, 0.5), step(1, 0.5, 1.0)])
    outcome = run("value", learner, reference, "w")
    assert (outcome.passed, outcome.diagnosis) == (False, "params-edited")
    assert run("value", trained(2.0, [step(0, 0.0, 1.5), step(1, 1.5, 2.0)]), reference, "w").passed


def test_parameters_changed_between_two_steps_are_named() -> None:
    reference = trained(2.0, [step(0, 0.0, 1.0), step(1, 1.0, 2.0)])
    learner = trained(2.0, [step(0, 0.0, 0.5), step(1, 1.5, 2.0)])
    assert run("value", learner, reference, "w").diagnosis == "params-edited"


def model_step(index: int, before: tuple[float, float], after: tuple[float, float]) -> Any:
    def params(values: tuple[float, float]) -> dict[str, Any]:
        weight, bias = values
        return {"kind": "dict", "items": {"weight": grad_of(weight), "bias": grad_of(bias)}}

    return {"index": index, "before": {"model": params(before)}, "after": {"model": params(after)}}


def trained_model(final: tuple[float, float], steps: list[dict[str, Any]]) -> Any:
    """An nn.Linear-like module `model` trained in `steps`, holding `final` at the end."""
    weight, bias = final
    model = {
        "kind": "module",
        "type": "Linear",
        "params": {
            "weight": scalar(weight, requires_grad=True),
            "bias": scalar(bias, requires_grad=True),
        },
    }
    capture = script_capture({"model": model}, [traced(graph=["model"])])
    log = {"calls": 1, "steps": steps, "last_step": steps[-1]}
    return with_fields(capture, provenance=log, optimizer_steps=len(steps))


def test_a_models_parameter_set_by_hand_is_named_through_module_param() -> None:
    """model.weight read for the reference's w: its own steps judge it, not the bias's."""
    reference = trained(2.0, [step(0, 0.0, 1.0), step(1, 1.0, 2.0)])
    steps = [model_step(0, (0.0, 0.0), (0.5, 0.2)), model_step(1, (0.5, 0.2), (1.0, 0.4))]
    learner = trained_model((2.0, 0.4), steps)
    outcome = run("value", learner, reference, "w", module_param="model.weight")
    assert (outcome.passed, outcome.diagnosis) == (False, "params-edited")
    honest = trained_model((2.0, 9.9), [*steps[:1], model_step(1, (0.5, 0.2), (2.0, 9.9))])
    assert run("value", honest, reference, "w", module_param="model.weight").passed


def test_updates_by_hand_are_fine_where_the_reference_uses_no_optimizer() -> None:
    reference = script_capture({"w": scalar(2.0, requires_grad=True)}, [traced(graph=["w"])])
    learner = trained(2.0, [step(0, 0.0, 0.5)])
    assert run("value", learner, reference, "w").passed


# -- an expected error must come from the exercise's tensors ---------------------------


def text(value: str) -> dict[str, Any]:
    return {"kind": "str", "value": value}


MESSAGE_REFERENCE = script_capture(
    {"e": text(NONSCALAR)}, [traced(roots=["y"], graph=["x", "y"], error=NONSCALAR), traced()]
)


def test_an_error_from_a_throw_away_tensor_beside_a_typed_message_is_hard_coded() -> None:
    learner = script_capture({"e": text(NONSCALAR)}, [traced(graph=[], error=NONSCALAR), traced()])
    outcome = run("message", learner, MESSAGE_REFERENCE, "e")
    assert (outcome.passed, outcome.diagnosis) == (False, "hard-coded")


def test_the_same_error_from_a_tensor_of_the_exercise_passes() -> None:
    learner = script_capture({"e": text(NONSCALAR)}, [traced(graph=["x"], error=NONSCALAR)])
    assert run("message", learner, MESSAGE_REFERENCE, "e").passed


# -- why a grad is missing -------------------------------------------------------------


def missing(calls: list[dict[str, Any]], exception: dict[str, Any] | None = None) -> str:
    learner = script_capture({"x": scalar(5.0, requires_grad=True)}, calls, exception=exception)
    return run("grad", learner, REFERENCE_X, "x").diagnosis


def test_a_grad_filled_by_backward_and_set_to_none_afterwards_is_grad_cleared() -> None:
    assert missing([traced(graph=["x", "y"], after={"x": grad_of(10.0)})]) == "grad-cleared"


def test_a_grad_zeroed_after_the_backward_is_grad_cleared() -> None:
    learner = script_capture(
        {"x": scalar(5.0, 0.0, requires_grad=True)},
        [traced(graph=["x", "y"], after={"x": grad_of(10.0)})],
    )
    assert run("grad", learner, REFERENCE_X, "x").diagnosis == "grad-cleared"


def test_an_autograd_grad_result_never_stored_is_grad_not_stored() -> None:
    dropped = traced(api="autograd.grad", graph=["x", "y"], inputs=["x"],
                     results={"x": grad_of(10.0)})  # fmt: skip
    assert missing([dropped]) == "grad-not-stored"


def test_a_leaf_left_out_of_backward_inputs_is_inputs_excluded() -> None:
    assert missing([traced(graph=["w", "x", "y"], inputs=["w"])]) == "inputs-excluded"


def test_a_backward_skipped_after_an_error_in_the_same_try_is_named() -> None:
    reference = script_capture(
        {"x": scalar(5.0, 10.0, requires_grad=True)},
        [traced(graph=["x", "y"], error=NONSCALAR), traced(after={"x": grad_of(10.0)})],
    )
    learner = script_capture(
        {"x": scalar(5.0, requires_grad=True)}, [traced(graph=["x", "y"], error=NONSCALAR)]
    )
    assert run("grad", learner, reference, "x").diagnosis == "backward-skipped"


def test_a_backward_whose_graph_never_reached_the_leaf_is_graph_broken() -> None:
    assert missing([traced(graph=["y"])]) == "graph-broken"


# -- freed graph, exceptions, Jacobians ------------------------------------------------


def test_the_freed_graph_error_on_a_call_that_had_to_succeed_is_named() -> None:
    reference = script_capture(
        {"x": scalar(2.0, 8.0, requires_grad=True)},
        [traced(retain_graph=True), traced(), traced(error=FREED)],
    )
    learner = script_capture(
        {"x": scalar(2.0, 4.0, requires_grad=True)}, [traced(), traced(error=FREED)]
    )
    assert run("grad", learner, reference, "x").diagnosis == "freed-graph"
    later = script_capture(
        {"x": scalar(2.0, 4.0, requires_grad=True)}, [traced(), traced(), traced(error=FREED)]
    )
    assert run("grad", later, reference, "x").diagnosis != "freed-graph"


def raised(name: str, mro: list[str]) -> dict[str, Any]:
    return {"type": name, "message": "no graph", "line": 3, "traceback": "", "mro": mro}


VALUE_ERROR = ["builtins.ValueError", "builtins.Exception", "builtins.BaseException"]


@pytest.mark.parametrize(
    ("name", "mro", "passes"),
    [
        ("NoGraphError", ["submission.NoGraphError", *VALUE_ERROR], True),
        ("ValueError", VALUE_ERROR, True),
        ("RuntimeError", ["builtins.RuntimeError", *VALUE_ERROR[1:]], False),
        ("ValueError", ["submission.ValueError", *VALUE_ERROR[1:]], False),
    ],
    ids=["subclass", "same", "other", "look-alike"],
)
def test_an_exception_check_uses_isinstance_semantics(
    name: str, mro: list[str], passes: bool
) -> None:
    reference = function_capture([{"exception": raised("ValueError", VALUE_ERROR)}])
    learner = function_capture([{"exception": raised(name, mro)}], reference=False)
    assert run("raises", learner, reference).passed is passes


def test_one_backward_per_element_of_a_vector_root_is_the_full_jacobian() -> None:
    vector = call(None)
    vector["loss_shape"] = [3]
    reference = function_capture([{"calls": [vector]}])
    rows = function_capture([{"calls": [call(), call(), call()]}], reference=False)
    assert run("backward_calls", rows, reference, count=True).diagnosis == "full-jacobian"
    twice = function_capture([{"calls": [call(), call()]}], reference=False)
    assert run("backward_calls", twice, reference, count=True).diagnosis != "full-jacobian"


# -- the capture's new fields are untrusted --------------------------------------------


@pytest.mark.parametrize(
    ("field", "bad"),
    [
        ("roots", "x"),
        ("roots", [1]),
        ("graph", {"x": 1}),
        ("inputs", ["x"] * 1_001),
        ("results", []),
        ("results", {"x": {"kind": "tensor"}}),
    ],
)
def test_malformed_call_provenance_is_a_capture_error(field: str, bad: Any) -> None:
    raw = json.loads(json.dumps(dict(script_capture({}, [traced()]).raw)))
    raw["backward_calls"][0][field] = bad
    with pytest.raises(CaptureError):
        validate_capture(raw)


@pytest.mark.parametrize(
    "bad",
    [
        [],
        {"last_backward": {"index": -1}},
        {"last_backward": {"index": 0, "grads_after": []}},
        {"steps": {}},
        {"steps": [{"index": 0, "before": {"w": 1.0}}]},
        {"steps": [step(0, 0.0, 1.0)] * 2_001},
        {"last_step": {"index": "0"}},
        {"grad_results": {"x": "10"}},
    ],
)
def test_malformed_provenance_is_a_capture_error(bad: Any) -> None:
    raw = json.loads(json.dumps(dict(script_capture({}).raw)))
    raw["provenance"] = bad
    with pytest.raises(CaptureError):
        validate_capture(raw)


def test_a_malformed_mro_or_retains_grad_is_a_capture_error() -> None:
    raw = json.loads(json.dumps(dict(script_capture({"x": scalar(1.0)}).raw)))
    raw["variables"]["x"]["retains_grad"] = "yes"
    with pytest.raises(CaptureError):
        validate_capture(raw)
    raw = json.loads(json.dumps(dict(script_capture({}).raw)))
    raw["exception"] = raised("ValueError", [1])  # type: ignore[list-item]
    with pytest.raises(CaptureError):
        validate_capture(raw)
