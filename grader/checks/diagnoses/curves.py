"""Rules on loss curves: `curve_slug` (diverges or flat), `unconverged_slug`,
`pointwise_curve_slug`, `properties_curve_slug` and `steps_slug`."""

from __future__ import annotations

import math
from collections.abc import Sequence

from grader.checks.diagnoses.run import accumulated, stale
from grader.checks.trials import Trial

FLAT_RELATIVE_DROP = 0.01  # a curve whose end is within 1% of its start does not fall
# A curve that falls but ends above this fraction of its start barely falls (loss-flat);
# below it, it is on its way but stopped early (not-converged).
BARELY_FALLING = 0.9


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


def pointwise_curve_slug(losses: Sequence[float], trial: Trial) -> str:
    """Pointwise mode: the reference's step count is the learner's too, so more backward
    calls than the reference's are evidence of an accumulation."""
    shape = curve_slug(losses)
    if shape == "loss-diverges":
        return shape
    if accumulated(trial):
        return "forgot-zero-grad"
    return shape or "wrong-value"


def properties_curve_slug(losses: Sequence[float], trial: Trial, *, falls: bool) -> str:
    """Properties mode: the step count is the learner's choice, so only stale grads
    before the learner's backward calls (where the reference's were fresh) show an
    accumulation; otherwise the curve's shape names the mistake."""
    shape = curve_slug(losses)
    if shape == "loss-diverges":
        return shape
    if stale(trial.ok_learner_calls) and not stale(trial.ok_reference_calls):
        return "forgot-zero-grad"
    if falls:
        return shape or "loss-flat"
    return unconverged_slug(losses)


def steps_slug(optimizer_steps: int) -> str:
    """Backward calls and optimizer steps disagree: no step at all leaves the parameters
    where they are (the loss stays flat)."""
    return "loss-flat" if optimizer_steps == 0 else "wrong-value"
