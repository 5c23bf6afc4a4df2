"""The second run: a script exercise whose reference values change in it runs once more
with other starting values (envelope `shift`, grader/harness/shift.py) and every gradient
seed scaled (envelope `grad_scale`, grader/harness/instrument.py), so that a value typed
in, computed by hand, or a fake loss built to be right at the fixed inputs does not
follow (`not-from-autograd`). That run is graded against a reference run that moved
exactly the leaves the learner's run moved (`second_run_references`), and re-judged here
where its values follow the gradients by a power of the scale (`followed_by_power`)."""

from __future__ import annotations

import hashlib
import itertools
import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from grader.cache import ReferenceCache
from grader.capture import Capture, validate_capture
from grader.checks.diagnoses import catalogue
from grader.checks.registry import run_check
from grader.protocol import Report
from grader.report import build_report
from grader.runs.base import LabelledRun
from grader.runs.learner import learner_run
from grader.runs.reference import reference_capture
from grader.sandbox.base import Sandbox
from grader.spec import Package

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


def second_run(
    package: Package,
    code: str,
    reference: Capture,
    scaled: ScaledReference,
    runs: Sequence[LabelledRun],
    *,
    seed: int,
    device: str,
    sandbox: Sandbox,
    cache: ReferenceCache | None,
    job_id: str,
) -> LabelledRun | None:
    """The learner's second run, labelled SCALED with the checks it judges, after `runs`
    (the learner's runs so far); None where it cannot change the verdict (no check's
    reference value changes, or `runs` failed every check it could judge) or where no
    check is judged by every reference it may be graded against (`any_assignment`)."""
    if scaled.capture is None or not _can_judge(runs, scaled.checks):
        return None
    report, learner = learner_run(
        package, code, scaled.capture, sandbox=sandbox, device=device,
        runtime=sandbox.runtime_key(device), job_id=f"{job_id}-scaled",
        grad_scale=scaled.scale, shift=scaled.moves(),
    )  # fmt: skip
    candidates = [scaled]
    if report.status == "graded":
        candidates = second_run_references(
            package, reference, scaled, learner, seed=seed, device=device,
            sandbox=sandbox, cache=cache,
        )  # fmt: skip
    report, judged = any_assignment(package, report, learner, reference, candidates, scaled)
    if not judged:
        return None
    return LabelledRun(SCALED, not_following(package, report, judged), judged)


def _can_judge(runs: Sequence[LabelledRun], checks: frozenset[int]) -> bool:
    """Whether the scaled run could fail a check not failed already: every run so far was
    graded and one of the checks it judges passed in all of them (a check failed in one
    run fails the whole, whatever the scaled run says; mutants and wrong answers skip it)."""
    reports = [run.report for run in runs]
    if any(report.status != "graded" for report in reports):
        return False
    return any(all(report.checks[i].passed for report in reports) for i in checks)


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
    found = catalogue.describe(NOT_FOLLOWING, {})
    named = []
    for index, check in enumerate(report.checks):
        if index in checks and not check.passed:
            data = {**check.data, "diagnosis_title": found.title}
            check = replace(check, diagnosis=found.slug, hint=found.hint, data=data)
        named.append(check)
    return replace(report, checks=tuple(named))
