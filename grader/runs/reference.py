"""The reference's run: its envelope (the reference solution, and for a function
exercise the hidden seed and `cases.py`), its capture from the cache or a fresh sandbox
run, and the checks a reference run must pass (a failing reference raises
`ExerciseError`; one ended by load, `ReferenceStarved`)."""

from __future__ import annotations

import contextlib
import signal
from collections.abc import Sequence

from grader.cache import ReferenceCache, cache_key
from grader.capture import Capture, CaptureError, ErrorInfo, parse_result, validate_capture
from grader.protocol import (
    Envelope,
    ExerciseError,
    Limits,
    ReferenceStarved,
    RunStatus,
    SandboxResult,
)
from grader.rewrite import Start, captured_names, rewrite, starts_key
from grader.runs.base import Run, envelope_limits, run_envelope
from grader.runs.learner import failure_message, seconds
from grader.sandbox import publish
from grader.sandbox.base import Sandbox
from grader.sandbox.common import signal_of
from grader.sandbox.config import PACKAGE_HARNESS
from grader.spec import Package

REFERENCE_DETAIL_CHARS = 2_000
# The reference runs' share key (SandboxRequest.share) outside a grading (validation,
# mutants): trusted code, one zygote generation may fork them all.
REFERENCE_SHARE = "reference"


def reference_device(package: Package, device: str) -> str:
    """Where the reference runs: on the CPU where its manifest says so, else on `device`."""
    return "cpu" if package.manifest.reference_device == "cpu" else device


def reference_envelope(
    package: Package,
    seed: int,
    grad_scale: float | None = None,
    starts: Sequence[Start] = (),
) -> Envelope:
    """The reference job's envelope (`grad_scale`: see `Envelope`; `starts`: the
    solution rewritten to start its designated leaves there, grader/rewrite.py)."""
    manifest = package.manifest
    solution = rewrite(package.solution, starts).source if starts else package.solution
    files = {"submission.py": solution}
    function = manifest.kind == "function"
    if function:
        files["cases.py"] = package.cases or ""
    return Envelope(
        kind=manifest.kind,
        mode="reference",
        names=captured_names(manifest.names, starts),
        files=files,
        limits=envelope_limits(manifest.limits),
        seed_by_learner=manifest.seed_by_learner,
        entry=manifest.entry if function else None,
        seed=seed if function else None,
        trials=manifest.trials if function else None,
        grad_scale=grad_scale,
    )


def reference_capture(
    package: Package,
    *,
    seed: int,
    device: str,
    sandbox: Sandbox,
    cache: ReferenceCache | None,
    grad_scale: float | None = None,
    starts: Sequence[Start] = (),
    share: str = REFERENCE_SHARE,
) -> Capture:
    """The reference's capture, from the cache or from a fresh sandbox run (`grad_scale`:
    the run with every gradient seed scaled; `starts`: with its designated leaves at those
    starting values, cached by the values: `grader.runs.second.scaled_reference`). `share`:
    the run's share key (SandboxRequest.share): the grading's, whose runs then take one
    zygote generation between them."""
    where = reference_device(package, device)
    function = package.manifest.kind == "function"
    runtime = f"{sandbox.runtime_key(where)} harness-{publish.digest_of(PACKAGE_HARNESS)}"
    if package.manifest.seed_by_learner:
        runtime += " seed-by-learner"  # its run differs from a harness-seeded one
    if grad_scale is not None:
        runtime += f" grad-scale-{grad_scale!r}"
    if starts:
        runtime += f" {starts_key(starts)}"
    key = cache_key(package.content_hash, seed if function else None, runtime, where)
    if cache is not None:
        cached = cache.get(key)
        if cached is not None:
            try:
                return validate_capture(cached)
            except CaptureError:
                pass
    envelope = reference_envelope(package, seed, grad_scale, starts)
    run = run_envelope(
        sandbox, envelope, package.manifest.limits, where, f"reference-{key[:12]}", share
    )
    capture = _checked_reference(package, run)
    if cache is not None:
        with contextlib.suppress(OSError, ValueError):  # a cache we cannot write costs speed
            cache.put(key, dict(capture.raw))
    return capture


