"""What each check of grader.checks.registry.REGISTRY compares, on hand-built captures:
tolerances, shapes and dtypes, complete data, every value kind (pure and fast)."""

from __future__ import annotations

import re
from typing import Any

import pytest
from check_helpers import run
from grading_helpers import REPO, call, function_capture, script_capture, tensor

from grader.capture import TENSOR_ELEMENTS
from grader.checks.registry import REGISTRY


def grads(values: list[float], **kw: Any) -> Any:
    return script_capture({"x": tensor([1.0] * len(values), grad=values, requires_grad=True, **kw)})


def test_registry_covers_every_check_type_of_the_format() -> None:
    text = (REPO / "grader" / "FORMAT.md").read_text(encoding="utf-8")
    section = text.split("## 4. Checks")[1].split("## 5.")[0]
    documented = set(re.findall(r"^\| `([a-z_]+)` \|", section, re.MULTILINE))
    assert documented == set(REGISTRY)


def test_grad_passes_within_float32_tolerance() -> None:
    outcome = run("grad", grads([2.0, 4.000001]), grads([2.0, 4.0]), "x")
    assert outcome.passed


def test_grad_uses_float64_tolerance_for_float64_tensors() -> None:
    learner = script_capture({"x": tensor([1.0], dtype="float64", grad=[1.000001])})
    reference = script_capture({"x": tensor([1.0], dtype="float64", grad=[1.0])})
    assert not run("grad", learner, reference, "x").passed
    assert run("grad", learner, reference, "x", rtol=1e-5).passed


@pytest.mark.parametrize(
    ("got", "slug"),
    [([-2.0, -4.0], "sign-error"), ([1.0, 2.0], "scaled-by-n"), ([2.0, 5.0], "wrong-value")],
)
def test_grad_names_the_relation_to_the_reference(got: list[float], slug: str) -> None:
    outcome = run("grad", grads(got), grads([2.0, 4.0]), "x")
    assert (outcome.passed, outcome.diagnosis) == (False, slug)
    assert "expected tensor([2.0, 4.0]" in outcome.message


def test_grad_multiple_with_extra_backward_calls_is_forgot_zero_grad() -> None:
    learner = script_capture(
        {"x": tensor([1.0], grad=[6.0], requires_grad=True)},
        [call(), call(before={"x": tensor([3.0])})],
    )
    outcome = run("grad", learner, grads([3.0]), "x")
    assert outcome.diagnosis == "forgot-zero-grad"


def test_grad_none_on_a_leaf_is_graph_broken_and_on_a_non_leaf_missing_retain_grad() -> None:
    leaf = script_capture({"x": tensor([1.0], requires_grad=True)})
    assert run("grad", leaf, grads([3.0]), "x").diagnosis == "graph-broken"
    inner = script_capture({"x": tensor([1.0], requires_grad=True, is_leaf=False, grad_fn="M")})
    outcome = run("grad", inner, grads([3.0]), "x")
    assert outcome.diagnosis == "missing-retain-grad"
    assert "x.grad is None" in outcome.message


def test_grad_expected_none_and_got_none_passes() -> None:
    plain = script_capture({"x": tensor([1.0])})
    assert run("grad", plain, plain, "x").passed


@pytest.mark.parametrize(
    ("learner", "slug"),
    [
        (tensor([1.0, 1.0], [1, 2], grad=[2.0, 4.0]), "shape-mismatch"),
        (tensor([1.0, 1.0], dtype="float16", grad=[2.0, 4.0]), "dtype-mismatch"),
        (tensor([1.0, 1.0], device="cuda:0", grad=[2.0, 4.0]), "device-mismatch"),
        ({"kind": "number", "value": 2.0}, "wrong-type"),
    ],
)
def test_grad_reports_shape_dtype_device_and_type_mismatches(learner: Any, slug: str) -> None:
    outcome = run("grad", script_capture({"x": learner}), grads([2.0, 4.0]), "x")
    assert outcome.diagnosis == slug


def test_a_more_precise_float_dtype_is_accepted_at_the_references_tolerance() -> None:
    learner = script_capture({"x": tensor([1.0, 1.0], dtype="float64", grad=[2.0, 4.0000001])})
    assert run("grad", learner, grads([2.0, 4.0]), "x").passed


def test_a_single_number_is_accepted_in_any_shape_of_one_element() -> None:
    want = script_capture({"x": tensor([1.0], [], grad=[10.0])})
    for shape in ([1], [1, 1]):
        learner = script_capture({"x": tensor([1.0], shape, grad=[10.0])})
        assert run("grad", learner, want, "x").passed, shape
    wrong = script_capture({"x": tensor([1.0], [1], grad=[-10.0])})
    assert run("grad", wrong, want, "x").diagnosis == "sign-error"


