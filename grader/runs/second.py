"""The second run: a script exercise whose reference values change in it runs once more
with its graded leaves at hidden starting values and every gradient seed scaled, so that
a value typed in, computed by hand, or a fake loss built to be right at the fixed inputs
does not follow (`not-from-autograd`).

The starting values are drawn per submission from its hidden seed over a continuous range
(`grader.rewrite.draw_starts`) and put in place by rewriting the learner's source in the
worker before it reaches the sandbox (`grader.rewrite.rewrite`), never by a hook in the
learner's process; the reference's solution is rewritten the same way and run at the same
values (cached per set of values: `grader.runs.reference.reference_capture`). Every
gradient seed is scaled in the sandbox (envelope `grad_scale`,
grader/harness/instrument.py), and a value is re-judged here where it follows the
gradients by a power of the scale (`followed_by_power`)."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from grader.cache import ReferenceCache
from grader.capture import Capture, TensorValue, validate_capture
from grader.checks.diagnoses import catalogue
from grader.checks.registry import run_check
from grader.protocol import ExerciseError, Report
from grader.report import build_report
from grader.rewrite import (
    SEED,
    Start,
    draw_starts,
    line_moved,
    made_leaves,
    plain_seed,
    plain_starts,
    rewrite,
)
from grader.runs.base import LabelledRun
from grader.runs.learner import graded_report, learner_run
from grader.runs.reference import REFERENCE_SHARE, reference_capture
from grader.sandbox.base import Sandbox
from grader.spec import DataLine, Package

SCALED = "in a second run with other starting values and every gradient scaled: "
GRAD_SCALE = 0.75  # exact in binary floating point: scaled exact values stay exact
NOT_FOLLOWING = "not-from-autograd"
FLOAT_DTYPES = frozenset({"float16", "bfloat16", "float32", "float64"})


def designated_leaves(package: Package, reference: Capture) -> dict[str, tuple[float, ...]]:
    """The exercise's graded leaves and their plain starting values: the names the
    reference's solution makes leaves that require grad (`made_leaves`) or that its
    capture shows as floating-point leaf tensors requiring grad, except a captured name
    that is anything else at the end (a non-leaf, an integer tensor), whose first
    assignment writes its values as literals (`plain_starts`); and torch's seed (`SEED`)
    where the solution seeds it with a literal (`plain_seed`: a model and data made from a
    fixed seed)."""
    names = set(made_leaves(package.solution))
    for name, value in reference.variables.items():
        leaf = (
            isinstance(value, TensorValue)
            and value.requires_grad
            and value.is_leaf
            and value.dtype in FLOAT_DTYPES
        )
        if leaf:
            names.add(name)
        else:
            names.discard(name)
    leaves = plain_starts(package.solution, sorted(names))
    seed = plain_seed(package.solution)
    if seed is not None:
        leaves[SEED] = seed
    return leaves


def hidden_starts(package: Package, reference: Capture, seed: int) -> tuple[Start, ...]:
    """The job's hidden starting values of the designated leaves, and its data line
    (`[data_line]`); none for a function exercise: its hidden cases already change every
    value a constant could match."""
    if package.manifest.kind != "script":
        return ()
    leaves = designated_leaves(package, reference)
    return draw_starts(leaves, seed, package.manifest.data_line)


@dataclass(frozen=True)
class ScaledReference:
    """The reference's second run: its designated leaves at hidden starting values
    (`starts`) and every gradient seed scaled by `scale`; the checks whose verdict it
    changes: those its capture fails against the plain one (their reference value depends
    on the starting values or follows the gradients). `capture` is None where no check
    does, or for function exercises. `base`: the same starting values, gradients unscaled
    (what `followed_by_power` scales), run only when a check needs it (`unscaled`: a run
    whose values all match the scaled capture, as an honest one's mostly do, costs no
    third reference run)."""

    capture: Capture | None
    checks: frozenset[int]
    scale: float = GRAD_SCALE
    starts: tuple[Start, ...] = ()
    base: Capture | None = None
    load_base: Callable[[], Capture] | None = field(default=None, compare=False, repr=False)
    _loaded: dict[str, Capture] = field(default_factory=dict, compare=False, repr=False)

    def unscaled(self, reference: Capture) -> Capture:
        """`base`, run (once) on first use; `reference` where the starts are the plain ones."""
        if self.base is not None:
            return self.base
        if self.load_base is None:
            return reference
        if "base" not in self._loaded:
            self._loaded["base"] = self.load_base()
        return self._loaded["base"]


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
    reference value changes, or `runs` failed every check it could judge). Where a
    designated leaf was not started and nothing is left to run, the run returned only
    labels the checks its hidden start would have judged (the first run's verdicts).

    The learner's source is rewritten (`grader.rewrite.rewrite`); a designated leaf it
    never assigns (made by `exec`, a module attribute, or code that does not parse), or a
    data line whose targets its run never moved, keeps its plain values in that run, and
    so does the reference's (a reference run at the other starts, cached by them): the
    honest learner is never failed for the way it made its leaves or its data, and every
    check that run judges is labelled a claim (`claimed`: its verdict there rests on what
    the code reports, not on inputs it could not know), unless those starts change no
    check of the exercise on their own (`_Second.inert`: training-loop's `w` and `b`, trained
    to the same point from any start, beside a model of the learner's). So is every check
    of an exercise without designated leaves: its second run only scales the gradients."""
    if scaled.capture is None or not _can_judge(runs, scaled.checks):
        return None
    second = _Second(package, reference, scaled, runs, seed, device, sandbox, cache, job_id)
    rewritten = rewrite(code, scaled.starts)
    against = second.against(rewritten.missing)
    if against is None:
        # nothing left to run, but every check the hidden starts would have judged now
        # rests on the first run alone: label it there
        return second.claimed_first_run(rewritten.missing)
    assert against.capture is not None
    report, learner = learner_run(
        package, rewritten.source, against.capture, sandbox=sandbox, device=device,
        runtime=sandbox.runtime_key(device), job_id=f"{job_id}-scaled",
        grad_scale=against.scale, share=job_id, starts=against.starts,
    )  # fmt: skip
    missing = rewritten.missing + _unmoved_lines(against.starts, learner)
    if learner is not None and len(missing) > len(rewritten.missing):
        # the code ran, but never moved its targets to the data line: judged at the
        # plain line (and the other hidden starts), as a claim
        against = second.against(missing)
        if against is None:
            return second.claimed_first_run(missing)
        assert against.capture is not None
        report = graded_report(package, learner, against.capture, report.runtime,
                               report.duration_s)  # fmt: skip
    report = followed_by_power(package, report, learner, reference, against)
    report = not_following(package, report, against.checks)
    return second.labelled(report, against, missing)


