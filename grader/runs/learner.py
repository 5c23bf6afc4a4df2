"""The learner's run: its envelope (plain data only: no exercise code, no seed), one run
of the learner's code graded against the reference's capture, and the messages a failed
run reports (FORMAT.md section 6)."""

from __future__ import annotations

import signal
import time
from collections.abc import Sequence
from dataclasses import replace

from grader.capture import Capture, CaptureError, parse_result
from grader.checks.budget import BUDGET_EXCEEDED
from grader.protocol import (
    Envelope,
    IntegrityFlag,
    Limits,
    Report,
    RunStatus,
    SandboxResult,
    size_label,
)
from grader.report import build_report, failed_report
from grader.rewrite import Start, captured_names
from grader.runs.base import envelope_limits, run_envelope
from grader.sandbox.base import Sandbox
from grader.spec import Package

NO_RESULT = "your program stopped without producing a result"
OUTPUT_LIMIT = "output limit exceeded"
MEMORY_MARKERS = ("can't allocate memory", "cannot allocate memory", "out of memory")


def learner_envelope(
    package: Package,
    code: str,
    reference: Capture,
    *,
    stand_in: str | None = None,
    grad_scale: float | None = None,
    starts: Sequence[Start] = (),
) -> Envelope:
    """The learner job's envelope: `code` and, for a function exercise, the encoded cases
    of the reference's capture (`stand_in`, `grad_scale`: see `Envelope`; `starts`: those
    `code` was rewritten for, whose data line is reported: `captured_names`)."""
    manifest = package.manifest
    function = manifest.kind == "function"
    return Envelope(
        kind=manifest.kind,
        mode="learner",
        names=captured_names(manifest.names, starts),
        files={"submission.py": code},
        limits=envelope_limits(manifest.limits),
        seed_by_learner=manifest.seed_by_learner,
        entry=manifest.entry if function else None,
        cases=tuple(dict(c.input or {}) for c in reference.cases) if function else None,
        stand_in=stand_in,
        grad_scale=grad_scale,
    )


def learner_run(
    package: Package,
    code: str,
    reference: Capture,
    *,
    sandbox: Sandbox,
    device: str,
    runtime: str,
    job_id: str,
    stand_in: str | None = None,
    grad_scale: float | None = None,
    share: str | None = None,
    starts: Sequence[Start] = (),
) -> tuple[Report, Capture | None]:
    """Runs the learner's code once (on `device`, with a stand-in GPU and every gradient
    seed scaled by `grad_scale` when asked) and
    grades it against `reference`: its report and its validated capture (None without
    one). `runtime`: the report's runtime (the sandbox's key of the job's device);
    `share` (default `job_id`): the submission's key, which its other runs give too, so
    that one zygote generation may fork them all (SandboxRequest.share)."""
    limits = package.manifest.limits
    envelope = learner_envelope(
        package, code, reference, stand_in=stand_in, grad_scale=grad_scale, starts=starts
    )
    started = time.perf_counter()
    run = run_envelope(sandbox, envelope, limits, device, job_id, share or job_id)
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
    return graded_report(package, learner, reference, runtime, duration), learner


def graded_report(
    package: Package, learner: Capture, reference: Capture, runtime: str, duration: float
) -> Report:
    """The report of a learner's capture that ran to its end, judged against `reference`,
    with the notes of a grading budget spent and of output cut."""
    report = build_report(package, learner, reference, runtime, duration)
    notes = [budget_note(report)] if judged_over_budget(report) else []
    if learner.output_truncated:  # cut, never failed: the checks judge what was kept
        notes.append(output_cut_note(package.manifest.limits))
    if notes:
        report = replace(report, message="; ".join(notes))
    return report


def judged_over_budget(report: Report) -> bool:
    """Did some check of this report go unjudged, the grading CPU budget spent?"""
    return any(check.data.get("budget_exceeded") for check in report.checks)


def budget_note(report: Report) -> str:
    """The graded report's note when the grading budget ran out (grader.checks.budget)."""
    missed = sum(1 for check in report.checks if check.data.get("budget_exceeded"))
    return f"{BUDGET_EXCEEDED}: {missed} of {len(report.checks)} checks were not reached (0 points)"


def failure_message(result: SandboxResult, limits: Limits) -> str:
    """What a learner's run that ended without a result is told."""
    if result.status == RunStatus.TIMEOUT:
        return f"time limit of {seconds(limits.wall_seconds)} s exceeded"
    if result.status == RunStatus.MEMORY:
        return _memory(limits)
    if result.status == RunStatus.OUTPUT_LIMIT:
        return OUTPUT_LIMIT
    return NO_RESULT


def seconds(value: float) -> str:
    """A limit in seconds as the messages write it: 20.0 -> "20"."""
    return f"{value:g}"


def output_cut_note(limits: Limits) -> str:
    """The report's note when the code printed more than the output limit."""
    return (
        f"your output was cut at {size_label(limits.stdout_bytes)}: only the first "
        f"{limits.stdout_bytes} bytes of what your code printed were kept and graded"
    )


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