def test_device_any_ignores_the_device() -> None:
    learner = script_capture({"x": tensor([1.0], device="cuda:0", grad=[2.0])})
    assert run("grad", learner, grads([2.0]), "x", device="any").passed


def test_grad_with_the_right_value_but_no_backward_is_hard_coded() -> None:
    learner = script_capture({"x": tensor([1.0], grad=[2.0])}, calls=[])
    outcome = run("grad", learner, grads([2.0]), "x")
    assert (outcome.passed, outcome.diagnosis) == (False, "hard-coded")


def test_missing_name_is_reported() -> None:
    outcome = run("grad", script_capture({}), grads([2.0]), "x")
    assert outcome.diagnosis == "missing-name"


def test_value_compares_numbers_strings_lists_and_modules() -> None:
    reference = script_capture(
        {
            "n": {"kind": "number", "value": 9.0},
            "s": {"kind": "str", "value": "a  b"},
            "l": {"kind": "list", "items": [{"kind": "str", "value": "AddBackward0"}]},
            "m": {"kind": "module", "type": "Linear", "params": {"weight": tensor([0.5])}},
        }
    )
    assert all(run("value", reference, reference, t).passed for t in "nslm")
    learner = script_capture(
        {
            "n": tensor([9.0], []),
            "s": {"kind": "str", "value": "a b"},
            "l": {"kind": "list", "items": []},
            "m": {"kind": "module", "type": "Linear", "params": {"weight": tensor([-0.5])}},
        }
    )
    assert run("value", learner, reference, "n").passed  # a 1-element tensor for a number
    assert run("value", learner, reference, "s").passed  # whitespace-normalised
    assert run("value", learner, reference, "l").diagnosis == "wrong-value"
    assert run("value", learner, reference, "m").diagnosis == "sign-error"


def test_value_tensor_against_a_number_is_wrong_type() -> None:
    reference = script_capture({"loss": tensor([9.0], [])})
    learner = script_capture({"loss": {"kind": "number", "value": 9.0}})
    assert run("value", learner, reference, "loss").diagnosis == "wrong-type"


def test_value_nan_equals_nan_only() -> None:
    nan = script_capture({"v": tensor(["nan"], [1])})
    one = script_capture({"v": tensor([1.0], [1])})
    assert run("value", nan, nan, "v").passed
    assert not run("value", one, nan, "v").passed


def test_graph_compares_the_listed_facts() -> None:
    reference = script_capture(
        {"y": tensor([25.0], [], requires_grad=True, is_leaf=False, grad_fn="PowBackward0")}
    )
    assert run("graph", reference, reference, "y", facts=["grad_fn"]).passed
    learner = script_capture({"y": tensor([25.0], [])})
    outcome = run("graph", learner, reference, "y", facts=["requires_grad", "grad_fn"])
    assert outcome.diagnosis == "graph-broken"
    assert "y.grad_fn is None, expected PowBackward0" in outcome.message


def test_backward_calls_compares_count_retain_graph_and_gradient() -> None:
    reference = script_capture({}, [call(retain_graph=True), call()])
    assert run("backward_calls", reference, reference, count=True, retain_graph=True).passed
    twice_plain = script_capture({}, [call(), call()])
    outcome = run("backward_calls", twice_plain, reference, retain_graph=True)
    assert not outcome.passed and "retain_graph is False, expected True" in outcome.message
    failed_calls = script_capture(
        {}, [call(), call(error="Trying to backward through the graph a second time")]
    )
    outcome = run("backward_calls", failed_calls, reference, count=True)
    assert (outcome.passed, outcome.diagnosis) == (False, "freed-graph")
    none = script_capture({}, [])
    assert run("backward_calls", none, reference, count=True).diagnosis == "no-backward"
    given = script_capture({}, [call(gradient_given=True), call()])
    assert not run("backward_calls", given, reference, gradient_given=True).passed


def test_grad_history_compares_call_by_call() -> None:
    reference = script_capture(
        {},
        [
            call(after={"x": tensor([6.0])}),
            call(before={"x": tensor([6.0])}, after={"x": tensor([12.0])}),
        ],
    )
    assert run("grad_history", reference, reference, "x").passed
    cleared = script_capture(
        {}, [call(after={"x": tensor([6.0])}), call(after={"x": tensor([6.0])})]
    )
    outcome = run("grad_history", cleared, reference, "x")
    assert not outcome.passed and outcome.diagnosis == "wrong-value"
    assert "after backward call 2" in outcome.message


