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
import itertools
import json
import secrets
import signal
import time
import uuid
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from grader import diagnose
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
from grader.checks.registry import run_check
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
    size_label,
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


def reference_envelope(
    package: Package,
    seed: int,
    grad_scale: float | None = None,
    shift: dict[str, Any] | None = None,
) -> dict[str, Any]:
    manifest = package.manifest
    files = {"submission.py": package.solution}
    envelope: dict[str, Any] = {
        "protocol": PROTOCOL_VERSION,
        "kind": manifest.kind,
        "mode": "reference",
        "names": list(manifest.names),
        "limits": _envelope_limits(manifest.limits),
    }
    if manifest.seed_by_learner:
        envelope["seed_by_learner"] = True
    if manifest.kind == "function":
        files["cases.py"] = package.cases or ""
        envelope.update(entry=manifest.entry, seed=seed, trials=manifest.trials)
    if grad_scale is not None:
        envelope["grad_scale"] = grad_scale
    if shift is not None:
        envelope["shift"] = shift
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
    if manifest.seed_by_learner:
        envelope["seed_by_learner"] = True
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
    package: Package,
    *,
    seed: int,
    device: str,
    sandbox: Sandbox,
    cache: ReferenceCache | None,
    grad_scale: float | None = None,
    shift: Transform | None = None,
    indices: Sequence[int] | None = None,
) -> Capture:
    """The reference's capture, from the cache or from a fresh sandbox run (`grad_scale`:
    the run with every gradient seed scaled; `shift`: with other starting values, moving
    every leaf, or with `indices` only the leaves of those positions: `scaled_reference`)."""
    where = reference_device(package, device)
    function = package.manifest.kind == "function"
    runtime = f"{sandbox.runtime_key(where)} harness-{publish.digest_of(PACKAGE_HARNESS)}"
    if package.manifest.seed_by_learner:
        runtime += " seed-by-learner"  # its run differs from a harness-seeded one
    if grad_scale is not None:
        runtime += f" grad-scale-{grad_scale!r}"
    if shift is not None:
        runtime += f" {shift.key(indices)}"
    key = cache_key(package.content_hash, seed if function else None, runtime, where)
    if cache is not None:
        cached = cache.get(key)
        if cached is not None:
            try:
                return validate_capture(cached)
            except CaptureError:
                pass
    moved = None if shift is None else shift.envelope(None, indices)
    envelope = reference_envelope(package, seed, grad_scale, moved)
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
    scaled: ScaledReference | None = None,
) -> tuple[Report, Capture | None]:
    """`grade`, also returning the learner's validated capture (None without one).
    `reference` / `scaled`: the reference's captures for this job's package, seed and
    device (`reference_capture`, `scaled_reference`), when the caller already holds them
    (package validation grades many files against one).

    A script exercise of `device = "cuda"` runs twice on every worker, so that a GPU
    worker and a CPU worker give the same verdict: once on a machine with a GPU (the
    worker's GPU, or on a CPU worker the harness's stand-in GPU: envelope `stand_in`,
    grader/harness/standin.py) and once without one (a sandbox without the GPU).

    A script exercise whose reference values change in it runs once more with other
    starting values and every gradient seed scaled (`scaled_reference`): a value typed in,
    computed by hand, or a fake loss built to be right at the fixed inputs does not follow
    (`not-from-autograd`). That run is graded against a reference run that moved exactly
    the leaves the learner's run moved (`second_run_references`), so an honest solution
    whose leaves the harness did not move is judged at the same starting values as the
    reference's, never failed for it.

    Each check passes only where it passes in every run that judges it (`combine_runs`)."""
    package = job.package
    if reference is None:
        reference = reference_capture(
            package, seed=job.seed, device=job.device, sandbox=sandbox, cache=cache
        )
    if scaled is None:
        scaled = scaled_reference(
            package, reference, seed=job.seed, device=job.device, sandbox=sandbox, cache=cache
        )
    runs = device_runs(package, job.device)
    graded = [
        _learner_report(job, reference, device, stand_in, sandbox, str(suffix or ""))
        for suffix, (device, stand_in) in enumerate(runs)
    ]
    capture = graded[0][1]
    labels = [WITH_GPU, WITHOUT_GPU] if len(graded) == 2 else [""]
    labelled: list[tuple[str, Report, frozenset[int] | None]] = [
        (label, report, None) for label, (report, _) in zip(labels, graded, strict=True)
    ]
    if scaled.capture is not None and _scaled_run_can_judge(labelled, scaled.checks):
        report, learner = _learner_report(
            job, scaled.capture, job.device, None, sandbox, "scaled", scaled.scale, scaled.moves()
        )
        candidates = [scaled]
        if report.status == "graded":
            candidates = second_run_references(
                package, reference, scaled, learner, seed=job.seed, device=job.device,
                sandbox=sandbox, cache=cache,
            )  # fmt: skip
        report, judged = any_assignment(package, report, learner, reference, candidates, scaled)
        if judged:
            labelled.append((SCALED, not_following(package, report, judged), judged))
    if len(labelled) == 1:
        return labelled[0][1], capture
    return combine_runs(labelled), capture


