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
import json
import secrets
import signal
import time
import uuid
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from grader import diagnose
from grader.cache import ReferenceCache, cache_key
from grader.capture import Capture, CaptureError, ErrorInfo, parse_result, validate_capture
from grader.checks import REGISTRY
from grader.checks.runs import losses
from grader.protocol import (
    PROTOCOL_VERSION,
    CheckResult,
    ExerciseError,
    Limits,
    Report,
    RunStatus,
    SandboxRequest,
    SandboxResult,
)
from grader.sandbox.base import Sandbox
from grader.spec import Package

DEV_SEED = 20_240_601  # the documented development seed of `python -m grader`
TENSOR_ELEMENTS = 100_000  # values kept per captured tensor
FRAME_OVERHEAD = 256  # bytes of the result frame's header line
NO_RESULT = "your program stopped without producing a result"
OUTPUT_LIMIT = "output limit exceeded"
TRUNCATED = "\n[output truncated]\n"
MEMORY_MARKERS = ("can't allocate memory", "cannot allocate memory", "out of memory")
REFERENCE_DETAIL_CHARS = 2_000
VALIDATION_WORKERS = 2  # sandbox runs of one package validated at once


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
        "result_bytes": max(limits.result_bytes - FRAME_OVERHEAD, 1),
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
    if manifest.kind == "function":
        files["cases.py"] = package.cases or ""
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
    key = cache_key(
        package.content_hash, seed if function else None, sandbox.runtime_key(where), where
    )
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
    if run.result.status != RunStatus.OK:
        reason = failure_message(run.result, package.manifest.limits)
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
    _check_reference_targets(package, capture)
    return capture


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
        raise ExerciseError(f"{slug}: cases.generate produced no cases")
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
            raise ExerciseError(f"{slug}: cases.run gives no observation {missing} (case {index})")


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


def failed_report(
    package: Package, message: str, runtime: str, duration: float, capture: Capture | None = None
) -> Report:
    return Report(
        status="failed",
        score=0.0,
        max_score=float(package.manifest.points),
        passed=False,
        message=message,
        stdout=_stdout(capture, package.manifest.limits.stdout_bytes) if capture else "",
        exception=_exception(capture) if capture else None,
        duration_s=round(duration, 3),
        runtime=runtime,
    )


def grade(job: GradeJob, *, sandbox: Sandbox, cache: ReferenceCache | None = None) -> Report:
    """Grades one submission (see the module docstring for the failure semantics)."""
    return grade_with_capture(job, sandbox=sandbox, cache=cache)[0]


def grade_with_capture(
    job: GradeJob, *, sandbox: Sandbox, cache: ReferenceCache | None = None
) -> tuple[Report, Capture | None]:
    """`grade`, also returning the learner's validated capture (None without one)."""
    package = job.package
    limits = package.manifest.limits
    reference = reference_capture(
        package, seed=job.seed, device=job.device, sandbox=sandbox, cache=cache
    )
    runtime = sandbox.runtime_key(job.device)
    envelope = learner_envelope(package, job.code, reference)
    started = time.perf_counter()
    run = run_envelope(sandbox, envelope, limits, job.device, job.job_id)
    duration = time.perf_counter() - started
    if run.result.status != RunStatus.OK:
        return failed_report(package, failure_message(run.result, limits), runtime, duration), None
    try:
        learner = parse_result(run.result.stdout, run.nonce)
    except CaptureError:
        return failed_report(package, NO_RESULT, runtime, duration), None
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


# -- report --------------------------------------------------------------------------


def run_checks(package: Package, learner: Capture, reference: Capture) -> tuple[CheckResult, ...]:
    extra = {
        slug: diagnose.Diagnosis(slug, spec.title, spec.hint)
        for slug, spec in package.manifest.diagnoses.items()
    }
    results = []
    for spec in package.manifest.checks:
        outcome = REGISTRY[spec.type](learner, reference, spec)
        diagnosis = hint = ""
        data = dict(outcome.data)
        if not outcome.passed:
            found = diagnose.describe(outcome.diagnosis or "wrong-value", extra)
            diagnosis, hint = found.slug, found.hint
            data["diagnosis_title"] = found.title
        results.append(
            CheckResult(
                name=spec.name,
                passed=outcome.passed,
                score=float(spec.points) if outcome.passed else 0.0,
                max_score=float(spec.points),
                message=outcome.message,
                diagnosis=diagnosis,
                hint=hint,
                data=data,
            )
        )
    return tuple(results)


def _stdout(capture: Capture, cap: int) -> str:
    """What the learner's code printed (visible cases only), at most `cap` characters."""
    parts = [capture.stdout]
    parts += [case.stdout for case in capture.cases if case.visible]
    if capture.stderr and capture.kind == "script":  # raw output could echo hidden inputs
        parts.append(capture.stderr)
    text = "".join(part for part in parts if part)
    return text if len(text) <= cap else text[:cap] + TRUNCATED


def _exception(capture: Capture) -> dict[str, Any] | None:
    if capture.exception is not None:
        return capture.exception.to_json()
    for case in capture.cases:
        if case.exception is not None and case.visible:
            return case.exception.to_json()
    for case in capture.cases:
        if case.exception is not None:  # a hidden input: its values are never shown
            hidden = "raised on a hidden input (its message is not shown)"
            return {**case.exception.to_json(), "message": hidden, "traceback": ""}
    return None


