"""The rules of grader.diagnose that name the real mistake, on plain numbers and on
hand-built captures: ratios (sign, mean/sum, accumulation), loss curves, course error
messages, no backward vs hard-coded vs a cut graph, caught vs typed error messages, loss
curves judged by their properties, check-level fallbacks, history variants, the device
check, one backward per optimizer step, and the expected-vs-got data of failed checks."""

from __future__ import annotations

import json
from typing import Any

import pytest
from check_helpers import run
from grading_helpers import call, function_capture, script_capture, tensor

from grader.capture import validate_capture
from grader.checks.base import Outcome
from grader.checks.diagnoses.catalogue import DIAGNOSES
from grader.checks.diagnoses.curves import curve_slug
from grader.checks.diagnoses.differences import ratio_slug
from grader.checks.diagnoses.errors import error_slug

NONSCALAR = "grad can be implicitly created only for scalar outputs"


def reference_x(grad: list[float]) -> Any:
    return script_capture({"x": tensor([1.0] * len(grad), grad=grad, requires_grad=True)})


def text(value: str) -> dict[str, Any]:
    return {"kind": "str", "value": value}


def with_steps(capture: Any, steps: int) -> Any:
    raw = json.loads(json.dumps(dict(capture.raw)))
    raw["optimizer_steps"] = steps
    return validate_capture(raw)


def test_a_leaf_without_grad_and_no_backward_call_is_no_backward() -> None:
    learner = script_capture({"x": tensor([1.0], requires_grad=True)}, calls=[])
    assert run("grad", learner, reference_x([3.0]), "x").diagnosis == "no-backward"


def test_a_non_leaf_without_grad_and_no_backward_call_is_no_backward() -> None:
    inner = tensor([1.0], requires_grad=True, is_leaf=False, grad_fn="MulBackward0")
    learner = script_capture({"x": inner}, calls=[])
    assert run("grad", learner, reference_x([3.0]), "x").diagnosis == "no-backward"


def test_a_leaf_that_does_not_require_grad_after_a_backward_is_graph_broken() -> None:
    learner = script_capture({"x": tensor([1.0])})
    assert run("grad", learner, reference_x([3.0]), "x").diagnosis == "graph-broken"


def test_no_backward_call_is_hard_coded_only_when_the_expected_grad_is_there() -> None:
    reference = reference_x([3.0])
    typed = script_capture({"x": tensor([1.0], grad=[3.0])}, calls=[])
    assert run("backward_calls", typed, reference, count=True).diagnosis == "hard-coded"
    other = script_capture({"x": tensor([1.0], grad=[7.0])}, calls=[])
    assert run("backward_calls", other, reference, count=True).diagnosis == "no-backward"
    history = run("grad_history", script_capture({"x": tensor([1.0])}, []), reference, "x")
    assert history.diagnosis == "no-backward"


def test_a_message_the_reference_caught_must_come_from_an_error_the_learner_hit() -> None:
    reference = script_capture({"e": text(NONSCALAR)}, [call(None, error=NONSCALAR), call()])
    caught = script_capture({"e": text(NONSCALAR)}, [call(None, error=NONSCALAR), call()])
    assert run("message", caught, reference, "e").passed
    typed = script_capture({"e": text(NONSCALAR)}, [call()])
    outcome = run("message", typed, reference, "e")
    assert (outcome.passed, outcome.diagnosis) == (False, "hard-coded")


def test_a_message_the_reference_did_not_get_from_an_error_may_be_any_string() -> None:
    reference = script_capture({"e": text("done")})
    assert run("message", script_capture({"e": text("all done")}), reference, "e").passed


def properties(learner: Any, reference: Any) -> Outcome:
    options = {"mode": "properties", "falls": True, "final_below": 0.01}
    return run("loss_curve", learner, reference, **options)


def test_properties_mode_ignores_the_reference_step_count() -> None:
    reference = script_capture({}, [call(4.0), call(0.001)])
    flat = script_capture({}, [call(4.0)] * 6)
    assert properties(flat, reference).diagnosis == "loss-flat"


def test_properties_mode_names_a_curve_that_falls_but_not_far_enough_not_converged() -> None:
    reference = script_capture({}, [call(4.0), call(0.001)])
    slow = script_capture({}, [call(4.0), call(3.0), call(2.0)])
    assert properties(slow, reference).diagnosis == "not-converged"
    barely = script_capture({}, [call(4.0), call(3.9), call(3.8)])
    assert properties(barely, reference).diagnosis == "loss-flat"
    rising = script_capture({}, [call(4.0), call(5.0), call(9.0)])
    assert properties(rising, reference).diagnosis == "loss-diverges"


