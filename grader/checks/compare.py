"""Comparison of captured values within dtype-aware tolerances (torch.testing's
defaults), and the recognisers' first guess at why two values differ."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from grader import diagnose
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
from grader.checks.formatting import Missing, kind_name, show
from grader.spec import CheckSpec

# torch.testing's defaults per dtype: (rtol, atol).
TOLERANCES: Mapping[str, tuple[float, float]] = {
    "float64": (1e-7, 1e-7),
    "complex128": (1e-7, 1e-7),
    "float32": (1.3e-6, 1e-5),
    "complex64": (1.3e-6, 1e-5),
    "float16": (1e-3, 1e-5),
    "bfloat16": (1.6e-2, 1e-5),
}
NUMBER_TOLERANCE = (1.3e-6, 1e-5)  # Python floats are usually float32 results (.item())
EXACT = (0.0, 0.0)


@dataclass(frozen=True)
class Tolerance:
    rtol: float | None = None
    atol: float | None = None
    device_any: bool = False

    @classmethod
    def of(cls, spec: CheckSpec) -> Tolerance:
        return cls(spec.option("rtol"), spec.option("atol"), spec.option("device") == "any")

    def for_dtype(self, dtype: str | None) -> tuple[float, float]:
        default = NUMBER_TOLERANCE if dtype is None else TOLERANCES.get(dtype, EXACT)
        return (
            default[0] if self.rtol is None else self.rtol,
            default[1] if self.atol is None else self.atol,
        )


@dataclass(frozen=True)
class Difference:
    """Why two values differ: a diagnosis slug and a learner-facing message."""

    slug: str
    message: str


def compare_numbers(
    got: Sequence[float],
    want: Sequence[float],
    tol: tuple[float, float],
    *,
    accumulated: bool,
) -> Difference | None:
    rtol, atol = tol
    if diagnose.all_close(got, want, rtol, atol):
        return None
    slug = diagnose.ratio_slug(got, want, rtol, atol, accumulated=accumulated)
    return Difference(slug or "wrong-value", "")


# Floating dtypes by precision: an answer more precise than the reference's is the same idea.
FLOAT_PRECISION = {"bfloat16": 0, "float16": 1, "float32": 2, "float64": 3}


def same_shape(got: TensorValue, want: TensorValue) -> bool:
    """Equal shapes, or one number both times (`tensor(2.)`, `tensor([2.])`, `[[2.]]`)."""
    return got.shape == want.shape or (got.numel == 1 and want.numel == 1)


def dtype_accepted(got: str, want: str) -> bool:
    """The reference's dtype, or a more precise floating dtype (compared at the reference's
    tolerance): float64 where float32 is expected is not the mistake a check looks for."""
    if got == want:
        return True
    if got not in FLOAT_PRECISION or want not in FLOAT_PRECISION:
        return False
    return FLOAT_PRECISION[got] > FLOAT_PRECISION[want]


def compare_tensors(
    got: TensorValue, want: TensorValue, tolerance: Tolerance, *, accumulated: bool
) -> Difference | None:
    if not same_shape(got, want):
        return Difference("shape-mismatch", f"shape {list(got.shape)}, expected {list(want.shape)}")
    if not dtype_accepted(got.dtype, want.dtype):
        return Difference("dtype-mismatch", f"dtype {got.dtype}, expected {want.dtype}")
    if not tolerance.device_any and got.device_type != want.device_type:
        return Difference("device-mismatch", f"device {got.device}, expected {want.device}")
    size = min(len(got.data), len(want.data))
    found = compare_numbers(
        got.floats()[:size],
        want.floats()[:size],
        tolerance.for_dtype(want.dtype),
        accumulated=accumulated,
    )
    if found is None:
        return None
    return Difference(found.slug, f"got {show(got)}, expected {show(want)}")


def compare_values(
    got: Value | Missing | None,
    want: Value | Missing | None,
    tolerance: Tolerance,
    *,
    accumulated: bool = False,
) -> Difference | None:
    """Recursive equality within tolerance; None when equal."""
    if isinstance(want, Missing):
        return None  # nothing to compare with (the engine rejects such references)
    if want is None:
        return None if got is None else _other(got, want)
    if isinstance(got, Missing):
        return Difference("missing-name", "not defined")
    if isinstance(want, TensorValue):
        if not isinstance(got, TensorValue):
            return _wrong_type(got, want)
        return compare_tensors(got, want, tolerance, accumulated=accumulated)
    if isinstance(want, NdarrayValue):
        return _compare_arrays(got, want, tolerance, accumulated)
    if isinstance(want, ScalarValue):
        return _compare_scalars(got, want, tolerance, accumulated)
    if isinstance(want, ListValue):
        return _compare_lists(got, want, tolerance, accumulated)
    if isinstance(want, DictValue):
        return _compare_dicts(got, want, tolerance, accumulated)
    if isinstance(want, ModuleValue):
        return _compare_modules(got, want, tolerance, accumulated)
    if isinstance(want, ExceptionValue):
        if not isinstance(got, ExceptionValue):
            return _wrong_type(got, want)
        if got.type != want.type or normalise(want.message) not in normalise(got.message):
            return Difference("wrong-value", f"got {show(got)}, expected {show(want)}")
        return None
    if isinstance(want, ObjectValue) and (
        not isinstance(got, ObjectValue) or got.type != want.type
    ):
        return _wrong_type(got, want)
    return None


def _other(got: Value | Missing | None, want: Value | Missing | None) -> Difference:
    return Difference("wrong-value", f"got {show(got)}, expected {show(want)}")


def _wrong_type(got: Value | Missing | None, want: Value) -> Difference:
    if isinstance(got, Missing):
        return Difference("missing-name", "not defined")
    return Difference("wrong-type", f"holds {kind_name(got)}, expected {kind_name(want)}")


def _compare_arrays(
    got: Value | Missing | None, want: NdarrayValue, tolerance: Tolerance, accumulated: bool
) -> Difference | None:
    if not isinstance(got, NdarrayValue):
        return _wrong_type(got, want)
    if got.shape != want.shape:
        return Difference("shape-mismatch", f"shape {list(got.shape)}, expected {list(want.shape)}")
    if got.dtype != want.dtype:
        return Difference("dtype-mismatch", f"dtype {got.dtype}, expected {want.dtype}")
    found = compare_numbers(
        got.floats(), want.floats(), tolerance.for_dtype(want.dtype), accumulated=accumulated
    )
    if found is None:
        return None
    return Difference(found.slug, f"got {show(got)}, expected {show(want)}")


def _compare_scalars(
    got: Value | Missing | None, want: ScalarValue, tolerance: Tolerance, accumulated: bool
) -> Difference | None:
    if want.kind == "number":
        if isinstance(got, TensorValue) and got.numel == 1:
            numbers = got.floats()
        elif isinstance(got, ScalarValue) and got.kind == "number":
            numbers = [float(got.value)]  # type: ignore[arg-type]
        else:
            return _wrong_type(got, want)
        found = compare_numbers(
            numbers,
            [float(want.value)],  # type: ignore[arg-type]
            tolerance.for_dtype(None),
            accumulated=accumulated,
        )
        if found is None:
            return None
        return Difference(found.slug, f"got {show(got)}, expected {show(want)}")
    if not isinstance(got, ScalarValue) or got.kind != want.kind:
        return _wrong_type(got, want)
    if want.kind == "str" and normalise(str(got.value)) == normalise(str(want.value)):
        return None
    if got.value == want.value:
        return None
    return Difference("wrong-value", f"got {show(got)}, expected {show(want)}")


def _compare_lists(
    got: Value | Missing | None, want: ListValue, tolerance: Tolerance, accumulated: bool
) -> Difference | None:
    if not isinstance(got, ListValue):
        return _wrong_type(got, want)
    if len(got.items) != len(want.items):
        return Difference(
            "wrong-value",
            f"{len(got.items)} items, expected {len(want.items)}: got {show(got)}, "
            f"expected {show(want)}",
        )
    for index, (mine, theirs) in enumerate(zip(got.items, want.items, strict=True)):
        found = compare_values(mine, theirs, tolerance, accumulated=accumulated)
        if found is not None:
            return Difference(found.slug, f"item {index}: {found.message}")
    return None


def _compare_dicts(
    got: Value | Missing | None, want: DictValue, tolerance: Tolerance, accumulated: bool
) -> Difference | None:
    if not isinstance(got, DictValue):
        return _wrong_type(got, want)
    missing = [k for k in want.items if k not in got.items]
    if missing:
        return Difference("missing-name", f"key {missing[0]!r} is missing")
    for key, theirs in want.items.items():
        found = compare_values(got.items[key], theirs, tolerance, accumulated=accumulated)
        if found is not None:
            return Difference(found.slug, f"[{key!r}]: {found.message}")
    return None


def _compare_modules(
    got: Value | Missing | None, want: ModuleValue, tolerance: Tolerance, accumulated: bool
) -> Difference | None:
    if not isinstance(got, ModuleValue):
        return _wrong_type(got, want)
    if set(got.params) != set(want.params):
        return Difference(
            "wrong-type", f"parameters {sorted(got.params)}, expected {sorted(want.params)}"
        )
    for name, theirs in want.params.items():
        found = compare_tensors(got.params[name], theirs, tolerance, accumulated=accumulated)
        if found is not None:
            return Difference(found.slug, f"parameter {name}: {found.message}")
    return None


def normalise(text: str) -> str:
    return " ".join(text.split())
