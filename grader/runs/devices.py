"""The device pair: a script exercise of `device = "cuda"` is graded on every worker with
a GPU (the worker's own, or on a CPU worker the harness's stand-in: envelope `stand_in`,
grader/harness/standin.py) and without one (a sandbox without the GPU), so that a GPU
worker and a CPU worker give the same verdict; any other exercise runs once, on the
worker's own device."""

from __future__ import annotations

from collections.abc import Sequence

from grader.capture import Capture
from grader.protocol import Report
from grader.runs.base import LabelledRun
from grader.runs.learner import learner_run
from grader.sandbox.base import Sandbox
from grader.spec import Package

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


def device_labels(reports: Sequence[Report], *, pair: bool | None = None) -> list[LabelledRun]:
    """The learner's runs of `device_runs`, labelled: the pair's with the machine each ran
    on (every check judged by both), a single run's with nothing. `pair`: whether they are
    (the start of) the pair, when a run cut short leaves one report of it (default: two
    reports are the pair)."""
    if pair is None:
        pair = len(reports) == 2
    labels = [WITH_GPU, WITHOUT_GPU][: len(reports)] if pair else [""]
    return [LabelledRun(label, report) for label, report in zip(labels, reports, strict=True)]


def learner_device_runs(
    package: Package,
    code: str,
    reference: Capture,
    *,
    sandbox: Sandbox,
    device: str,
    job_id: str,
    until_failed: bool = False,
) -> tuple[list[LabelledRun], Capture | None]:
    """The learner's run on each of `device_runs` (the job's `device`), labelled
    (`device_labels`), and the first run's validated capture (None without one).
    `until_failed`: stop after a run that does not pass (`grade_with_capture`)."""
    runtime = sandbox.runtime_key(device)
    planned = device_runs(package, device)
    graded: list[tuple[Report, Capture | None]] = []
    for suffix, (where, stand_in) in enumerate(planned):
        report, capture = learner_run(
            package,
            code,
            reference,
            sandbox=sandbox,
            device=where,
            stand_in=stand_in,
            runtime=runtime,
            job_id=f"{job_id}-{suffix}" if suffix else job_id,
            share=job_id,
        )
        graded.append((report, capture))
        if until_failed and not report.passed:
            break
    reports = [report for report, _ in graded]
    return device_labels(reports, pair=len(planned) == 2), graded[0][1]