def _scaled_run_can_judge(
    labelled: Sequence[tuple[str, Report, frozenset[int] | None]], checks: frozenset[int]
) -> bool:
    """Whether the scaled run could fail a check not failed already: every run so far was
    graded and one of the checks it judges passed in all of them (a check failed in one
    run fails the whole, whatever the scaled run says; mutants and wrong answers skip it)."""
    reports = [report for _, report, _ in labelled]
    if any(report.status != "graded" for report in reports):
        return False
    return any(all(report.checks[i].passed for report in reports) for i in checks)


WITH_GPU = "on a machine with a GPU: "
WITHOUT_GPU = "on a machine without a GPU: "
SCALED = "in a second run with other starting values and every gradient scaled: "
GRAD_SCALE = 0.75  # exact in binary floating point: scaled exact values stay exact
NOT_FOLLOWING = "not-from-autograd"


@dataclass(frozen=True)
class Transform:
    """The second run's other starting values: every leaf the code creates that requires
    grad becomes `scale * x + offset` (envelope `shift`, grader/harness/shift.py)."""

    scale: float
    offset: float

    def envelope(
        self, allowed: Sequence[str] | None, indices: Sequence[int] | None = None
    ) -> dict[str, Any]:
        """The envelope's `shift`: with neither list every leaf moves (the reference's own
        run); `allowed`: only leaves of those fingerprints, each once (a learner's run);
        `indices`: only the leaves of those positions in creation order (a reference run
        limited to the leaves a learner's run moved)."""
        moved: dict[str, Any] = {"scale": self.scale, "offset": self.offset}
        moved["allowed"] = None if allowed is None else list(allowed)
        moved["indices"] = None if indices is None else sorted(indices)
        return moved

    def key(self, indices: Sequence[int] | None) -> str:
        """The reference cache's runtime words for a reference run with this transform."""
        key = f"shift-{self.scale!r}x+{self.offset!r}"
        if indices is None:
            return key
        listed = ",".join(str(index) for index in sorted(indices))
        return f"{key} indices-{hashlib.sha256(listed.encode()).hexdigest()[:16]}"


# scale > 0 and offset > 0 keep a positive value positive; 1 - scale holds a factor 3, so
# no binary floating-point value is a fixed point; values with few binary digits stay exact.
TRANSFORMS = (
    Transform(1.75, 0.5),
    Transform(1.375, 0.25),
    Transform(0.625, 0.5),
    Transform(1.1875, 0.5),
)


def transform_for(seed: int) -> Transform:
    """The job's transform, drawn by its hidden seed: the second run's values cannot be
    read off the repository in advance (the reference cache key names the transform)."""
    return TRANSFORMS[seed % len(TRANSFORMS)]