def _curves(package: Package, learner: Capture, reference: Capture) -> dict[str, Any] | None:
    if not any(c.type == "loss_curve" for c in package.manifest.checks):
        return None
    if reference.kind == "function":
        mine = losses(learner.cases[0].backward_calls) if learner.cases else []
        theirs = losses(reference.cases[0].backward_calls) if reference.cases else []
    else:
        mine, theirs = losses(learner.backward_calls), losses(reference.backward_calls)
    return {"learner": [_finite(v) for v in mine], "reference": [_finite(v) for v in theirs]}


def _finite(value: float) -> float | str:
    return value if value == value and abs(value) != float("inf") else str(value)


def build_report(
    package: Package, learner: Capture, reference: Capture, runtime: str, duration: float
) -> Report:
    checks = run_checks(package, learner, reference)
    score = sum(c.score for c in checks)
    maximum = float(package.manifest.points)
    return Report(
        status="graded",
        score=score,
        max_score=maximum,
        passed=score == maximum,
        checks=checks,
        stdout=_stdout(learner, package.manifest.limits.stdout_bytes),
        exception=_exception(learner),
        curves=_curves(package, learner, reference),
        duration_s=round(duration, 3),
        runtime=runtime,
    )


# -- validation ----------------------------------------------------------------------


@dataclass(frozen=True)
class ValidationItem:
    kind: str  # "reference" | "starter" | "wrong" | "alternative"
    file: str
    ok: bool
    expected: str
    got: str

    def line(self) -> str:
        mark = "ok  " if self.ok else "FAIL"
        return f"  {mark} {self.kind:<11} {self.file}: expected {self.expected}; got {self.got}"


@dataclass(frozen=True)
class Validation:
    slug: str
    items: tuple[ValidationItem, ...]

    @property
    def ok(self) -> bool:
        return bool(self.items) and all(item.ok for item in self.items)

    def summary(self) -> str:
        failed = sum(not item.ok for item in self.items)
        head = f"{'ok  ' if self.ok else 'FAIL'} {self.slug}: {len(self.items)} runs"
        head += ", all as declared" if self.ok else f", {failed} not as declared"
        return "\n".join([head, *(item.line() for item in self.items)])


def _describe(report: Report) -> str:
    if report.status == "failed":
        return f"failed run ({report.message})"
    failed = [c for c in report.checks if not c.passed]
    text = f"{report.score:g}/{report.max_score:g}"
    if failed:
        text += " failing " + ", ".join(f"{c.name!r} [{c.diagnosis}]" for c in failed)
    return text


def _grade_file(
    package: Package, code: str, *, sandbox: Sandbox, cache: ReferenceCache | None, seed: int
) -> tuple[Report, Capture | None]:
    job = GradeJob(package=package, code=code, seed=seed)
    return grade_with_capture(job, sandbox=sandbox, cache=cache)


def validate_package(
    package: Package,
    *,
    sandbox: Sandbox,
    cache: ReferenceCache | None = None,
    seed: int = DEV_SEED,
    workers: int = VALIDATION_WORKERS,
) -> Validation:
    """The reference passes fully, the starter runs without an error, each [[wrong]]
    fails with its declared diagnosis, each [[alternative]] passes fully."""
    manifest = package.manifest
    try:
        solution, _ = _grade_file(
            package, package.solution, sandbox=sandbox, cache=cache, seed=seed
        )
    except ExerciseError as error:
        item = ValidationItem("reference", "solution.py", False, "full score", str(error))
        return Validation(package.slug, (item,))
    full = f"{manifest.points:g}/{manifest.points:g}"
    items = [ValidationItem("reference", "solution.py", solution.passed, full, _describe(solution))]
    runs = [("starter", "starter.py", "")]
    runs += [("wrong", w.file, w.diagnosis) for w in manifest.wrong]
    runs += [("alternative", a.file, "") for a in manifest.alternatives]

    def judge(run: tuple[str, str, str]) -> ValidationItem:
        kind, file, diagnosis = run
        report, capture = _grade_file(
            package, package.files[file], sandbox=sandbox, cache=cache, seed=seed
        )
        if kind == "starter":
            clean = report.status == "graded" and capture is not None
            clean = clean and capture.exception is None  # type: ignore[union-attr]
            got = _describe(report) if clean else _starter_problem(report)
            return ValidationItem(kind, file, clean, "runs without an error", got)
        if kind == "wrong":
            found = {c.diagnosis for c in report.checks if not c.passed}
            ok = report.status == "graded" and not report.passed and diagnosis in found
            return ValidationItem(kind, file, ok, f"fails with {diagnosis}", _describe(report))
        return ValidationItem(kind, file, report.passed, full, _describe(report))

    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        items += list(pool.map(judge, runs))
    return Validation(package.slug, tuple(items))


def _starter_problem(report: Report) -> str:
    if report.exception:
        return f"raised {report.exception.get('type')}: {report.exception.get('message')}"
    return _describe(report)