@dataclass(frozen=True)
class _Second:
    """What one second run is planned from: the exercise, its plain and scaled
    references, the learner's runs so far, and where the reference's runs go."""

    package: Package
    reference: Capture
    scaled: ScaledReference
    runs: Sequence[LabelledRun]
    seed: int
    device: str
    sandbox: Sandbox
    cache: ReferenceCache | None
    job_id: str

    def against(self, missing: Sequence[str]) -> ScaledReference | None:
        """The reference the run is judged against: `scaled`, or where some starts are
        `missing` in the learner's run, the reference's at the others only (cached by
        them); None where that run could change no verdict."""
        if not missing:
            return self.scaled
        kept = tuple(start for start in self.scaled.starts if start.name not in missing)
        against = self.reference_at(kept, self.seed)
        if against.capture is None or not _can_judge(self.runs, against.checks):
            return None
        return against

    def reference_at(self, starts: Sequence[Start], seed: int) -> ScaledReference:
        return scaled_reference(
            self.package, self.reference, seed=seed, device=self.device,
            sandbox=self.sandbox, cache=self.cache, starts=starts, share=self.job_id,
        )  # fmt: skip

    def claimed_first_run(self, missing: Sequence[str]) -> LabelledRun:
        """No second run left to judge: the first run's report, each check the hidden
        starts would have judged labelled a claim."""
        reason = missing_reason(missing, self.package.manifest.data_line)
        checks = self.scaled.checks
        return LabelledRun("", claimed(self.runs[0].report, checks, reason), checks)

    def labelled(
        self, report: Report, against: ScaledReference, missing: Sequence[str]
    ) -> LabelledRun:
        """The second run's report with its claims labelled, and the checks it judges:
        with starts missing that matter, every check the hidden starts would have judged
        (their reference value may no longer change, so the plain run's verdict stands)
        is a claim; without any start, every check the scale alone judged."""
        if missing and not self.inert(missing):
            judged = against.checks | self.scaled.checks
            reason = missing_reason(missing, self.package.manifest.data_line)
            return LabelledRun(SCALED, claimed(report, judged, reason), judged)
        if not against.starts:
            return LabelledRun(SCALED, claimed(report, against.checks, NO_LEAVES), against.checks)
        return LabelledRun(SCALED, report, against.checks)

    def inert(self, missing: Sequence[str]) -> bool:
        """Do the `missing` starts change no check on their own? Asked of a reference run
        with only them moved, at the public seed's values (whether a check depends on a
        start is the exercise's property, not the values': cached for every submission).
        A forger who hides such a start from the rewrite gains nothing by it."""
        probe = hidden_starts(self.package, self.reference, PROBE_SEED)
        alone = tuple(start for start in probe if start.name in missing)
        return bool(alone) and not self.reference_at(alone, PROBE_SEED).checks


# The seed whose starts tell which starts matter (`_Second.inert`): public, the same for
# every submission, so that reference run is cached once per exercise and set of names.
PROBE_SEED = 20_240_601