@dataclass(frozen=True)
class ScaledReference:
    """The reference's second run: other starting values (`shift`, envelope `shift`,
    grader/harness/shift.py) and every gradient seed scaled by `scale` (envelope
    `grad_scale`, grader/harness/instrument.py); the checks whose verdict it changes:
    those its capture fails against the plain one (their reference value depends on the
    starting values or follows the gradients). `capture` is None where no check does, or
    for function exercises (their hidden inputs already change every value a constant
    could match). `base`: the same starting values, gradients unscaled (what
    `followed_by_power` scales); `shifted`: the fingerprints of the leaves it moved;
    `indices`: the positions of the leaves the run was limited to (None: every leaf)."""

    capture: Capture | None
    checks: frozenset[int]
    scale: float = GRAD_SCALE
    shift: Transform | None = None
    base: Capture | None = None
    shifted: tuple[str, ...] = ()
    indices: tuple[int, ...] | None = None

    def moves(self) -> dict[str, Any] | None:
        """The learner envelope's `shift`: move only leaves the reference's run moved."""
        return None if self.shift is None else self.shift.envelope(self.shifted)


def scaled_reference(
    package: Package,
    reference: Capture,
    *,
    seed: int,
    device: str,
    sandbox: Sandbox,
    cache: ReferenceCache | None,
    indices: Sequence[int] | None = None,
    shift: Transform | None = None,
) -> ScaledReference:
    """The second run's reference (see `ScaledReference`), moving every leaf or, with
    `indices`, only the leaves of those positions (`second_run_references`), by `shift`
    (default: the seed's, `transform_for`)."""
    if package.manifest.kind != "script":
        return ScaledReference(None, frozenset())
    shift = shift or transform_for(seed)

    def run(grad_scale: float | None) -> Capture:
        return reference_capture(
            package, seed=seed, device=device, sandbox=sandbox, cache=cache,
            grad_scale=grad_scale, shift=shift, indices=indices,
        )  # fmt: skip

    capture = run(GRAD_SCALE)
    report = build_report(package, capture, reference, "", 0.0)
    checks = frozenset(i for i, check in enumerate(report.checks) if not check.passed)
    listed = None if indices is None else tuple(sorted(indices))
    if not checks:
        return ScaledReference(None, checks, shift=shift, indices=listed)
    base = run(None)
    moved = capture.provenance.shifted if capture.provenance is not None else None
    return ScaledReference(capture, checks, GRAD_SCALE, shift, base, moved or (), listed)


MAX_ASSIGNMENTS = 8  # reference runs tried for one learner run whose moved leaves differ


def second_run_references(
    package: Package,
    reference: Capture,
    scaled: ScaledReference,
    learner: Capture | None,
    *,
    seed: int,
    device: str,
    sandbox: Sandbox,
    cache: ReferenceCache | None,
) -> list[ScaledReference]:
    """The references the learner's second run may be graded against: `[scaled]` where
    the learner's run moved the same leaves (the same fingerprints, as many times) as the
    reference's; otherwise reference runs limited to as many leaves of each fingerprint as
    the learner's run moved (each cached by its positions), one per way of choosing them
    among the reference's leaves of that fingerprint (two leaves of 3.0, the learner moved
    one: which one is not known; at most MAX_ASSIGNMENTS, in creation order). A leaf made by
    a route the harness does not hook, or unlike the reference's (another shape or dtype),
    was not moved: neither is the reference's. A run without a result keeps `[scaled]`."""
    if learner is None or scaled.shift is None:
        return [scaled]
    moved = learner.provenance.shifted if learner.provenance is not None else None
    counts = Counter(moved or ())
    if counts == Counter(scaled.shifted):
        return [scaled]
    positions: dict[str, list[int]] = {}
    for index, mark in enumerate(scaled.shifted):
        positions.setdefault(mark, []).append(index)
    choices = [
        list(itertools.combinations(places, min(counts[mark], len(places))))
        for mark, places in positions.items()
    ]
    found = []
    for chosen in itertools.islice(itertools.product(*choices), MAX_ASSIGNMENTS):
        indices = sorted(index for group in chosen for index in group)
        found.append(
            scaled_reference(
                package,
                reference,
                seed=seed,
                device=device,
                sandbox=sandbox,
                cache=cache,
                indices=indices,
                shift=scaled.shift,
            )
        )
    return found