def test_loss_curve_pointwise_and_by_properties() -> None:
    reference = script_capture({}, [call(4.0), call(2.0), call(1.0)])
    assert run("loss_curve", reference, reference).passed
    other = script_capture({}, [call(4.0), call(3.0), call(2.5)])
    assert not run("loss_curve", other, reference).passed
    assert run(
        "loss_curve", other, reference, mode="properties", falls=True, final_below=3.0
    ).passed
    flat = script_capture({}, [call(4.0), call(4.0), call(4.0)])
    assert (
        run("loss_curve", flat, reference, mode="properties", falls=True).diagnosis == "loss-flat"
    )
    growing = script_capture({}, [call(4.0), call(8.0), call(16.0)])
    assert (
        run("loss_curve", growing, reference, mode="properties", falls=True).diagnosis
        == "loss-diverges"
    )
    nan = script_capture({}, [call(4.0), call("nan")])
    assert run("loss_curve", nan, reference, mode="properties").diagnosis == "loss-diverges"
    short = script_capture({}, [call(4.0), call(1.0)])
    assert not run("loss_curve", short, reference, mode="properties", min_steps=3).passed


def test_fresh_grads_fails_on_a_stale_gradient() -> None:
    fresh = script_capture({}, [call(before={"w": None}), call(before={"w": tensor([0.0])})])
    assert run("fresh_grads", fresh, fresh).passed
    stale = script_capture({}, [call(before={"w": None}), call(before={"w": tensor([0.5])})])
    outcome = run("fresh_grads", stale, fresh)
    assert (outcome.passed, outcome.diagnosis) == (False, "forgot-zero-grad")


def test_message_contains_the_reference_message() -> None:
    reference = script_capture(
        {"e": {"kind": "str", "value": "grad can be implicitly created only for scalar outputs"}}
    )
    learner = script_capture(
        {
            "e": {
                "kind": "exception",
                "type": "RuntimeError",
                "message": "RuntimeError: grad can be  implicitly created only for scalar outputs",
            }
        }
    )
    assert run("message", learner, reference, "e").passed
    other = script_capture(
        {
            "e": {
                "kind": "str",
                "value": "element 0 of tensors does not require grad and does not have a grad_fn",
            }
        }
    )
    assert run("message", other, reference, "e").diagnosis == "graph-broken"


def test_raises_compares_exception_types_per_case() -> None:
    error = {"type": "ValueError", "message": "y does not require grad", "line": 3, "traceback": ""}
    reference = function_capture([{"observations": {}}, {"observations": {}, "exception": error}])
    assert run(
        "raises", function_capture([{}, {"exception": error}], reference=False), reference
    ).passed
    silent = function_capture([{}, {}], reference=False)
    outcome = run("raises", silent, reference)
    assert not outcome.passed and "hidden input (case 2 of 2)" in outcome.message


def test_stdout_losses_and_exact() -> None:
    reference = script_capture({}, [call(0.5), call(0.25)], stdout="loss 0.5000\nloss 0.2500\n")
    assert run("stdout", reference, reference, mode="losses").passed
    assert run("stdout", reference, reference).passed
    quiet = script_capture({}, [call(0.5), call(0.25)], stdout="loss 0.5000\n")
    assert not run("stdout", quiet, reference, mode="losses").passed
    assert not run("stdout", quiet, reference, mode="exact").passed


def test_gradcheck_reads_the_ok_flag() -> None:
    ok = function_capture(
        [
            {
                "observations": {
                    "g": {"kind": "dict", "items": {"ok": {"kind": "bool", "value": True}}}
                }
            }
        ]
    )
    bad = function_capture(
        [
            {
                "observations": {
                    "g": {"kind": "dict", "items": {"ok": {"kind": "bool", "value": False}}}
                }
            }
        ],
        reference=False,
    )
    assert run("gradcheck", ok, ok, "g").passed
    assert not run("gradcheck", bad, ok, "g").passed


def test_no_error_names_a_course_error_or_a_crash() -> None:
    clean = script_capture({})
    assert run("no_error", clean, clean).passed
    nonscalar = script_capture(
        {},
        exception={
            "type": "RuntimeError",
            "message": "grad can be implicitly created only for scalar outputs",
            "line": 4,
            "traceback": "",
        },
    )
    outcome = run("no_error", nonscalar, clean)
    assert (outcome.diagnosis, "line 4" in outcome.message) == ("nonscalar-backward", True)
    crash = script_capture(
        {}, exception={"type": "KeyError", "message": "'a'", "line": 2, "traceback": ""}
    )
    assert run("no_error", crash, clean).diagnosis == "crashed"


