"""Package validation (`python -m grader check`, the instructor page): the reference
passes fully, the starter runs, each [[wrong]] fails with its declared diagnosis, each
[[alternative]] passes fully."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from grader.cache import ReferenceCache
from grader.capture import Capture
from grader.engine import DEV_SEED, GradeJob, grade_with_capture
from grader.protocol import ExerciseError, Report
from grader.sandbox.base import Sandbox
from grader.spec import Package

VALIDATION_WORKERS = 2  # sandbox runs of one package validated at once


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
        if report.integrity_flags:  # our own files: a flag is a false alarm of the detector
            flags = ", ".join(f"{f.kind} ({f.detail})" for f in report.integrity_flags[:3])
            return ValidationItem(kind, file, False, "no integrity flag", f"flagged: {flags}")
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