def any_assignment(
    package: Package,
    report: Report,
    learner: Capture | None,
    reference: Capture,
    candidates: Sequence[ScaledReference],
    scaled: ScaledReference,
) -> tuple[Report, frozenset[int]]:
    """The second run's report and the checks it judges, from the references it may be
    graded against (`second_run_references`): a check is judged where every one judges it,
    and passes where it passes against one of them (the honest learner's is among them)."""
    graded: list[tuple[Report, frozenset[int]]] = []
    for candidate in candidates:
        if candidate.capture is None:
            return report, frozenset()
        mine = report
        if candidate is not scaled and learner is not None:
            mine = build_report(
                package, learner, candidate.capture, report.runtime, report.duration_s
            )
        graded.append(
            (followed_by_power(package, mine, learner, reference, candidate), candidate.checks)
        )
    judged = frozenset.intersection(*(checks for _, checks in graded))
    first = graded[0][0]
    checks = list(first.checks)
    for index in judged:
        if checks[index].passed:
            continue
        passing = [r.checks[index] for r, _ in graded[1:] if r.checks[index].passed]
        if passing:
            checks[index] = passing[0]
    return replace(first, checks=tuple(checks)), judged


POWERS = (1, 2, 3, 4)  # a value n chained gradient computations deep scales by scale ** n


def followed_by_power(
    package: Package,
    report: Report,
    learner: Capture | None,
    reference: Capture,
    scaled: ScaledReference,
) -> Report:
    """The scaled run's report, where each judged check it fails passes if the learner's
    value is the reference's at the same starting values (`scaled.base`: unscaled; the
    plain reference without a shift) times `scale ** n` (POWERS): a second derivative or a
    Hessian-vector product scales by the scale once per gradient computation in its
    chain, and an honest chain may be longer or shorter than the reference's
    (`torch.autograd.functional.hvp` takes three, `grad(g, w, grad_outputs=v)` two). A
    value typed in or worked out by hand scales by no power at all."""
    if learner is None or report.status != "graded":
        return report  # a failed run: combine_runs fails the whole with its message
    failing = [i for i in sorted(scaled.checks) if not report.checks[i].passed]
    if not failing:
        return report
    checks = list(report.checks)
    base = scaled.base if scaled.base is not None else reference
    for power in POWERS:
        powered = scaled_values(base, scaled.scale**power)
        for index in list(failing):
            outcome = run_check(package.manifest.checks[index], learner, powered)
            if outcome.passed:
                checks[index] = replace(
                    checks[index],
                    passed=True,
                    score=checks[index].max_score,
                    message=outcome.message,
                    diagnosis="",
                    hint="",
                )
                failing.remove(index)
    return replace(report, checks=tuple(checks))


FLOAT_DTYPES = frozenset({"float16", "bfloat16", "float32", "float64"})


def scaled_values(capture: Capture, factor: float) -> Capture:
    """`capture` with every floating-point value of its captured names (tensors, their
    grads, numbers, inside lists and dicts) multiplied by `factor`."""
    raw = json.loads(json.dumps(dict(capture.raw)))
    variables = raw.get("variables") or {}
    raw["variables"] = {name: _times(value, factor) for name, value in variables.items()}
    return validate_capture(raw)


