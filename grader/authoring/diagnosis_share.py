"""How specifically a package names its mistakes (`python -m grader check` prints it after
each package's validation): of the checks that its known wrong solutions and its caught
auto-mutants fail, the share that carry a specific diagnosis, not the generic
`wrong-value` (or none). A low share means learners making the course's mistakes are
told "wrong value" where a named mistake would send them the right way. A mutant whose
run failed (a time limit, a crash of the interpreter) has no checks and is not counted."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from grader.authoring.validation import Validation

GENERIC = frozenset({"", "wrong-value"})


@dataclass(frozen=True)
class Share:
    specific: int
    failed: int

    @property
    def text(self) -> str:
        return f"{self.specific}/{self.failed}"


@dataclass(frozen=True)
class DiagnosisShare:
    slug: str
    wrong: Share  # the failed checks of the known wrong solutions
    mutants: Share  # the failed checks of the caught auto-mutants

    @property
    def total(self) -> Share:
        return Share(
            self.wrong.specific + self.mutants.specific, self.wrong.failed + self.mutants.failed
        )

    @property
    def ratio(self) -> float | None:
        total = self.total
        return total.specific / total.failed if total.failed else None

    def line(self) -> str:
        total, ratio = self.total, self.ratio
        if ratio is None:
            return f"  info diagnoses   {self.slug}: no failed check to name"
        return (
            f"  info diagnoses   {self.slug}: {total.specific} of {total.failed} failed checks "
            f"name a specific mistake ({ratio:.0%}; wrong solutions {self.wrong.text}, "
            f"mutants {self.mutants.text})"
        )


def _share(diagnoses: Iterable[str]) -> Share:
    named = list(diagnoses)
    return Share(sum(d not in GENERIC for d in named), len(named))


def diagnosis_share(validation: Validation) -> DiagnosisShare:
    wrong = [d for item in validation.items if item.kind == "wrong" for d in item.diagnoses]
    caught = [d for r in validation.mutants if r.outcome == "caught" for d in r.diagnoses]
    return DiagnosisShare(validation.slug, _share(wrong), _share(caught))


__all__ = ["GENERIC", "DiagnosisShare", "Share", "diagnosis_share"]
