"""parse_result and validate_capture: the frame, the nonce, the length, the size cap,
typed validation, bounded numbers and data judged against the engine's own cap."""

from __future__ import annotations

import json
from typing import Any

import pytest

from grader.capture import (
    TENSOR_ELEMENTS,
    CaptureError,
    ScalarValue,
    TamperEvent,
    TensorValue,
    parse_result,
    validate_capture,
)

NONCE = "0123456789abcdef" * 2


def capture(**changes: Any) -> dict[str, Any]:
    raw: dict[str, Any] = {
        "protocol": 1,
        "kind": "script",
        "variables": {"x": {"kind": "tensor", "dtype": "float32", "shape": [2], "device": "cpu",
                            "data": [1.0, "nan"], "grad": None}},
        "backward_calls": [],
        "optimizer_steps": 0,
        "stdout": "",
        "exception": None,
        "duration_s": 0.0,
    }  # fmt: skip
    raw.update(changes)
    return raw


def framed(raw: Any, nonce: str = NONCE, *, length_delta: int = 0) -> bytes:
    body = json.dumps(raw).encode()
    return f"GRADLAB-RESULT {nonce} {len(body) + length_delta}\n".encode() + body


def test_a_valid_frame_gives_typed_values() -> None:
    parsed = parse_result(b"noise before\n" + framed(capture()), NONCE)
    x = parsed.variables["x"]
    assert isinstance(x, TensorValue) and x.shape == (2,)
    assert x.data[0] == 1.0 and x.data[1] != x.data[1]  # NaN kept


def test_a_frame_with_another_nonce_is_ignored() -> None:
    with pytest.raises(CaptureError, match="no result frame"):
        parse_result(framed(capture(), "f" * 32), NONCE)


def test_no_frame_a_short_body_and_an_oversized_frame_fail() -> None:
    with pytest.raises(CaptureError, match="no result frame"):
        parse_result(b"", NONCE)
    with pytest.raises(CaptureError, match="shorter"):
        parse_result(framed(capture(), length_delta=10), NONCE)
    with pytest.raises(CaptureError, match="exceeds the cap"):
        parse_result(framed(capture()), NONCE, max_bytes=10)


def test_invalid_json_fails() -> None:
    body = b"{not json"
    with pytest.raises(CaptureError, match="not valid JSON"):
        parse_result(f"GRADLAB-RESULT {NONCE} {len(body)}\n".encode() + body, NONCE)


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"protocol": 2}, "unsupported protocol"),
        ({"kind": "quiz"}, "capture.kind"),
        ({"variables": []}, "variables: must be an object"),
        ({"stdout": 5}, "stdout: must be a string"),
        ({"backward_calls": [{"api": "evil"}]}, "backward_calls"),
        ({"variables": {"x": {"kind": "tensor", "dtype": "float32", "shape": [3],
                              "data": [1.0] * 4}}}, "4 values for shape [3]"),
        ({"variables": {"x": {"kind": "tensor", "dtype": "int64", "shape": [1],
                              "data": [2**70]}}}, "outside every dtype's range"),
        ({"variables": {"x": {"kind": "tensor", "dtype": "float32", "shape": [2**41],
                              "data": []}}}, "integer out of range"),
        ({"variables": {"x": {"kind": "tensor", "dtype": "float32", "shape": [2**40] * 2,
                              "data": []}}}, "more elements than a tensor can hold"),
        ({"optimizer_steps": 10**400}, "optimizer_steps: integer out of range"),
        ({"tamper": [{"kind": 3}]}, "tamper[0].kind: must be a string"),
        ({"variables": {"x": {"kind": "tensor", "dtype": "evil", "shape": [],
                              "data": [1.0]}}}, "unknown dtype"),
        ({"variables": {"x": {"kind": "tensor", "dtype": "float32", "shape": [1],
                              "data": ["1"]}}}, "is not a number"),
        ({"variables": {"x": {"kind": "pickle", "data": "gASV"}}}, "unknown value kind"),
    ],
)  # fmt: skip
def test_malformed_captures_are_rejected(changes: dict[str, Any], message: str) -> None:
    with pytest.raises(CaptureError, match=message.replace("[", r"\[").replace("]", r"\]")):
        validate_capture(capture(**changes))