def _checked_reference(package: Package, run: Run) -> Capture:
    slug = package.slug
    starved = _starved(run.result, package.manifest.limits)
    if starved:
        raise ReferenceStarved(f"{slug}: the reference run {starved}: the worker is "
                               "overloaded, not the exercise broken")  # fmt: skip
    if run.result.status != RunStatus.OK:
        # the backend's own message tells a CPU limit from the wall clock (operators only)
        reason = run.result.message or failure_message(run.result, package.manifest.limits)
        raise ExerciseError(f"{slug}: the reference solution failed in the sandbox: {reason}")
    try:
        capture = parse_result(run.result.stdout, run.nonce)
    except CaptureError as error:
        raise ExerciseError(f"{slug}: the reference run gave no valid result: {error}") from None
    if capture.terminated is not None:
        detail = capture.raw.get("terminated", {}).get("error") or capture.terminated.message
        raise ExerciseError(
            f"{slug}: the reference run stopped early ({detail}); stderr: "
            f"{capture.stderr[-REFERENCE_DETAIL_CHARS:]}"
        )
    if capture.exception is not None:
        raise ExerciseError(f"{slug}: the reference solution raised:\n{_trace(capture.exception)}")
    if capture.tamper:  # trusted code: a finding here is a false alarm of the detector
        found = "; ".join(f"{event.kind}: {event.detail}" for event in capture.tamper[:5])
        raise ExerciseError(f"{slug}: the reference run tripped the tamper detector ({found})")
    _check_reference_targets(package, capture)
    return capture


def _starved(result: SandboxResult, limits: Limits) -> str:
    """Why a reference run ended by load rather than by its own fault ("" if it did not):
    its wall clock ran out first (the CPU limit is the lower one: a reference that computes
    too long gets SIGXCPU, before the wall clock, and is broken), or something outside
    SIGKILLed it (not its memory limit: that ends as RunStatus.MEMORY)."""
    if result.status == RunStatus.TIMEOUT and result.duration_s >= limits.wall_seconds:
        if limits.wall_seconds > limits.cpu_seconds:
            wall = seconds(limits.wall_seconds)
            return f"ran out of its {wall} s wall clock before its CPU time"
        return ""
    killed = result.status == RunStatus.CRASHED and _killed_by(result.exit_code, signal.SIGKILL)
    if killed and result.duration_s < limits.cpu_seconds:  # not RLIMIT_CPU's hard SIGKILL
        return "was killed (SIGKILL) from outside the sandbox"
    return ""


def _killed_by(code: int | None, sig: signal.Signals) -> bool:
    return code is not None and signal_of(code) == sig


def _trace(error: ErrorInfo) -> str:
    return (error.traceback or f"{error.type}: {error.message}")[-REFERENCE_DETAIL_CHARS:]


def _check_reference_targets(package: Package, capture: Capture) -> None:
    manifest = package.manifest
    slug = package.slug
    targets = {c.target for c in manifest.checks if c.target}
    if manifest.kind == "script":
        missing = sorted(t for t in targets if t not in capture.variables)
        if missing:
            raise ExerciseError(f"{slug}: the reference solution does not define {missing}")
        return
    if not capture.cases:
        raise ExerciseError(f"{slug}: cases.make_cases produced no cases")
    expects_errors = any(c.type == "raises" for c in manifest.checks)
    for index, case in enumerate(capture.cases):
        if case.input is None:
            raise ExerciseError(f"{slug}: case {index} carries no input")
        if case.exception is not None:
            if not expects_errors:
                raise ExerciseError(
                    f"{slug}: the reference raised on case {index}:\n{_trace(case.exception)}"
                )
            continue
        missing = sorted(t for t in targets if t not in case.observations)
        if missing:
            raise ExerciseError(f"{slug}: case {index} observes no {missing}")
