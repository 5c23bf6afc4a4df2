"""Rules on differences between values: `difference_slug` (shape/dtype/device/kind, then
`ratio_slug`: sign-error, scaled-by-n, forgot-zero-grad from a whole-number factor)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from types import MappingProxyType

from grader.checks.compare import Difference, Mismatch, all_close

INTEGER_TOLERANCE = 1e-4  # how close a ratio must be to an integer to count as one
MAX_SCALE = 4096  # larger integer ratios are not recognised as a mean/sum or accumulation


SLUG_OF_MISMATCH: Mapping[Mismatch, str] = MappingProxyType(
    {
        Mismatch.SHAPE: "shape-mismatch",
        Mismatch.DTYPE: "dtype-mismatch",
        Mismatch.DEVICE: "device-mismatch",
        Mismatch.KIND: "wrong-type",
        Mismatch.MISSING: "missing-name",
        Mismatch.LENGTH: "wrong-value",
    }
)


def difference_slug(difference: Difference, *, accumulated: bool) -> str:
    """The mistake a difference shows. Differing numbers are named by their ratio
    (`ratio_slug`); a meta tensor is on the wrong device; data that is not all there
    matches nothing (the report flags it) and is a wrong value."""
    if difference.mismatch is Mismatch.VALUES:
        rtol, atol = difference.tolerance
        found = ratio_slug(difference.got, difference.want, rtol, atol, accumulated=accumulated)
        return found or "wrong-value"
    if difference.mismatch is Mismatch.NO_DATA:
        return "device-mismatch" if difference.meta else "wrong-value"
    return SLUG_OF_MISMATCH[difference.mismatch]


def common_ratio(
    got: Sequence[float], want: Sequence[float], rtol: float, atol: float
) -> float | None:
    """The finite factor r with got == r * want elementwise (within tolerance), or None."""
    if len(got) != len(want) or not want:
        return None
    pivot = max(range(len(want)), key=lambda i: abs(want[i]) if math.isfinite(want[i]) else 0)
    if not math.isfinite(want[pivot]) or abs(want[pivot]) <= atol or not math.isfinite(got[pivot]):
        return None
    ratio = got[pivot] / want[pivot]
    if not math.isfinite(ratio):
        return None
    scaled = [ratio * w for w in want]
    if all_close(got, scaled, rtol * 10, atol * 10):
        return ratio
    return None


def whole(value: float) -> int | None:
    """`value` as an integer when it is one (within INTEGER_TOLERANCE); None for NaN and
    the infinities."""
    if not math.isfinite(value):
        return None
    rounded = round(value)
    if abs(value - rounded) <= INTEGER_TOLERANCE * max(1.0, abs(value)):
        return int(rounded)
    return None


def ratio_slug(
    got: Sequence[float],
    want: Sequence[float],
    rtol: float,
    atol: float,
    *,
    accumulated: bool,
) -> str | None:
    """sign-error / forgot-zero-grad / scaled-by-n from a common factor between values.

    An integer factor k >= 2 is an accumulation when the learner's run shows one
    (`accumulated`: more backward calls than the reference, or grads not fresh before a
    call); otherwise it is a mean/sum scaling.
    """
    ratio = common_ratio(got, want, rtol, atol)
    if ratio is None:
        return None
    factor = whole(ratio)
    if factor == -1:
        return "sign-error"
    if factor is not None and 2 <= factor <= MAX_SCALE:
        return "forgot-zero-grad" if accumulated else "scaled-by-n"
    if ratio != 0:
        inverse = whole(1 / ratio)
        if inverse is not None and 2 <= inverse <= MAX_SCALE:
            return "scaled-by-n"
    return None