def test_deep_nesting_is_rejected() -> None:
    value: dict[str, Any] = {"kind": "none"}
    for _ in range(50):
        value = {"kind": "list", "items": [value]}
    with pytest.raises(CaptureError, match="nested too deeply"):
        validate_capture(capture(variables={"x": value}))


def tensor_raw(shape: list[int], data: list[object], **fields: object) -> dict[str, object]:
    return {"kind": "tensor", "dtype": "float32", "shape": shape, "device": "cpu",
            "data": data, **fields}  # fmt: skip


def parsed_x(raw: dict[str, object]) -> TensorValue:
    x = validate_capture(capture(variables={"x": raw})).variables["x"]
    assert isinstance(x, TensorValue)
    return x


def test_a_tensor_with_all_its_values_is_complete() -> None:
    x = parsed_x(tensor_raw([2], [1.0, 2.0]))
    assert x.complete and not x.truncated


def test_data_cut_short_parses_but_is_not_complete_whatever_the_sandbox_says() -> None:
    x = parsed_x(tensor_raw([3], [1.0], truncated=False))
    assert not x.complete and x.truncated
    y = parsed_x(tensor_raw([3], [1.0], truncated=True))
    assert not y.complete


def test_a_larger_tensor_is_complete_only_with_exactly_the_engines_cap_of_values() -> None:
    big = TENSOR_ELEMENTS + 10
    capped = parsed_x(tensor_raw([big], [0.5] * TENSOR_ELEMENTS, truncated=True))
    assert capped.complete and capped.truncated
    shorter = parsed_x(tensor_raw([big], [0.5] * (TENSOR_ELEMENTS - 1), truncated=True))
    assert not shorter.complete


def test_a_meta_tensor_is_never_complete() -> None:
    x = parsed_x(tensor_raw([2], [], device="meta", truncated=True))
    assert x.device_type == "meta" and not x.complete


def test_a_huge_integer_number_becomes_a_float_and_never_overflows() -> None:
    variables = {
        "big": {"kind": "number", "value": 10**400},
        "large": {"kind": "number", "value": -(2**80)},
        "small": {"kind": "number", "value": 12},
    }
    parsed = validate_capture(capture(variables=variables)).variables
    assert parsed["big"] == ScalarValue("number", float("inf"))
    assert parsed["large"] == ScalarValue("number", float(-(2**80)))
    assert parsed["small"] == ScalarValue("number", 12)


def test_a_huge_integer_where_a_float_is_read_becomes_infinite_not_an_overflow() -> None:
    assert validate_capture(capture(duration_s=10**400)).duration_s == float("inf")
    call = {"api": "Tensor.backward", "loss": -(10**400), "grads_before": {}, "grads_after": {}}
    parsed = validate_capture(capture(backward_calls=[call]))
    assert parsed.backward_calls[0].loss == float("-inf")


def test_subnormal_and_non_finite_json_numbers_parse() -> None:
    body = (
        b'{"protocol": 1, "kind": "script", "duration_s": NaN, "variables": {"x": '
        b'{"kind": "tensor", "dtype": "float64", "shape": [3], "data": [1e-310, Infinity, 1e999]}}}'
    )
    x = parse_result(f"GRADLAB-RESULT {NONCE} {len(body)}\n".encode() + body, NONCE).variables["x"]
    assert isinstance(x, TensorValue) and x.data[0] == 1e-310 and x.data[2] == float("inf")


def test_an_integer_of_thousands_of_digits_is_invalid_json_not_a_crash() -> None:
    body = b'{"protocol": 1, "kind": "script", "optimizer_steps": ' + b"9" * 5000 + b"}"
    with pytest.raises(CaptureError, match="not valid JSON"):
        parse_result(f"GRADLAB-RESULT {NONCE} {len(body)}\n".encode() + body, NONCE)


def test_tamper_records_become_typed_events() -> None:
    events = [{"kind": "ctypes", "detail": "import ctypes"}, {"kind": "proc-self"}]
    parsed = validate_capture(capture(tamper=events))
    assert parsed.tamper == (TamperEvent("ctypes", "import ctypes"), TamperEvent("proc-self", ""))
    assert validate_capture(capture()).tamper == ()
