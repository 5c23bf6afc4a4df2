"""Named mistakes (FORMAT.md section 5) and the recognisers that find them.

A failed check gets at most one diagnosis: `(slug, title, hint)`. The recognisers are
pure functions over plain values; `grader.checks` calls them while comparing.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType

INTEGER_TOLERANCE = 1e-4  # how close a ratio must be to an integer to count as one
MAX_SCALE = 4096  # larger integer ratios are not recognised as a mean/sum or accumulation
FLAT_RELATIVE_DROP = 0.01  # a curve whose end is within 1% of its start does not fall
# A curve that falls but ends above this fraction of its start barely falls (loss-flat);
# below it, it is on its way but stopped early (not-converged).
BARELY_FALLING = 0.9


@dataclass(frozen=True)
class Diagnosis:
    slug: str
    title: str
    hint: str


def _registry(*items: Diagnosis) -> Mapping[str, Diagnosis]:
    return MappingProxyType({item.slug: item for item in items})


DIAGNOSES: Mapping[str, Diagnosis] = _registry(
    Diagnosis(
        "forgot-zero-grad",
        "Gradients accumulated",
        "PyTorch adds each backward() into .grad: clear it (optimizer.zero_grad() or "
        "x.grad.zero_()) before every backward pass.",
    ),
    Diagnosis(
        "sign-error",
        "Sign error",
        "Your result is the negative of the expected one: check the sign of the expression "
        "you backpropagate from or of your update.",
    ),
    Diagnosis(
        "scaled-by-n",
        "Scaled by a whole number",
        "Your result is off by a whole factor N: check mean versus sum (divide or multiply "
        "by the number of elements).",
    ),
    Diagnosis(
        "unscaled-microbatch-loss",
        "Unscaled micro-batch loss",
        "Divide each micro-batch loss by the number of micro-batches before backward() so "
        "that the accumulated gradient equals the full-batch gradient.",
    ),
    Diagnosis(
        "graph-broken",
        "Gradient never reached this tensor",
        "The tensor is not connected to the graph: create it with requires_grad=True and do "
        "not detach(), .item(), re-wrap it in torch.tensor() or compute under no_grad().",
    ),
    Diagnosis(
        "missing-retain-grad",
        "Gradient of a non-leaf tensor not kept",
        "PyTorch keeps .grad only for leaf tensors: call .retain_grad() on the intermediate "
        "tensor before backward().",
    ),
    Diagnosis(
        "nonscalar-backward",
        "backward() on a non-scalar tensor",
        "backward() without arguments needs a scalar: pass gradient=torch.ones_like(y) (or "
        "the upstream gradient), or reduce to a scalar first.",
    ),
    Diagnosis(
        "freed-graph",
        "Backward through a freed graph",
        "The first backward() frees the graph: pass retain_graph=True to the earlier call if "
        "you need to backpropagate through it again.",
    ),
    Diagnosis(
        "inplace-leaf",
        "In-place change of a leaf that requires grad",
        "Update parameters inside torch.no_grad() (or on .data) instead of changing a leaf "
        "that requires grad in place.",
    ),
    Diagnosis(
        "loss-flat",
        "The loss does not fall",
        "The loss stays flat: check that you call backward() and optimizer.step() every "
        "iteration and that the learning rate is not too small.",
    ),
    Diagnosis(
        "loss-diverges",
        "The loss diverges",
        "The loss grows or becomes NaN: lower the learning rate and check the sign of your "
        "update and that gradients are cleared.",
    ),
    Diagnosis(
        "not-converged",
        "Training stopped too early",
        "The loss falls but does not get low enough: train for more steps or use a larger "
        "learning rate.",
    ),
    Diagnosis(
        "no-backward",
        "backward() was never called",
        "Reading .grad before backward(): gradients exist only after you call backward() "
        "on the result (or torch.autograd.grad).",
    ),
    Diagnosis(
        "hard-coded",
        "Value hard-coded",
        "The expected value is there but no backward() ran: let autograd compute it.",
    ),
    Diagnosis(
        "missing-name",
        "Name not defined",
        "Define the variable or function the exercise asks for, with exactly that name.",
    ),
    Diagnosis(
        "wrong-type",
        "Wrong kind of value",
        "This name holds another kind of value than expected, such as a float instead of a "
        "tensor: keep the kind of value the exercise asks for.",
    ),
    Diagnosis(
        "shape-mismatch",
        "Wrong shape",
        "The shape differs from the expected one: check broadcasting, reductions and reshapes.",
    ),
    Diagnosis(
        "dtype-mismatch",
        "Wrong dtype",
        "The dtype differs from the expected one: create tensors with the expected dtype "
        "(write 5.0 for a float, not 5).",
    ),
    Diagnosis(
        "device-mismatch",
        "Wrong device",
        "The tensor is on another device than expected: create it on (or move it to) the "
        "device the exercise uses: a `device` variable set to "
        "torch.device('cuda' if torch.cuda.is_available() else 'cpu'), with .to(device).",
    ),
    Diagnosis(
        "crashed",
        "Your code raised an error",
        "Your code stopped with an exception: read the error message and the line it names.",
    ),
    Diagnosis(
        "wrong-value",
        "Wrong value",
        "The value differs from the expected one: compare your computation with the "
        "statement step by step.",
    ),
)

# Recorded autograd errors of the course, recognised by their message.
ERROR_SIGNATURES: tuple[tuple[str, str], ...] = (
    ("grad can be implicitly created only for scalar outputs", "nonscalar-backward"),
    ("trying to backward through the graph a second time", "freed-graph"),
    ("a leaf variable that requires grad is being used in an in-place operation", "inplace-leaf"),
    ("does not require grad and does not have a grad_fn", "graph-broken"),
)


def error_slug(message: str) -> str | None:
    """The diagnosis named by an autograd error message, if it is one of the course's."""
    lowered = message.lower()
    for fragment, slug in ERROR_SIGNATURES:
        if fragment in lowered:
            return slug
    return None