def _unmoved_lines(starts: Sequence[Start], learner: Capture | None) -> tuple[str, ...]:
    """The data lines among `starts` whose targets the learner's run never moved (its
    code made them some way the start did not recognise, or undid it): the names of their
    targets. A run without a capture failed, and is reported as such."""
    if learner is None or line_moved(learner.variables):
        return ()
    return tuple(start.name for start in starts if start.is_line)


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
    starts: Sequence[Start] | None = None,
    share: str = REFERENCE_SHARE,
) -> ScaledReference:
    """The second run's reference (see `ScaledReference`) at `starts` (default: the
    job's, `hidden_starts`); `share`: its runs' share key (`reference_capture`)."""
    if package.manifest.kind != "script":
        return ScaledReference(None, frozenset())
    chosen = hidden_starts(package, reference, seed) if starts is None else tuple(starts)

    def run(grad_scale: float | None) -> Capture:
        return reference_capture(
            package, seed=seed, device=device, sandbox=sandbox, cache=cache,
            grad_scale=grad_scale, starts=chosen, share=share,
        )  # fmt: skip

    capture = run(GRAD_SCALE)
    if any(start.is_line for start in chosen) and not line_moved(capture.variables):
        raise ExerciseError(
            f"{package.slug}: exercise.toml's [data_line] is not the reference's data: its "
            "solution never assigned targets on that line of those inputs"
        )
    report = build_report(package, capture, reference, "", 0.0)
    checks = frozenset(i for i, check in enumerate(report.checks) if not check.passed)
    if not checks:
        return ScaledReference(None, checks, starts=chosen)
    if not chosen:  # only the scale changed: the plain reference is the unscaled one
        return ScaledReference(capture, checks, GRAD_SCALE, chosen, reference)
    return ScaledReference(capture, checks, GRAD_SCALE, chosen, load_base=lambda: run(None))


CLAIM = (
    "{names} could not be given hidden starting values (no assignment of {them} was found "
    "in your code), so this check's second run rests on what your code reports"
)
SEED_CLAIM = (
    "the seed could not be drawn per submission (no `torch.manual_seed(...)` statement was "
    "found in your code), so this check's second run rests on what your code reports"
)
NO_LEAVES = (
    "this exercise has no leaf of its own to start at hidden values and no seed to draw, "
    "so this check's second run rests on what your code reports"
)


LINE_CLAIM = (
    "your training data could not be moved to a line drawn per submission (no `{target}` "
    "on the line {target} = {slope:g} * {input} + {intercept:g} was found when your code "
    "ran), so this check's second run rests on what your code reports"
)


def missing_reason(missing: Sequence[str], line: DataLine | None = None) -> str:
    """The claim label of a run in which the designated leaves (or the seed, or the data
    `line`'s targets) `missing` kept their plain values."""
    reasons = []
    lines = [name for name in missing if line is not None and name == line.target]
    leaves = [name for name in missing if name != SEED and name not in lines]
    if leaves:
        names = ", ".join(f"`{name}`" for name in leaves)
        reasons.append(CLAIM.format(names=names, them="it" if len(leaves) == 1 else "them"))
    if SEED in missing:
        reasons.append(SEED_CLAIM)
    if lines and line is not None:
        reasons.append(LINE_CLAIM.format(target=line.target, input=line.input,
                                         slope=line.slope, intercept=line.intercept))  # fmt: skip
    return "; ".join(reasons)


def claimed(report: Report, checks: frozenset[int], reason: str) -> Report:
    """The second run's report with each check of `checks` labelled a claim (`data`
    "claim": `reason`): its verdict there rests on the gradient scale alone, which the
    code could learn at run time."""
    labelled = [
        replace(check, data={**check.data, "claim": reason}) if index in checks else check
        for index, check in enumerate(report.checks)
    ]
    return replace(report, checks=tuple(labelled))


POWERS = (1, 2, 3, 4)  # a value n chained gradient computations deep scales by scale ** n


def followed_by_power(
    package: Package,
    report: Report,
    learner: Capture | None,
    reference: Capture,
    scaled: ScaledReference,
) -> Report:
    """The scaled run's report, where each judged check it fails passes if the learner's
    value is the reference's at the same starting values, gradients unscaled
    (`ScaledReference.unscaled`; the plain reference where no leaf moved) times
    `scale ** n` (POWERS): a second derivative or a Hessian-vector product scales by the
    scale once per gradient computation in its chain, and an honest chain may be longer
    or shorter than the reference's (`torch.autograd.functional.hvp` takes three,
    `grad(g, w, grad_outputs=v)` two). A value typed in or worked out by hand scales by no
    power at all."""
    if learner is None or report.status != "graded":
        return report  # a failed run: combine_runs fails the whole with its message
    failing = [i for i in sorted(scaled.checks) if not report.checks[i].passed]
    if not failing:
        return report
    checks = list(report.checks)
    base = scaled.unscaled(reference)
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