def test_properties_mode_names_stale_grads_forgot_zero_grad() -> None:
    fresh = {"w": None}
    reference = script_capture({}, [call(4.0, before=fresh), call(0.001, before=fresh)])
    stale = {"w": tensor([0.5])}
    learner = script_capture({}, [call(4.0, before=fresh), call(3.0, before=stale)])
    assert properties(learner, reference).diagnosis == "forgot-zero-grad"


def test_the_diagnosis_option_names_a_failure_no_recogniser_explains() -> None:
    error = {"type": "ValueError", "message": "no grad", "line": 2, "traceback": ""}
    other = {
        "type": "RuntimeError",
        "message": "element 0 of tensors does not require grad and does not have a grad_fn",
        "line": 2,
        "traceback": "",
    }
    reference = function_capture([{"observations": {}, "exception": error}])
    learner = function_capture([{"exception": other}], reference=False)
    assert run("raises", learner, reference).diagnosis == "graph-broken"
    named = run("raises", learner, reference, diagnosis="missing-value-error")
    assert named.diagnosis == "missing-value-error"
    crashed = function_capture([{"exception": error}], reference=False)
    quiet = function_capture([{"observations": {}}])
    assert run("raises", crashed, quiet, diagnosis="missing-value-error").diagnosis == "crashed"


def test_grad_history_variants_name_the_mistake() -> None:
    def calls(first: float, second: float, stale: float | None) -> list[dict[str, Any]]:
        before = None if stale is None else tensor([stale])
        return [
            call(before={"x": None}, after={"x": tensor([first])}),
            call(before={"x": before}, after={"x": tensor([second])}),
        ]

    variant = {"kind": "list", "items": [tensor([6.0]), tensor([6.0])]}
    reference = script_capture({"x": tensor([3.0]), "_cleared": variant}, calls(6.0, 12.0, 6.0))
    learner = script_capture({"x": tensor([3.0])}, calls(6.0, 6.0, None))
    assert run("grad_history", learner, reference, "x").diagnosis == "wrong-value"
    outcome = run("grad_history", learner, reference, "x", variants={"cleared": "_cleared"})
    assert outcome.diagnosis == "cleared"
    assert outcome.data["got"] == ["tensor([6.0], dtype=float32)"] * 2
    assert outcome.data["want"][1] == "tensor([12.0], dtype=float32)"


def test_device_check_compares_with_the_workers_device() -> None:
    linear = {
        "kind": "module",
        "type": "Linear",
        "params": {"weight": tensor([1.0]), "bias": tensor([0.0], device="meta")},
    }
    reference = script_capture({"model": linear})
    outcome = run("device", reference, reference, "model")
    assert (outcome.passed, outcome.diagnosis) == (False, "device-mismatch")
    assert "model.bias is on meta" in outcome.message
    assert outcome.data["want"] == "cpu"
    on_cpu = script_capture({"model": {**linear, "params": {"weight": tensor([1.0])}}})
    assert run("device", on_cpu, reference, "model").passed


def test_steps_match_wants_one_backward_per_optimizer_step() -> None:
    reference = with_steps(script_capture({}, [call(), call()]), 2)
    assert run("backward_calls", reference, reference, steps_match=True).passed
    longer = with_steps(script_capture({}, [call()] * 5), 5)
    assert run("backward_calls", longer, reference, steps_match=True).passed
    twice = with_steps(script_capture({}, [call()] * 4), 2)
    outcome = run("backward_calls", twice, reference, steps_match=True, diagnosis="extra")
    assert (outcome.passed, outcome.diagnosis) == (False, "extra")
    no_step = with_steps(script_capture({}, [call()] * 4), 0)
    assert run("backward_calls", no_step, reference, steps_match=True).diagnosis == "loss-flat"


def test_failed_value_and_grad_checks_carry_got_and_want_for_visible_values() -> None:
    outcome = run("grad", reference_x([9.0]), reference_x([3.0]), "x")
    assert (outcome.data["got"], outcome.data["want"]) == (
        "tensor([9.0], dtype=float32)",
        "tensor([3.0], dtype=float32)",
    )
    value = run("value", script_capture({"x": text("a")}), script_capture({"x": text("b")}), "x")
    assert (value.data["got"], value.data["want"]) == ("'a'", "'b'")


