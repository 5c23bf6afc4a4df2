"""What a run is: one envelope sent to the harness in a sandbox (`run_envelope`), and
what a graded run returns (`LabelledRun`); several runs of one submission make one report
(`combine_runs`)."""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from dataclasses import dataclass, replace

from grader.capture import TENSOR_ELEMENTS
from grader.checks.budget import BUDGET_EXCEEDED
from grader.checks.integrity import limited
from grader.protocol import (
    FRAME_OVERHEAD_BYTES,
    Envelope,
    EnvelopeLimits,
    Limits,
    Report,
    SandboxRequest,
    SandboxResult,
)
from grader.sandbox.base import Sandbox


@dataclass(frozen=True)
class Run:
    """One sandbox run of the harness and the nonce its result frame must carry."""

    result: SandboxResult
    nonce: str


@dataclass(frozen=True)
class LabelledRun:
    """One graded run of a submission: its report, the label its failures' messages start
    with, and the indices of the checks it judges (None: every check)."""

    label: str
    report: Report
    judged: frozenset[int] | None = None


def envelope_limits(limits: Limits) -> EnvelopeLimits:
    """The envelope's `limits` of a run under `limits`."""
    return EnvelopeLimits(
        stdout_bytes=limits.stdout_bytes,
        tensor_elements=TENSOR_ELEMENTS,
        result_bytes=max(limits.result_bytes - FRAME_OVERHEAD_BYTES, 1),
    )


def run_envelope(
    sandbox: Sandbox,
    envelope: Envelope,
    limits: Limits,
    device: str,
    job_id: str,
    share: str = "",
) -> Run:
    """Runs the harness on `envelope` (FORMAT.md section 2: the envelope line, a learner
    function job's cases line, the nonce); `share`: SandboxRequest.share."""
    nonce = secrets.token_hex(16)
    stdin = envelope.stdin(nonce)
    request = SandboxRequest(job_id=job_id, stdin=stdin, limits=limits, device=device, share=share)
    return Run(sandbox.run(request), nonce)


def combine_runs(runs: Sequence[LabelledRun]) -> Report:
    """One report from several runs of one submission: a failed run fails the whole (its
    message starts with its label); otherwise each check keeps the first failure of a run
    that judges it, its message prefixed with that run's label, and the `claim` label
    (`data`) of any run that judges it. The first run judges every check."""
    first = runs[0].report
    flags = limited([flag for run in runs for flag in run.report.integrity_flags])
    duration = round(sum(run.report.duration_s for run in runs), 3)
    for run in runs:
        if run.report.status != "graded":
            message = run.label + run.report.message
            return replace(run.report, message=message, integrity_flags=flags, duration_s=duration)
    checks = []
    for index, check in enumerate(first.checks):
        judging = [run for run in runs if run.judged is None or index in run.judged]
        for run in judging:
            mine = run.report.checks[index]
            if not mine.passed:
                check = replace(mine, message=run.label + mine.message)
                break
        claims = [run.report.checks[index].data.get("claim") for run in judging]
        claim = next((text for text in claims if text), None)
        if claim and "claim" not in check.data:  # a point that rests on what the code says
            check = replace(check, data={**check.data, "claim": claim})
        checks.append(check)
    score = sum(c.score for c in checks)
    exception = next((run.report.exception for run in runs if run.report.exception), None)
    # a later run's note that the grading budget ran out wins over the first's message
    noted = (run.report.message for run in runs if BUDGET_EXCEEDED in run.report.message)
    return replace(
        first,
        message=next(noted, first.message),
        score=score,
        passed=score == first.max_score,
        checks=tuple(checks),
        exception=exception,
        integrity_flags=flags,
        duration_s=duration,
    )
