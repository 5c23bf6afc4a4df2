"""Grading: run the reference and the learner's code in sandboxes, compare, report.

`grade(job, sandbox=..., cache=...)` is what the platform calls. The engine plans the
runs of one submission, runs them and combines their reports; each kind of run lives in
grader/runs/ (reference, learner, devices: with and without a GPU, second: other starting
values and every gradient scaled) and returns the run it adds. The reference job never
sees the learner's code and the learner's job never sees the reference, its
observations or the hidden seed: only the encoded cases of function exercises.

Failure semantics (FORMAT.md section 6): a failed learner run is a `Report` with
status "failed" and a clear message; a failing reference raises `ExerciseError`;
a fault of the sandbox itself propagates as `InfrastructureError`.
"""

from __future__ import annotations

import hashlib
import hmac
import uuid
from dataclasses import dataclass, field

from grader.cache import ReferenceCache
from grader.capture import Capture
from grader.checks.budget import grading_budget
from grader.protocol import Report
from grader.runs.base import combine_runs
from grader.runs.devices import learner_device_runs
from grader.runs.reference import reference_capture
from grader.runs.second import ScaledReference, scaled_reference, second_run
from grader.sandbox.base import Sandbox
from grader.spec import Package

DEV_SEED = 20_240_601  # the documented development seed of `python -m grader`
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


def grade(job: GradeJob, *, sandbox: Sandbox, cache: ReferenceCache | None = None) -> Report:
    """Grades one submission (see the module docstring for the failure semantics)."""
    return grade_with_capture(job, sandbox=sandbox, cache=cache)[0]


def grade_with_capture(
    job: GradeJob,
    *,
    sandbox: Sandbox,
    cache: ReferenceCache | None = None,
    reference: Capture | None = None,
    scaled: ScaledReference | None = None,
    until_failed: bool = False,
) -> tuple[Report, Capture | None]:
    """`grade`, also returning the learner's validated capture (None without one).
    `reference` / `scaled`: the reference's captures for this job's package, seed and
    device (`reference_capture`, `scaled_reference`), when the caller already holds them
    (package validation grades many files against one). `until_failed`: stop at the first
    run that does not pass, which is enough to know that the code fails (package
    validation's auto-mutants, grader.authoring.mutants.judge); the report then names
    that run's failed checks only, and a learner's grading never sets it.

    A script exercise of `device = "cuda"` runs twice on every worker, so that a GPU
    worker and a CPU worker give the same verdict: once on a machine with a GPU (the
    worker's GPU, or on a CPU worker the harness's stand-in GPU: envelope `stand_in`,
    grader/harness/standin.py) and once without one (a sandbox without the GPU):
    grader.runs.devices.

    A script exercise whose reference values change in it runs once more with its graded
    leaves at starting values drawn from the job's hidden seed, written into the source
    before it reaches the sandbox, and every gradient seed scaled (`scaled_reference`): a
    value typed in, computed by hand, or a fake loss built to be right at the fixed inputs
    does not follow (`not-from-autograd`). The reference runs at the same values (cached
    by them): grader.runs.second, grader/rewrite.py.

    Each check passes only where it passes in every run that judges it
    (`grader.runs.base.combine_runs`).

    Judging the submission's runs has one CPU budget (grader.checks.budget): the checks
    it does not reach score 0 and the report's message says "grading budget exceeded";
    the submission is graded all the same, never retried as an infrastructure fault."""
    with grading_budget():
        return _graded(job, sandbox, cache, reference, scaled, until_failed)


def _graded(
    job: GradeJob,
    sandbox: Sandbox,
    cache: ReferenceCache | None,
    reference: Capture | None,
    scaled: ScaledReference | None,
    until_failed: bool,
) -> tuple[Report, Capture | None]:
    package = job.package
    if reference is None:
        reference = reference_capture(
            package, seed=job.seed, device=job.device, sandbox=sandbox, cache=cache,
            share=job.job_id,
        )  # fmt: skip
    if scaled is None:  # (the runs of one grading, the reference's too, share a zygote)
        scaled = scaled_reference(
            package, reference, seed=job.seed, device=job.device, sandbox=sandbox, cache=cache,
            share=job.job_id,
        )  # fmt: skip
    runs, capture = learner_device_runs(
        package, job.code, reference, sandbox=sandbox, device=job.device, job_id=job.job_id,
        until_failed=until_failed,
    )  # fmt: skip
    failed_already = until_failed and not runs[-1].report.passed
    second = None if failed_already else second_run(
        package, job.code, reference, scaled, runs, seed=job.seed, device=job.device,
        sandbox=sandbox, cache=cache, job_id=job.job_id,
    )  # fmt: skip
    if second is not None:
        runs.append(second)
    if len(runs) == 1:
        return runs[0].report, capture
    return combine_runs(runs), capture
