"""parse_result: the frame, the nonce, the length, the size cap, and validation."""

from __future__ import annotations

import json
from typing import Any

import pytest

from grader.capture import CaptureError, TensorValue, parse_result, validate_capture

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
                              "data": [1.0]}}}, "1 values for shape [3]"),
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
