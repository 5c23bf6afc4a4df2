"""Comparison of captured values: dtype-aware tolerances (torch.testing's defaults),
complete data, and recursive equality of tensors, arrays, numbers, strings, lists,
dicts, modules and exceptions.

This module says WHAT differs: a `Difference` of one `Mismatch` kind, with a message
and, for differing numbers, the numbers themselves. Which mistake that is (sign error,
mean versus sum, forgotten zero_grad, ...) is for grader.checks.diagnoses to decide.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

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
# Floating dtypes by precision: an answer more precise than the reference's is the same idea.
FLOAT_PRECISION = {"bfloat16": 0, "float16": 1, "float32": 2, "float64": 3}


@dataclass(frozen=True)
class Tolerance:
    """A check's tolerance options; None means the dtype's default."""

    rtol: float | None = None
    atol: float | None = None
    device_any: bool = False

    def for_dtype(self, dtype: str | None) -> tuple[float, float]:
        default = NUMBER_TOLERANCE if dtype is None else TOLERANCES.get(dtype, EXACT)
        return (
            default[0] if self.rtol is None else self.rtol,
            default[1] if self.atol is None else self.atol,
        )


class Mismatch(enum.Enum):
    VALUES = "values"  # same kind and layout, different contents
    SHAPE = "shape"
    DTYPE = "dtype"
    DEVICE = "device"
    NO_DATA = "no-data"  # a side carries not all its values (meta device, data cut short)
    KIND = "kind"  # another kind of value (a float for a tensor, other module parameters)
    MISSING = "missing"  # a name or key that does not exist
    LENGTH = "length"  # lists of different lengths


@dataclass(frozen=True)
class Difference:
    """What differs, for the learner (`message`) and for grader.checks.diagnoses (`mismatch`,
    and for VALUES the numbers compared whole and the tolerance they were compared at)."""

    mismatch: Mismatch
    message: str
    got: tuple[float, ...] = ()
    want: tuple[float, ...] = ()
    tolerance: tuple[float, float] = EXACT
    meta: bool = False  # NO_DATA because the learner's tensor lives on the meta device

    def within(self, prefix: str) -> Difference:
        """The same difference, found inside a container (`item 2: ...`)."""
        return Difference(
            self.mismatch, f"{prefix}{self.message}", self.got, self.want, self.tolerance, self.meta
        )


# -- numbers -------------------------------------------------------------------------


def close(a: float, b: float, rtol: float, atol: float) -> bool:
    """|a - b| <= atol + rtol * |b|; NaN equals only NaN, an infinity only itself."""
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    if math.isinf(a) or math.isinf(b):
        return a == b
    return abs(a - b) <= atol + rtol * abs(b)


def all_close(got: Sequence[float], want: Sequence[float], rtol: float, atol: float) -> bool:
    if len(got) != len(want):
        return False
    return all(close(g, w, rtol, atol) for g, w in zip(got, want, strict=True))


def _numbers_differ(
    got: Sequence[float], want: Sequence[float], tol: tuple[float, float], message: str
) -> Difference | None:
    if all_close(got, want, *tol):
        return None
    return Difference(Mismatch.VALUES, message, tuple(got), tuple(want), tol)


# -- tensors -------------------------------------------------------------------------


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


def missing_data(got: TensorValue | NdarrayValue, want: TensorValue | NdarrayValue) -> str | None:
    """Why the two cannot be compared whole, or None: both sides must carry all their
    values (or the same capped length), never a data-less meta tensor."""
    return _incomplete(got, "your") or _incomplete(want, "the expected")


def _incomplete(value: TensorValue | NdarrayValue, side: str) -> str | None:
    if isinstance(value, TensorValue) and value.device_type == "meta":
        return f"{side} tensor is on the meta device: it holds no values to compare"
    if not value.complete:
        return f"{side} value carries {len(value.data)} of its {value.numel} values"
    return None


def compare_tensors(got: TensorValue, want: TensorValue, tolerance: Tolerance) -> Difference | None:
    if not same_shape(got, want):
        return Difference(Mismatch.SHAPE, f"shape {list(got.shape)}, expected {list(want.shape)}")
    if not dtype_accepted(got.dtype, want.dtype):
        return Difference(Mismatch.DTYPE, f"dtype {got.dtype}, expected {want.dtype}")
    if not tolerance.device_any and got.device_type != want.device_type:
        return Difference(Mismatch.DEVICE, f"device {got.device}, expected {want.device}")
    unreadable = missing_data(got, want)
    if unreadable is not None:
        return Difference(Mismatch.NO_DATA, unreadable, meta=got.device_type == "meta")
    message = f"got {show(got)}, expected {show(want)}"
    return _numbers_differ(got.floats(), want.floats(), tolerance.for_dtype(want.dtype), message)


# -- any value -----------------------------------------------------------------------


def compare_values(
    got: Value | Missing | None, want: Value | Missing | None, tolerance: Tolerance
) -> Difference | None:
    """Recursive equality within tolerance; None when equal."""
    if isinstance(want, Missing):
        return None  # nothing to compare with (the engine rejects such references)
    if want is None:
        return None if got is None else _other(got, want)
    if isinstance(got, Missing):
        return Difference(Mismatch.MISSING, "not defined")
    if isinstance(want, TensorValue):
        if not isinstance(got, TensorValue):
            return _wrong_kind(got, want)
        return compare_tensors(got, want, tolerance)
    if isinstance(want, NdarrayValue):
        return _compare_arrays(got, want, tolerance)
    if isinstance(want, ScalarValue):
        return _compare_scalars(got, want, tolerance)
    if isinstance(want, ListValue):
        return _compare_lists(got, want, tolerance)
    if isinstance(want, DictValue):
        return _compare_dicts(got, want, tolerance)
    if isinstance(want, ModuleValue):
        return _compare_modules(got, want, tolerance)
    if isinstance(want, ExceptionValue):
        if not isinstance(got, ExceptionValue):
            return _wrong_kind(got, want)
        if got.type != want.type or normalise(want.message) not in normalise(got.message):
            return _other(got, want)
        return None
    if isinstance(want, ObjectValue) and (
        not isinstance(got, ObjectValue) or got.type != want.type
    ):
        return _wrong_kind(got, want)
    return None


def _other(got: Value | Missing | None, want: Value | Missing | None) -> Difference:
    return Difference(Mismatch.VALUES, f"got {show(got)}, expected {show(want)}")


def _wrong_kind(got: Value | Missing | None, want: Value) -> Difference:
    if isinstance(got, Missing):
        return Difference(Mismatch.MISSING, "not defined")
    return Difference(Mismatch.KIND, f"holds {kind_name(got)}, expected {kind_name(want)}")


def _compare_arrays(
    got: Value | Missing | None, want: NdarrayValue, tolerance: Tolerance
) -> Difference | None:
    if not isinstance(got, NdarrayValue):
        return _wrong_kind(got, want)
    if got.shape != want.shape:
        return Difference(Mismatch.SHAPE, f"shape {list(got.shape)}, expected {list(want.shape)}")
    if got.dtype != want.dtype:
        return Difference(Mismatch.DTYPE, f"dtype {got.dtype}, expected {want.dtype}")
    unreadable = missing_data(got, want)
    if unreadable is not None:
        return Difference(Mismatch.NO_DATA, unreadable)
    message = f"got {show(got)}, expected {show(want)}"
    return _numbers_differ(got.floats(), want.floats(), tolerance.for_dtype(want.dtype), message)


def _compare_scalars(
    got: Value | Missing | None, want: ScalarValue, tolerance: Tolerance
) -> Difference | None:
    if want.kind == "number":
        if isinstance(got, TensorValue) and got.numel == 1:
            unreadable = _incomplete(got, "your")
            if unreadable is not None:
                meta = got.device_type == "meta"
                return Difference(Mismatch.NO_DATA, unreadable, meta=meta)
            numbers = got.floats()
        elif isinstance(got, ScalarValue) and got.kind == "number":
            numbers = [float(got.value)]  # type: ignore[arg-type]
        else:
            return _wrong_kind(got, want)
        message = f"got {show(got)}, expected {show(want)}"
        wanted = [float(want.value)]  # type: ignore[arg-type]
        return _numbers_differ(numbers, wanted, tolerance.for_dtype(None), message)
    if not isinstance(got, ScalarValue) or got.kind != want.kind:
        return _wrong_kind(got, want)
    if want.kind == "str" and normalise(str(got.value)) == normalise(str(want.value)):
        return None
    if got.value == want.value:
        return None
    return _other(got, want)


def _compare_lists(
    got: Value | Missing | None, want: ListValue, tolerance: Tolerance
) -> Difference | None:
    if not isinstance(got, ListValue):
        return _wrong_kind(got, want)
    if len(got.items) != len(want.items):
        return Difference(
            Mismatch.LENGTH,
            f"{len(got.items)} items, expected {len(want.items)}: got {show(got)}, "
            f"expected {show(want)}",
        )
    for index, (mine, theirs) in enumerate(zip(got.items, want.items, strict=True)):
        found = compare_values(mine, theirs, tolerance)
        if found is not None:
            return found.within(f"item {index}: ")
    return None


def _compare_dicts(
    got: Value | Missing | None, want: DictValue, tolerance: Tolerance
) -> Difference | None:
    if not isinstance(got, DictValue):
        return _wrong_kind(got, want)
    missing = [k for k in want.items if k not in got.items]
    if missing:
        return Difference(Mismatch.MISSING, f"key {missing[0]!r} is missing")
    for key, theirs in want.items.items():
        found = compare_values(got.items[key], theirs, tolerance)
        if found is not None:
            return found.within(f"[{key!r}]: ")
    return None


def _compare_modules(
    got: Value | Missing | None, want: ModuleValue, tolerance: Tolerance
) -> Difference | None:
    if not isinstance(got, ModuleValue):
        return _wrong_kind(got, want)
    if set(got.params) != set(want.params):
        return Difference(
            Mismatch.KIND, f"parameters {sorted(got.params)}, expected {sorted(want.params)}"
        )
    for name, theirs in want.params.items():
        found = compare_tensors(got.params[name], theirs, tolerance)
        if found is not None:
            return found.within(f"parameter {name}: ")
    return None


def normalise(text: str) -> str:
    return " ".join(text.split())
