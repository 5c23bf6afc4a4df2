"""Grading: run the reference and the learner's code in sandboxes, compare, report.

`grade(job, sandbox=..., cache=...)` is what the platform calls. The reference job never
sees the learner's code and the learner's job never sees the reference, its
observations or the hidden seed: only the encoded cases of function exercises.

Failure semantics (FORMAT.md section 6): a failed learner run is a `Report` with
status "failed" and a clear message; a failing reference raises `ExerciseError`;
a fault of the sandbox itself propagates as `InfrastructureError`.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import secrets
import signal
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from grader.cache import ReferenceCache, cache_key
from grader.capture import (
    TENSOR_ELEMENTS,
    Capture,
    CaptureError,
    ErrorInfo,
    parse_result,
    validate_capture,
)
from grader.checks.integrity import limited
from grader.protocol import (
    FRAME_OVERHEAD_BYTES,
    PROTOCOL_VERSION,
    ExerciseError,
    IntegrityFlag,
    Limits,
    ReferenceStarved,
    Report,
    RunStatus,
    SandboxRequest,
    SandboxResult,
)
from grader.report import build_report, failed_report
from grader.sandbox import publish
from grader.sandbox.base import Sandbox
from grader.sandbox.common import signal_of
from grader.sandbox.config import PACKAGE_HARNESS
from grader.spec import Package

DEV_SEED = 20_240_601  # the documented development seed of `python -m grader`
NO_RESULT = "your program stopped without producing a result"
OUTPUT_LIMIT = "output limit exceeded"
MEMORY_MARKERS = ("can't allocate memory", "cannot allocate memory", "out of memory")
REFERENCE_DETAIL_CHARS = 2_000


SEED_BITS = 63  # a seed fits a signed 64-bit database column


def submission_seed(secret: bytes, submission: str) -> int:
    """The hidden-case seed of one submission: HMAC-SHA256 of the submission's key (e.g.
    its id) under a server secret (e.g. the exercise version's hidden seed). Store it on
    the submission: a regrade with the same seed reproduces the score, and hidden inputs
    one submission saw (printed, leaked) say nothing about another's."""
    if not secret:
        raise ValueError("submission_seed needs a non-empty secret")
    digest = hmac.new(secret, submission.encode("utf-8"), hashlib.sha256).digest()
    return int.from_bytes(digest[:8], "big") >> (64 - SEED_BITS)


@dataclass(frozen=True)
class GradeJob:
    package: Package
    code: str
    seed: int = DEV_SEED
    device: str = "cpu"
    job_id: str = field(default_factory=lambda: uuid.uuid4().hex)


# -- envelopes -----------------------------------------------------------------------


def _envelope_limits(limits: Limits) -> dict[str, int]:
    return {
        "stdout_bytes": limits.stdout_bytes,
        "tensor_elements": TENSOR_ELEMENTS,
        "result_bytes": max(limits.result_bytes - FRAME_OVERHEAD_BYTES, 1),
    }


def reference_envelope(package: Package, seed: int) -> dict[str, Any]:
    manifest = package.manifest
    files = {"submission.py": package.solution}
    envelope: dict[str, Any] = {
        "protocol": PROTOCOL_VERSION,
        "kind": manifest.kind,
        "mode": "reference",
        "names": list(manifest.names),
        "limits": _envelope_limits(manifest.limits),
    }
    if manifest.kind == "function":
        files["cases.py"] = package.cases or ""
        envelope.update(entry=manifest.entry, seed=seed, trials=manifest.trials)
    envelope["files"] = files
    return envelope


def learner_envelope(package: Package, code: str, reference: Capture) -> dict[str, Any]:
    manifest = package.manifest
    files = {"submission.py": code}
    envelope: dict[str, Any] = {
        "protocol": PROTOCOL_VERSION,
        "kind": manifest.kind,
        "mode": "learner",
        "names": list(manifest.names),
        "limits": _envelope_limits(manifest.limits),
    }
    if manifest.kind == "function":  # plain data only: no exercise code, no seed
        envelope.update(entry=manifest.entry, cases=[dict(c.input or {}) for c in reference.cases])
    envelope["files"] = files
    return envelope


@dataclass(frozen=True)
class Run:
    result: SandboxResult
    nonce: str


def run_envelope(
    sandbox: Sandbox, envelope: Mapping[str, Any], limits: Limits, device: str, job_id: str
) -> Run:
    nonce = secrets.token_hex(16)
    line = json.dumps(envelope, separators=(",", ":"), allow_nan=False)
    stdin = f"{line}\n{nonce}\n".encode()
    request = SandboxRequest(job_id=job_id, stdin=stdin, limits=limits, device=device)
    return Run(sandbox.run(request), nonce)


# -- reference -----------------------------------------------------------------------


def reference_device(package: Package, device: str) -> str:
    return "cpu" if package.manifest.reference_device == "cpu" else device


def reference_capture(
    package: Package, *, seed: int, device: str, sandbox: Sandbox, cache: ReferenceCache | None
) -> Capture:
    """The reference's capture, from the cache or from a fresh sandbox run."""
    where = reference_device(package, device)
    function = package.manifest.kind == "function"
    runtime = f"{sandbox.runtime_key(where)} harness-{publish.digest_of(PACKAGE_HARNESS)}"
    key = cache_key(package.content_hash, seed if function else None, runtime, where)
    if cache is not None:
        cached = cache.get(key)
        if cached is not None:
            try:
                return validate_capture(cached)
            except CaptureError:
                pass
    envelope = reference_envelope(package, seed)
    run = run_envelope(sandbox, envelope, package.manifest.limits, where, f"reference-{key[:12]}")
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
            wall = _seconds(limits.wall_seconds)
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


# -- learner -------------------------------------------------------------------------


def failure_message(result: SandboxResult, limits: Limits) -> str:
    if result.status == RunStatus.TIMEOUT:
        return f"time limit of {_seconds(limits.wall_seconds)} s exceeded"
    if result.status == RunStatus.MEMORY:
        return _memory(limits)
    if result.status == RunStatus.OUTPUT_LIMIT:
        return OUTPUT_LIMIT
    return NO_RESULT


def _seconds(value: float) -> str:
    return f"{value:g}"


def _memory(limits: Limits) -> str:
    return f"memory limit of {limits.memory_mb} MB exceeded"


def _terminated_message(capture: Capture, limits: Limits) -> str:
    ended = capture.terminated
    assert ended is not None
    if ended.reason == "result-too-large":
        return f"{OUTPUT_LIMIT} (the result of your program was too large)"
    if ended.reason == "signal":
        if ended.code == signal.SIGXCPU:
            return f"CPU time limit of {limits.cpu_seconds} s exceeded"
        if ended.code == signal.SIGKILL:
            return f"{NO_RESULT} (it was killed; the {_memory(limits)}?)"
        return f"{NO_RESULT} (it was killed by signal {ended.code})"
    if ended.reason == "exit":
        return f"{NO_RESULT} (it exited with status {ended.code} before finishing)"
    return NO_RESULT


def _memory_error(capture: Capture) -> bool:
    errors = [capture.exception] + [case.exception for case in capture.cases]
    for error in errors:
        if error is None:
            continue
        text = error.message.lower()
        if error.type == "MemoryError" or any(marker in text for marker in MEMORY_MARKERS):
            return True
    return False


def grade(job: GradeJob, *, sandbox: Sandbox, cache: ReferenceCache | None = None) -> Report:
    """Grades one submission (see the module docstring for the failure semantics)."""
    return grade_with_capture(job, sandbox=sandbox, cache=cache)[0]


def grade_with_capture(
    job: GradeJob,
    *,
    sandbox: Sandbox,
    cache: ReferenceCache | None = None,
    reference: Capture | None = None,
) -> tuple[Report, Capture | None]:
    """`grade`, also returning the learner's validated capture (None without one).
    `reference`: the reference's capture for this job's package, seed and device, when the
    caller already holds it (package validation grades many files against one).

    A script exercise of `device = "cuda"` runs twice on every worker, so that a GPU
    worker and a CPU worker give the same verdict: once on a machine with a GPU (the
    worker's GPU, or on a CPU worker the harness's stand-in GPU: envelope `stand_in`,
    grader/harness/standin.py) and once without one (a sandbox without the GPU). Each
    check passes only where it passes in both runs (`combine_device_runs`)."""
    package = job.package
    if reference is None:
        reference = reference_capture(
            package, seed=job.seed, device=job.device, sandbox=sandbox, cache=cache
        )
    runs = device_runs(package, job.device)
    graded = [
        _learner_report(job, reference, device, stand_in, sandbox, suffix)
        for suffix, (device, stand_in) in enumerate(runs)
    ]
    if len(graded) == 1:
        return graded[0]
    (with_gpu, capture), (without_gpu, _) = graded
    return combine_device_runs(package, with_gpu, without_gpu), capture


WITH_GPU = "on a machine with a GPU: "
WITHOUT_GPU = "on a machine without a GPU: "


def device_runs(package: Package, device: str) -> list[tuple[str, str | None]]:
    """(sandbox device, stand-in) of each learner run: the worker's own, or for a script
    exercise of `device = "cuda"` first with a GPU (real or stand-in), then without."""
    manifest = package.manifest
    if manifest.device != "cuda" or manifest.kind != "script":
        return [(device, None)]
    if device == "cuda":
        return [("cuda", None), ("cpu", None)]
    return [("cpu", "cuda"), ("cpu", None)]


def combine_device_runs(package: Package, with_gpu: Report, without_gpu: Report) -> Report:
    """One report from the runs with and without a GPU: a failed run fails the whole
    (its message says which machine); otherwise each check keeps the first failure."""
    flags = limited([*with_gpu.integrity_flags, *without_gpu.integrity_flags])
    duration = round(with_gpu.duration_s + without_gpu.duration_s, 3)
    for report, where in ((with_gpu, WITH_GPU), (without_gpu, WITHOUT_GPU)):
        if report.status != "graded":
            message = where + report.message
            return replace(report, message=message, integrity_flags=flags, duration_s=duration)
    checks = []
    for gpu, plain in zip(with_gpu.checks, without_gpu.checks, strict=True):
        if not gpu.passed:
            checks.append(replace(gpu, message=WITH_GPU + gpu.message))
        elif not plain.passed:
            checks.append(replace(plain, message=WITHOUT_GPU + plain.message))
        else:
            checks.append(gpu)
    score = sum(c.score for c in checks)
    exception = with_gpu.exception or without_gpu.exception
    return replace(
        with_gpu,
        score=score,
        passed=score == with_gpu.max_score,
        checks=tuple(checks),
        exception=exception,
        integrity_flags=flags,
        duration_s=duration,
    )


def _learner_report(
    job: GradeJob,
    reference: Capture,
    device: str,
    stand_in: str | None,
    sandbox: Sandbox,
    suffix: int,
) -> tuple[Report, Capture | None]:
    """Runs the learner's code once (on `device`, with a stand-in GPU when asked)."""
    package = job.package
    limits = package.manifest.limits
    runtime = sandbox.runtime_key(job.device)
    envelope = learner_envelope(package, job.code, reference)
    if stand_in is not None:
        envelope["stand_in"] = stand_in
    job_id = job.job_id if suffix == 0 else f"{job.job_id}-{suffix}"
    started = time.perf_counter()
    run = run_envelope(sandbox, envelope, limits, device, job_id)
    duration = time.perf_counter() - started
    if run.result.status != RunStatus.OK:
        return failed_report(package, failure_message(run.result, limits), runtime, duration), None
    try:
        learner = parse_result(run.result.stdout, run.nonce)
    except CaptureError as error:  # an honest harness never frames an invalid capture
        flag = IntegrityFlag("invalid-capture", str(error))
        return failed_report(package, NO_RESULT, runtime, duration, flags=[flag]), None
    if learner.kind != reference.kind:
        return failed_report(package, NO_RESULT, runtime, duration), None
    if learner.terminated is not None:
        message = _terminated_message(learner, limits)
        return failed_report(package, message, runtime, duration, learner), learner
    if _memory_error(learner):
        return failed_report(package, _memory(limits), runtime, duration, learner), learner
    if learner.output_truncated:
        message = f"{OUTPUT_LIMIT} (more than {limits.stdout_bytes} bytes printed)"
        return failed_report(package, message, runtime, duration, learner), learner
    return build_report(package, learner, reference, runtime, duration), learner
