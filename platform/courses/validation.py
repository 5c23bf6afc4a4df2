"""The body of a validation job (courses.services.exercise_job_run): a version's package
through grader.validation.validate_package, in the configured sandbox with the reference cache
the workers use. Its outcome (a row per run: the reference passes, every known wrong
solution fails with its declared diagnosis, every alternative passes) is stored as the
job's JSON outcome; `python -m grader check` gives the same answer.

A broken package is an outcome (the instructor fixes it). A sandbox fault is not: it
raises InfrastructureError, and the job is retried, then failed, like a grading.
"""

from __future__ import annotations

from dataclasses import dataclass

from courses.models import ExerciseVersion
from grader.protocol import ExerciseError
from grader.spec import PackageError
from grader.validation import Validation, validate_package
from submissions import grading


@dataclass(frozen=True)
class ValidationRow:
    name: str
    expected: str
    got: str
    ok: bool


@dataclass(frozen=True)
class ValidationOutcome:
    ok: bool
    rows: tuple[ValidationRow, ...]
    error: str = ""

    @property
    def problems(self) -> int:
        return sum(1 for r in self.rows if not r.ok) + (1 if self.error else 0)


def version_validate(*, version: ExerciseVersion) -> ValidationOutcome:
    try:
        package = grading.package_of(dict(version.files))
        result = validate_package(
            package,
            sandbox=grading.sandbox(),
            cache=grading.reference_cache(),
            seed=version.hidden_seed,
        )
    except (PackageError, ExerciseError) as error:
        return ValidationOutcome(ok=False, rows=(), error=f"The package is invalid: {error}")
    return outcome_of(result)


def outcome_of(result: Validation) -> ValidationOutcome:
    rows = tuple(
        ValidationRow(
            name=f"{item.kind}: {item.file}", expected=item.expected, got=item.got, ok=item.ok
        )
        for item in result.items
    )
    return ValidationOutcome(ok=result.ok, rows=rows)