def close(a: float, b: float, rtol: float, atol: float) -> bool:
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    if math.isinf(a) or math.isinf(b):
        return a == b
    return abs(a - b) <= atol + rtol * abs(b)


def all_close(got: Sequence[float], want: Sequence[float], rtol: float, atol: float) -> bool:
    if len(got) != len(want):
        return False
    return all(close(g, w, rtol, atol) for g, w in zip(got, want, strict=True))


def common_ratio(
    got: Sequence[float], want: Sequence[float], rtol: float, atol: float
) -> float | None:
    """The factor r with got == r * want elementwise (within tolerance), or None."""
    if len(got) != len(want) or not want:
        return None
    pivot = max(range(len(want)), key=lambda i: abs(want[i]) if math.isfinite(want[i]) else 0)
    if not math.isfinite(want[pivot]) or abs(want[pivot]) <= atol or not math.isfinite(got[pivot]):
        return None
    ratio = got[pivot] / want[pivot]
    scaled = [ratio * w for w in want]
    if all_close(got, scaled, rtol * 10, atol * 10):
        return ratio
    return None


def whole(value: float) -> int | None:
    """`value` as an integer when it is one (within INTEGER_TOLERANCE)."""
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
    if whole(ratio) == -1:
        return "sign-error"
    factor = whole(ratio)
    if factor is not None and 2 <= factor <= MAX_SCALE:
        return "forgot-zero-grad" if accumulated else "scaled-by-n"
    if ratio != 0:
        inverse = whole(1 / ratio)
        if inverse is not None and 2 <= inverse <= MAX_SCALE:
            return "scaled-by-n"
    return None


def curve_slug(losses: Sequence[float]) -> str | None:
    """loss-diverges (NaN/Inf or growing) or loss-flat (not falling), else None."""
    if not losses:
        return "loss-flat"
    if any(not math.isfinite(v) for v in losses):
        return "loss-diverges"
    first, last = losses[0], losses[-1]
    if last > first * (1 + FLAT_RELATIVE_DROP) + 1e-12:
        return "loss-diverges"
    if len(losses) < 2 or last >= first - abs(first) * FLAT_RELATIVE_DROP:
        return "loss-flat"
    return None


def unconverged_slug(losses: Sequence[float]) -> str:
    """Why a curve that ends too high did: loss-diverges (NaN/Inf or growing),
    loss-flat (barely falls), else not-converged (falls, but not far enough)."""
    shape = curve_slug(losses)
    if shape == "loss-diverges" or not losses:
        return shape or "loss-flat"
    first, last = losses[0], losses[-1]
    if shape == "loss-flat" or last >= BARELY_FALLING * first:
        return "loss-flat"
    return "not-converged"


def first_error_slug(messages: Iterable[str]) -> str | None:
    for message in messages:
        slug = error_slug(message)
        if slug is not None:
            return slug
    return None


def describe(slug: str, extra: Mapping[str, Diagnosis] | None = None) -> Diagnosis:
    """The registry entry for `slug` (exercise-specific ones in `extra` first)."""
    if extra and slug in extra:
        return extra[slug]
    return DIAGNOSES.get(slug, DIAGNOSES["wrong-value"])
