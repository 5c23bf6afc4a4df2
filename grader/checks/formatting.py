"""How checks show values to the learner: short display strings, kind names, and the
marker of a name that does not exist."""

from __future__ import annotations

import math

from grader.capture import (
    DictValue,
    ExceptionValue,
    ListValue,
    ModuleValue,
    NdarrayValue,
    ObjectValue,
    ScalarValue,
    TensorValue,
    Value,
)

SHOWN_ELEMENTS = 8


class Missing:
    """A name that does not exist (distinct from a name holding None)."""

    kind = "missing"

    def __repr__(self) -> str:
        return "<missing>"


MISSING = Missing()


def fmt_number(value: float | int | bool) -> str:
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            return str(value)
        text = f"{value:.6g}"
        return text if any(c in text for c in ".e") else f"{text}.0"
    return str(value)


def show(value: Value | Missing | None) -> str:
    if value is None:
        return "None"
    if isinstance(value, Missing):
        return "not defined"
    if isinstance(value, TensorValue | NdarrayValue):
        items = ", ".join(fmt_number(v) for v in value.data[:SHOWN_ELEMENTS])
        more = ", ..." if len(value.data) > SHOWN_ELEMENTS else ""
        name = "tensor" if isinstance(value, TensorValue) else "array"
        body = f"[{items}{more}]" if value.shape else items
        return f"{name}({body}, dtype={value.dtype})"
    if isinstance(value, ScalarValue):
        return "None" if value.kind == "none" else repr(value.value)
    if isinstance(value, ExceptionValue):
        return f"{value.type}: {value.message}"
    if isinstance(value, ModuleValue):
        return f"{value.type} module"
    if isinstance(value, ObjectValue):
        return f"a {value.type} object"
    if isinstance(value, ListValue):
        return "[" + ", ".join(show(v) for v in value.items[:SHOWN_ELEMENTS]) + "]"
    if isinstance(value, DictValue):
        return "{" + ", ".join(f"{k!r}: {show(v)}" for k, v in list(value.items.items())[:8]) + "}"
    return type(value).__name__


def kind_name(value: Value | Missing | None) -> str:
    if value is None:
        return "None"
    if isinstance(value, ScalarValue):
        return {"number": "a number", "bool": "a bool", "str": "a string", "none": "None"}[
            value.kind
        ]
    return {
        "tensor": "a tensor",
        "ndarray": "a NumPy array",
        "list": "a list",
        "dict": "a dict",
        "module": "an nn.Module",
        "exception": "an exception",
        "object": "an object",
        "missing": "not defined",
    }.get(value.kind, value.kind)