def test_hidden_cases_carry_no_values() -> None:
    def case(grad: float, visible: bool) -> dict[str, Any]:
        return {"visible": visible, "observations": {"x": tensor([1.0], grad=[grad])}}

    reference = function_capture([case(1.0, True), case(2.0, False)])
    learner = function_capture([case(1.0, True), case(5.0, False)], reference=False)
    outcome = run("grad", learner, reference, "x")
    assert "got" not in outcome.data and "want" not in outcome.data


def test_a_cut_path_is_graph_broken_not_scaled_by_n() -> None:
    reference = script_capture({"x": tensor([4.0], grad=[6.0]), "y": tensor([5.0], grad=[4.0])})
    cut = script_capture({"x": tensor([4.0], grad=[1.0]), "y": tensor([5.0], requires_grad=True)})
    assert run("grad", cut, reference, "x").diagnosis == "graph-broken"
    mean = script_capture({"x": tensor([4.0], grad=[1.0]), "y": tensor([5.0], grad=[4.0])})
    assert run("grad", mean, reference, "x").diagnosis == "scaled-by-n"


TOL = (1.3e-6, 1e-5)


@pytest.mark.parametrize(
    ("got", "accumulated", "slug"),
    [
        ([-2.0, -4.0], False, "sign-error"),
        ([6.0, 12.0], True, "forgot-zero-grad"),
        ([6.0, 12.0], False, "scaled-by-n"),
        ([0.5, 1.0], False, "scaled-by-n"),
        ([2.5, 5.0], False, None),
        ([2.0, 5.0], False, None),
        ([0.0, 0.0], False, None),
    ],
)
def test_a_whole_number_ratio_names_a_sign_a_scale_or_an_accumulation(
    got: list[float], accumulated: bool, slug: str | None
) -> None:
    assert ratio_slug(got, [2.0, 4.0], *TOL, accumulated=accumulated) == slug


def test_a_loss_curve_falls_stays_flat_or_diverges() -> None:
    assert curve_slug([4.0, 2.0, 1.0]) is None
    assert curve_slug([4.0, 4.0, 4.0]) == "loss-flat"
    assert curve_slug([4.0, 9.0]) == "loss-diverges"
    assert curve_slug([4.0, float("nan")]) == "loss-diverges"


def test_error_slug_recognises_the_course_errors() -> None:
    assert error_slug("grad can be implicitly created only for scalar outputs") == (
        "nonscalar-backward"
    )
    assert (
        error_slug(
            "Trying to backward through the graph a second time (or directly access saved tensors "
            "after they have already been freed)."
        )
        == "freed-graph"
    )
    assert (
        error_slug("a leaf Variable that requires grad is being used in an in-place operation.")
        == "inplace-leaf"
    )
    assert error_slug("division by zero") is None


def test_every_diagnosis_has_a_title_and_a_one_sentence_hint() -> None:
    for slug, diagnosis in DIAGNOSES.items():
        assert diagnosis.slug == slug and diagnosis.title
        assert diagnosis.hint.endswith(".") and diagnosis.hint.count(". ") == 0


@pytest.mark.parametrize(
    "got",
    [[1e-310, 2e-310], [5e-324, 0.0], [1e308, 1e308], [float("inf"), 1.0], [float("nan"), 2.0]],
)
def test_ratio_rules_name_extreme_numbers_without_raising(got: list[float]) -> None:
    assert ratio_slug(got, [1.0, 2.0], 1e-7, 1e-7, accumulated=False) is None
    assert ratio_slug(got, [1e-5, 2e-5], 1e-7, 1e-12, accumulated=True) in (None, "scaled-by-n")


def test_a_subnormal_float64_gradient_is_a_wrong_value_not_a_crash() -> None:
    learner = script_capture({"x": tensor([1.0], dtype="float64", grad=[1e-310])})
    reference = script_capture({"x": tensor([1.0], dtype="float64", grad=[1.0])})
    outcome = run("grad", learner, reference, "x")
    assert (outcome.passed, outcome.diagnosis) == (False, "wrong-value")
    history = script_capture({}, [call(after={"x": tensor([1e-310], dtype="float64")})])
    wanted = script_capture({}, [call(after={"x": tensor([1.0], dtype="float64")})])
    assert run("grad_history", history, wanted, "x").diagnosis == "wrong-value"
