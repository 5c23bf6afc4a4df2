"""Validation of an exercise package from the browser: grader.engine.validate_package
through the configured sandbox (the same backend and reference cache the workers use).

It runs synchronously inside the request, with a clear wait message on the page: the
instructor asked for it and waits for its outcome, which is not stored anywhere (the
`python -m grader check` command gives the same answer). A version's reference, wrong
solutions and alternatives are a handful of sandbox runs: seconds, not minutes.
"""

from __future__ import annotations

from dataclasses import dataclass

from courses.models import ExerciseVersion
from grader.engine import Validation
from grader.protocol import ExerciseError, InfrastructureError
from grader.spec import PackageError
from submissions import grading

EXPECTED_WAIT_S = 15  # shown to the instructor; a few sandbox runs of a few seconds each


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


def validate_version(version: ExerciseVersion) -> ValidationOutcome:
    from grader import engine

    try:
        package = grading.package_of(dict(version.files))
        result = engine.validate_package(
            package,
            sandbox=grading.sandbox(),
            cache=grading.reference_cache(),
            seed=version.hidden_seed,
        )
    except (PackageError, ExerciseError) as error:
        return ValidationOutcome(ok=False, rows=(), error=f"The package is invalid: {error}")
    except InfrastructureError as error:
        return ValidationOutcome(
            ok=False, rows=(), error=f"The sandbox could not run (not the package's fault): {error}"
        )
    return outcome_of(result)


def outcome_of(result: Validation) -> ValidationOutcome:
    rows = tuple(
        ValidationRow(
            name=f"{item.kind}: {item.file}", expected=item.expected, got=item.got, ok=item.ok
        )
        for item in result.items
    )
    return ValidationOutcome(ok=result.ok, rows=rows)