def _times(value: Any, factor: float) -> Any:
    if not isinstance(value, dict):
        return value
    kind = value.get("kind")
    if kind == "tensor" and value.get("dtype") in FLOAT_DTYPES:
        value["data"] = [_product(v, factor) for v in value.get("data", [])]
        if isinstance(value.get("grad"), dict):
            value["grad"] = _times(value["grad"], factor)
    elif kind == "number":
        value["value"] = _product(value.get("value"), factor)
    elif kind == "list":
        value["items"] = [_times(item, factor) for item in value.get("items", [])]
    elif kind == "dict":
        value["items"] = {k: _times(v, factor) for k, v in value.get("items", {}).items()}
    return value


def _product(value: Any, factor: float) -> Any:
    """A JSON-encoded float times `factor` (NaN and infinities, encoded as text, and
    integers of a number value stay as they are)."""
    if isinstance(value, float):
        return value * factor
    return value


def not_following(package: Package, report: Report, checks: frozenset[int]) -> Report:
    """The scaled run's report, each failing check of `checks` named `not-from-autograd`
    (it passed at the fixed inputs, or an earlier run's failure is the one reported)."""
    found = diagnose.describe(NOT_FOLLOWING, {})
    named = []
    for index, check in enumerate(report.checks):
        if index in checks and not check.passed:
            data = {**check.data, "diagnosis_title": found.title}
            check = replace(check, diagnosis=found.slug, hint=found.hint, data=data)
        named.append(check)
    return replace(report, checks=tuple(named))


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
    """One report from the runs with and without a GPU (`combine_runs`)."""
    return combine_runs([(WITH_GPU, with_gpu, None), (WITHOUT_GPU, without_gpu, None)])


def combine_runs(runs: Sequence[tuple[str, Report, frozenset[int] | None]]) -> Report:
    """One report from several runs of one submission, each (label, report, the indices
    of the checks it judges; None: all): a failed run fails the whole (its message starts
    with its label); otherwise each check keeps the first failure of a run that judges
    it, its message prefixed with that run's label. The first run judges every check."""
    first = runs[0][1]
    flags = limited([flag for _, report, _ in runs for flag in report.integrity_flags])
    duration = round(sum(report.duration_s for _, report, _ in runs), 3)
    for label, report, _ in runs:
        if report.status != "graded":
            message = label + report.message
            return replace(report, message=message, integrity_flags=flags, duration_s=duration)
    checks = []
    for index, check in enumerate(first.checks):
        for label, report, judged in runs:
            if judged is not None and index not in judged:
                continue
            mine = report.checks[index]
            if not mine.passed:
                check = replace(mine, message=label + mine.message)
                break
        checks.append(check)
    score = sum(c.score for c in checks)
    exception = next((r.exception for _, r, _ in runs if r.exception), None)
    return replace(
        first,
        score=score,
        passed=score == first.max_score,
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
    suffix: str,
    grad_scale: float | None = None,
    shift: dict[str, Any] | None = None,
) -> tuple[Report, Capture | None]:
    """Runs the learner's code once (on `device`, with a stand-in GPU, every gradient
    seed scaled by `grad_scale` and other starting values (`shift`) when asked)."""
    package = job.package
    limits = package.manifest.limits
    runtime = sandbox.runtime_key(job.device)
    envelope = learner_envelope(package, job.code, reference)
    if stand_in is not None:
        envelope["stand_in"] = stand_in
    if grad_scale is not None:
        envelope["grad_scale"] = grad_scale
    if shift is not None:
        envelope["shift"] = shift
    job_id = f"{job.job_id}-{suffix}" if suffix else job.job_id
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
    report = build_report(package, learner, reference, runtime, duration)
    if learner.output_truncated:  # cut, never failed: the checks judge what was kept
        report = replace(report, message=output_cut_note(limits))
    return report, learner


def output_cut_note(limits: Limits) -> str:
    """The report's note when the code printed more than the output limit."""
    return (
        f"your output was cut at {size_label(limits.stdout_bytes)}: only the first "
        f"{limits.stdout_bytes} bytes of what your code printed were kept and graded"
    )
