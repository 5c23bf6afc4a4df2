"""Package validation (`python -m grader check`, the instructor page): the reference
passes fully, the output limit fits what the statement asks (`limits_problems`), the
starter runs and does not pass (or scores no more than its declared `[starter]
max_share`), each [[wrong]] fails with its declared diagnosis (a file that scores more
than it should is told which check would catch it: grader.authoring.weak_checks), each
[[alternative]] passes fully, and every auto-mutant of the reference (grader.authoring.mutants) is
caught unless the manifest declares it `[[equivalent_mutant]]`.

The reference runs once (or comes from the cache); every other file and every mutant is
graded against that one capture, on the caller's (warm) backend, two at a time. A caller
that shows the validation as it goes passes `on_progress`: it is called, on the calling
thread, with the partial Validation after the reference and after each further run."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor, as_completed
from dataclasses import dataclass, replace

from grader.authoring.mutants import MutantPlan, MutantResult, diff, judge, plan_mutants
from grader.authoring.weak_checks import catching_hint
from grader.cache import ReferenceCache
from grader.capture import Capture
from grader.engine import DEV_SEED, GradeJob, grade_with_capture
from grader.protocol import ExerciseError, Report
from grader.runs.reference import reference_capture
from grader.runs.second import ScaledReference, scaled_reference
from grader.sandbox.base import Sandbox
from grader.spec import Manifest, Package

VALIDATION_WORKERS = 2  # sandbox runs of one package validated at once
SHARE_EPSILON = 1e-9  # a starter's score exactly at its declared share is within it


@dataclass(frozen=True)
class ValidationItem:
    kind: str  # "reference" | "starter" | "wrong" | "alternative"
    file: str
    ok: bool
    expected: str
    got: str
    diagnoses: tuple[str, ...] = ()  # a wrong file's failed checks' diagnoses, in order

    def line(self) -> str:
        mark = "ok  " if self.ok else "FAIL"
        return f"  {mark} {self.kind:<11} {self.file}: expected {self.expected}; got {self.got}"


@dataclass(frozen=True)
class Validation:
    slug: str
    items: tuple[ValidationItem, ...]
    mutants: tuple[MutantResult, ...] = ()
    solution: str = ""  # the reference solution the mutants were made from (for diffs)
    stale: tuple[str, ...] = ()  # declared equivalents that name no generated mutant
    pending: int = 0  # runs still to come (a partial validation, see on_progress)
    limits: tuple[str, ...] = ()  # why the output limit does not fit the statement

    @property
    def ok(self) -> bool:
        return (
            bool(self.items)
            and not self.pending
            and all(item.ok for item in self.items)
            and not any(result.bad for result in self.mutants)
            and not self.stale
            and not self.limits
        )

    @property
    def survivors(self) -> tuple[MutantResult, ...]:
        return tuple(result for result in self.mutants if result.outcome == "survived")

    def mutant_counts(self) -> dict[str, int]:
        counts = {"generated": len(self.mutants)}
        for outcome in ("caught", "equivalent", "survived", "error"):
            counts[outcome] = sum(result.outcome == outcome for result in self.mutants)
        return counts

    def diff(self, result: MutantResult) -> str:
        return diff(self.solution, result.mutant)

    def summary(self) -> str:
        failed = sum(not item.ok for item in self.items)
        bad = sum(result.bad for result in self.mutants) + len(self.stale)
        head = f"{'ok  ' if self.ok else 'FAIL'} {self.slug}: {len(self.items)} runs"
        head += ", all as declared" if failed == 0 else f", {failed} not as declared"
        lines = [head, *(item.line() for item in self.items)]
        lines += [f"  FAIL limits      exercise.toml: {problem}" for problem in self.limits]
        if self.mutants or self.stale:
            counts = ", ".join(f"{n} {k}" for k, n in self.mutant_counts().items())
            lines.append(f"  {'ok  ' if bad == 0 else 'FAIL'} mutants     {counts}")
            lines += [_mutant_line(result) for result in self.mutants if result.bad]
            lines += [
                f"  FAIL mutant      {name}: declared equivalent, but no such mutant is made "
                "(the solution changed: rename or remove the declaration)"
                for name in self.stale
            ]
            for result in self.survivors:
                lines.append(f"  survivor {result.mutant.name}: {result.mutant.summary}")
                lines += [f"    {line}" for line in self.diff(result).splitlines()]
        return "\n".join(lines)


def _mutant_line(result: MutantResult) -> str:
    return f"  FAIL mutant      {result.mutant.name}: {result.outcome} ({result.detail})"


def _describe(report: Report) -> str:
    if report.status == "failed":
        return f"failed run ({report.message})"
    failed = [c for c in report.checks if not c.passed]
    text = f"{report.score:g}/{report.max_score:g}"
    if failed:
        text += " failing " + ", ".join(f"{c.name!r} [{c.diagnosis}]" for c in failed)
    return text


Progress = Callable[[Validation], None]


def validate_package(
    package: Package,
    *,
    sandbox: Sandbox,
    cache: ReferenceCache | None = None,
    seed: int = DEV_SEED,
    workers: int = VALIDATION_WORKERS,
    mutants: bool = True,
    on_progress: Progress | None = None,
) -> Validation:
    """The reference passes fully, the starter runs without an error and scores no more
    than it may (`_starter_item`), each [[wrong]] fails with its declared diagnosis,
    each [[alternative]] passes fully, and (unless
    `mutants` is False) no auto-mutant survives that the manifest does not declare.
    `on_progress` sees the partial result after each run, in the order they finish."""
    manifest = package.manifest
    try:
        reference = reference_capture(
            package, seed=seed, device="cpu", sandbox=sandbox, cache=cache
        )
        scaled = scaled_reference(
            package, reference, seed=seed, device="cpu", sandbox=sandbox, cache=cache
        )
        solution, _ = _grade(package, package.solution, (reference, scaled), sandbox, cache, seed)
    except ExerciseError as error:
        item = ValidationItem("reference", "solution.py", False, "full score", str(error))
        return Validation(package.slug, (item,))
    full = f"{manifest.points:g}/{manifest.points:g}"
    items = [ValidationItem("reference", "solution.py", solution.passed, full, _describe(solution))]
    limits = tuple(limits_problems(package, reference))
    runs = [("starter", "starter.py", "")]
    runs += [("wrong", w.file, w.diagnosis) for w in manifest.wrong]
    runs += [("alternative", a.file, "") for a in manifest.alternatives]

    def judge_file(run: tuple[str, str, str]) -> ValidationItem:
        kind, file, diagnosis = run
        report, capture = _grade(
            package, package.files[file], (reference, scaled), sandbox, cache, seed
        )
        item = _item(kind, file, diagnosis, full, report, capture, manifest)
        if not item.ok and capture is not None and _scored_too_much(kind, report):
            hint = catching_hint(package, capture, reference)
            item = replace(item, got=f"{item.got}; {hint}")
        return item

    plan = plan_mutants(package, reference, scaled) if mutants else None

    def task(index: int) -> ValidationItem | MutantResult:
        if index < len(runs):
            return judge_file(runs[index])
        assert plan is not None
        mutant = plan.mutants[index - len(runs)]
        return judge(plan, mutant, sandbox=sandbox, seed=seed, device="cpu", cache=cache)

    count = len(runs) + (len(plan.mutants) if plan is not None else 0)
    stale = tuple(plan.stale_declarations()) if plan is not None else ()
    notify = on_progress or (lambda partial: None)
    notify(
        Validation(
            package.slug, tuple(items), solution=package.solution, pending=count, limits=limits
        )
    )
    done: dict[int, ValidationItem | MutantResult] = {}
    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        futures: dict[Future[ValidationItem | MutantResult], int] = {
            pool.submit(task, index): index for index in range(count)
        }
        try:
            for future in as_completed(futures):
                done[futures[future]] = future.result()
                if len(done) < count:
                    partial = _partial(package, items, list(done.values()), count - len(done))
                    notify(replace(partial, limits=limits))
        except BaseException:  # a sandbox fault, a time limit: the runs not started are not
            for future in futures:
                future.cancel()
            raise
    ordered = [done[index] for index in range(count)]
    return replace(_partial(package, items, ordered, 0, stale), limits=limits)


def _partial(
    package: Package,
    items: list[ValidationItem],
    done: list[ValidationItem | MutantResult],
    pending: int,
    stale: tuple[str, ...] = (),
) -> Validation:
    return Validation(
        package.slug,
        (*items, *(result for result in done if isinstance(result, ValidationItem))),
        mutants=tuple(result for result in done if isinstance(result, MutantResult)),
        solution=package.solution,
        stale=stale,
        pending=pending,
    )


OUTPUT_MARGIN = 4  # the reference's own output fits the output limit this many times
PRINT_BYTES_PER_STEP = 32  # the least room a required print per iteration must get
OUTPUT_STREAMS = 2  # the run's stdout and stderr, each cut at limits.stdout_bytes
JSON_EXPANSION = 6  # the most bytes one printed byte takes in the capture ("\\u0001")


def limits_problems(package: Package, reference: Capture) -> list[str]:
    """Why the output limit is one a learner following the statement could not meet: the
    reference's own output does not fit it OUTPUT_MARGIN times; an exercise that asks
    for the loss printed at every step (a `stdout` check in "losses" mode) and allows up
    to `max_steps` steps (its `loss_curve`) gives less than PRINT_BYTES_PER_STEP (or the
    reference's own bytes per step) per step; or the run's stdout and stderr, each at the
    output limit and JSON-escaped at worst, do not fit the result limit (the sandbox's
    hard cap would end the run before the harness cuts)."""
    manifest = package.manifest
    cap = manifest.limits.stdout_bytes
    problems = []
    printed = _printed_bytes(reference)
    if printed * OUTPUT_MARGIN > cap:
        problems.append(
            f"the reference prints {printed} bytes: limits.stdout_bytes ({cap}) must be at "
            f"least {OUTPUT_MARGIN} times that"
        )
    steps = _max_printed_steps(package)
    if steps is not None:
        calls = max(1, len(reference.backward_calls))
        per_step = max(PRINT_BYTES_PER_STEP, -(-len(reference.stdout.encode()) // calls))
        if steps * per_step > cap:
            problems.append(
                f"up to {steps} steps with the loss printed at each need about "
                f"{steps * per_step} bytes ({per_step} a step): limits.stdout_bytes is {cap}"
            )
    if OUTPUT_STREAMS * cap * JSON_EXPANSION > manifest.limits.result_bytes:
        problems.append(
            f"stdout and stderr of up to {cap} bytes each do not fit limits.result_bytes "
            f"({manifest.limits.result_bytes}) once encoded"
        )
    return problems


def _printed_bytes(capture: Capture) -> int:
    """The most bytes one output stream of the run holds (stdout, stderr, a case's)."""
    sizes = [len(capture.stdout.encode()), len(capture.stderr.encode())]
    sizes += [len(case.stdout.encode()) for case in capture.cases]
    return max(sizes)


def _max_printed_steps(package: Package) -> int | None:
    """The most steps allowed where the statement asks for a print per step (None: no
    such requirement, or no bound on the steps)."""
    checks = package.manifest.checks
    if not any(c.type == "stdout" and getattr(c.options, "mode", "") == "losses" for c in checks):
        return None
    bounds = [getattr(c.options, "max_steps", None) for c in checks if c.type == "loss_curve"]
    known = [bound for bound in bounds if bound is not None]
    return max(known) if known else None


def _grade(
    package: Package,
    code: str,
    references: tuple[Capture, ScaledReference],
    sandbox: Sandbox,
    cache: ReferenceCache | None,
    seed: int,
) -> tuple[Report, Capture | None]:
    """Grades `code` against the package's reference captures; a second run's reference
    at fewer hidden starting values (grader.runs.second.second_run) comes from `cache`
    where it holds it."""
    job = GradeJob(package=package, code=code, seed=seed)
    reference, scaled = references
    return grade_with_capture(job, sandbox=sandbox, cache=cache, reference=reference, scaled=scaled)


def _item(
    kind: str,
    file: str,
    diagnosis: str,
    full: str,
    report: Report,
    capture: Capture | None,
    manifest: Manifest,
) -> ValidationItem:
    if report.integrity_flags:  # our own files: a flag is a false alarm of the detector
        flags = ", ".join(f"{f.kind} ({f.detail})" for f in report.integrity_flags[:3])
        return ValidationItem(kind, file, False, "no integrity flag", f"flagged: {flags}")
    if kind == "starter":
        return _starter_item(file, report, capture, manifest)
    if kind == "wrong":
        found = {c.diagnosis for c in report.checks if not c.passed}
        ok = report.status == "graded" and not report.passed and diagnosis in found
        named = tuple(c.diagnosis for c in report.checks if not c.passed)
        expected = f"fails with {diagnosis}"
        return ValidationItem(kind, file, ok, expected, _describe(report), diagnoses=named)
    return ValidationItem(kind, file, report.passed, full, _describe(report))


def _starter_item(
    file: str, report: Report, capture: Capture | None, manifest: Manifest
) -> ValidationItem:
    """The starter runs without an error and scores no more than its declared share of
    the points (`[starter] max_share`; without it, it must not pass): an untouched starter
    must not earn the exercise."""
    clean = report.status == "graded" and capture is not None
    clean = clean and capture.exception is None  # type: ignore[union-attr]
    share = manifest.starter_max_share
    if share is None:
        expected = "runs without an error and does not pass"
        within = not report.passed
    else:
        most = share * manifest.points
        expected = f"runs without an error, at most {most:g}/{manifest.points:g} ({share:.0%})"
        within = report.score <= most + SHARE_EPSILON
    got = _describe(report) if clean else _starter_problem(report)
    if clean and not within:
        got = f"{got}: an untouched starter scores too much"
    return ValidationItem("starter", file, clean and within, expected, got)


def _scored_too_much(kind: str, report: Report) -> bool:
    """A graded starter that scored too much, or a wrong file the checks let through or
    failed for another reason than the declared one: a check is missing."""
    return report.status == "graded" and kind in ("starter", "wrong")


def _starter_problem(report: Report) -> str:
    if report.exception:
        return f"raised {report.exception.get('type')}: {report.exception.get('message')}"
    return _describe(report)


__all__ = ["MutantPlan", "Progress", "Validation", "ValidationItem", "validate_package"]