def test_function_checks_show_values_only_for_visible_cases() -> None:
    def case(values: list[float], visible: bool) -> dict[str, Any]:
        return {"visible": visible, "observations": {"x": tensor([1.0, 1.0], grad=values)}}

    reference = function_capture([case([1.0, 2.0], True), case([3.0, 4.0], False)])
    visible_wrong = function_capture(
        [case([9.0, 9.0], True), case([3.0, 4.0], False)], reference=False
    )
    hidden_wrong = function_capture(
        [case([1.0, 2.0], True), case([9.0, 9.0], False)], reference=False
    )
    shown = run("grad", visible_wrong, reference, "x")
    assert "example input" in shown.message and "9.0" in shown.message
    hidden = run("grad", hidden_wrong, reference, "x")
    assert (
        "hidden input" in hidden.message
        and "9.0" not in hidden.message
        and "3.0" not in hidden.message
    )
    assert run("grad", reference, reference, "x").message.endswith("(all 2 cases)")


def test_variants_name_an_exercise_specific_mistake() -> None:
    observations = {"x": tensor([1.0], grad=[2.0]), "_ones": tensor([1.0], grad=[5.0])}
    reference = function_capture([{"observations": observations}])
    learner = function_capture(
        [{"observations": {"x": tensor([1.0], grad=[5.0])}}], reference=False
    )
    outcome = run("grad", learner, reference, "x", variants={"ones-instead-of-v": "_ones"})
    assert outcome.diagnosis == "ones-instead-of-v"


# -- complete data or no match ---------------------------------------------------------


def short(values: list[float], numel: int, **kw: Any) -> dict[str, Any]:
    """A tensor of `numel` elements that carries only `values` (data cut short)."""
    return {**tensor(values, [numel], **kw), "truncated": True}


def test_a_value_whose_data_was_cut_short_never_matches_even_on_an_equal_prefix() -> None:
    reference = script_capture({"v": tensor([1.0, 2.0, 3.0])})
    learner = script_capture({"v": short([1.0], 3)})
    outcome = run("value", learner, reference, "v")
    assert (outcome.passed, outcome.diagnosis) == (False, "wrong-value")
    assert "carries 1 of its 3 values" in outcome.message
    assert not run("value", reference, learner, "v").passed  # the other side too


def test_a_grad_whose_data_was_cut_short_never_matches() -> None:
    reference = script_capture({"x": tensor([1.0, 1.0], grad=[2.0, 4.0])})
    learner = script_capture({"x": {**tensor([1.0, 1.0]), "grad": short([], 2)}})
    assert not run("grad", learner, reference, "x").passed


def test_a_meta_tensor_fails_value_and_grad_as_a_device_mismatch_even_on_any_device() -> None:
    meta = {**tensor([], [2], device="meta"), "truncated": True}
    reference = script_capture({"v": tensor([1.0, 2.0], grad=[3.0, 4.0])})
    learner = script_capture({"v": {**meta, "grad": meta}})
    for kind in ("value", "grad"):
        outcome = run(kind, learner, reference, "v", device="any")
        assert (outcome.passed, outcome.diagnosis) == (False, "device-mismatch"), kind
        assert "meta device" in outcome.message


def test_a_one_element_meta_tensor_does_not_equal_an_expected_number() -> None:
    reference = script_capture({"n": {"kind": "number", "value": 9.0}})
    learner = script_capture({"n": {**tensor([], [], device="meta"), "truncated": True}})
    assert not run("value", learner, reference, "n").passed


def test_module_parameters_on_the_meta_device_never_match() -> None:
    meta = {**tensor([], [1], device="meta"), "truncated": True}
    want = {"kind": "module", "type": "Linear", "params": {"weight": tensor([0.5])}}
    got = {"kind": "module", "type": "Linear", "params": {"weight": meta}}
    outcome = run(
        "value", script_capture({"m": got}), script_capture({"m": want}), "m", device="any"
    )
    assert not outcome.passed


def test_capped_tensors_of_the_same_length_are_compared_whole() -> None:
    big = TENSOR_ELEMENTS + 5
    values = [0.5] * TENSOR_ELEMENTS
    reference = script_capture({"v": {**tensor(values, [big]), "truncated": True}})
    same = script_capture({"v": {**tensor(values, [big]), "truncated": True}})
    assert run("value", same, reference, "v").passed
    last_differs = script_capture({"v": {**tensor([*values[:-1], 9.0], [big]), "truncated": True}})
    assert not run("value", last_differs, reference, "v").passed


def test_a_variant_the_reference_did_not_observe_names_nothing() -> None:
    reference = script_capture({"x": tensor([1.0], grad=[2.0], requires_grad=True)})
    learner = script_capture({"x": tensor([2.5], grad=[7.0], requires_grad=True)})
    for kind in ("grad", "value"):
        outcome = run(kind, learner, reference, "x", variants={"ones-instead-of-v": "_absent"})
        assert (outcome.passed, outcome.diagnosis) == (False, "wrong-value"), kind
