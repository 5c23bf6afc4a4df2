"""The body of a validation job (authoring.jobs.exercise_job_run): a version's package
through grader.validation.validate_package, in the configured sandbox with the reference cache
the workers use. Its outcome (a row per run: the reference passes, every known wrong
solution fails with its declared diagnosis, every alternative passes) is stored as the
job's JSON outcome, with a row per auto-mutant of the reference (caught with its
diagnoses, survived with its diff, or declared equivalent with its reason);
`python -m grader check` gives the same answer.

While it runs, the job's outcome is the partial result, rewritten after each run (the
reference first, then the others in the order they finish) with `pending` > 0 runs to
come, so the page and the API show the rows as they arrive.

A broken package is an outcome (the instructor fixes it). A sandbox fault is not: it
raises InfrastructureError, and the job is retried, then failed, like a grading.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from courses.models import ExerciseVersion
from grader.authoring.validation import Validation, validate_package
from grader.protocol import ExerciseError
from grader.spec import PackageError
from grading import bridge


@dataclass(frozen=True)
class ValidationRow:
    name: str
    expected: str
    got: str
    ok: bool


@dataclass(frozen=True)
class MutantRow:
    name: str  # mutation@line, as the manifest's [[equivalent_mutant]] names it
    mistake: str  # what the mutation does, in words
    outcome: str  # "caught" | "survived" | "equivalent" | "error"
    detail: str  # the diagnoses, the score it got, the declared reason, or the failure
    diff: str  # unified diff of the solution (survivors and declared equivalents)
    ok: bool


@dataclass(frozen=True)
class ValidationOutcome:
    ok: bool
    rows: tuple[ValidationRow, ...]
    error: str = ""
    mutants: tuple[MutantRow, ...] = ()
    mutant_counts: dict[str, int] = field(default_factory=dict)
    stale_equivalents: tuple[str, ...] = ()  # declared, but no such mutant is made
    pending: int = 0  # runs still to come: a partial outcome, the job is running

    @property
    def done(self) -> int:
        return len(self.rows) + len(self.mutants)

    @property
    def problems(self) -> int:
        bad = sum(1 for r in self.rows if not r.ok) + sum(1 for m in self.mutants if not m.ok)
        return bad + len(self.stale_equivalents) + (1 if self.error else 0)


def outcome_json(outcome: ValidationOutcome) -> dict[str, Any]:
    """What the job stores (ExerciseJob.outcome) and web/_job.html reads."""
    return {**asdict(outcome), "problems": outcome.problems, "runs_done": outcome.done}


def version_validate(
    *, version: ExerciseVersion, on_progress: Callable[[ValidationOutcome], None] | None = None
) -> ValidationOutcome:
    """The version's validation; `on_progress` sees each partial outcome (pending > 0)."""
    progress = None if on_progress is None else (lambda partial: on_progress(outcome_of(partial)))
    try:
        package = bridge.package_of(dict(version.files))
        result = validate_package(
            package,
            sandbox=bridge.sandbox(),
            cache=bridge.reference_cache(),
            seed=version.hidden_seed,
            on_progress=progress,
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
    rows += tuple(
        ValidationRow(
            name="limits: exercise.toml",
            expected="the output limit leaves room for what the statement asks",
            got=problem,
            ok=False,
        )
        for problem in result.limits
    )
    mutants = tuple(
        MutantRow(
            name=m.mutant.name,
            mistake=m.mutant.summary,
            outcome=m.outcome,
            detail=m.detail,
            diff=result.diff(m) if m.outcome in ("survived", "equivalent") else "",
            ok=not m.bad,
        )
        for m in result.mutants
    )
    return ValidationOutcome(
        ok=result.ok,
        rows=rows,
        mutants=mutants,
        mutant_counts=result.mutant_counts() if result.mutants else {},
        stale_equivalents=result.stale,
        pending=result.pending,
    )
