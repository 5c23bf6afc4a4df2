"""Four mistakes once named for another one, graded through the real bubblewrap sandbox,
are named by what the run did: gradients filled by backward and then cleared
(`grad-cleared`, not `graph-broken`); a first derivative differentiated again onto an
uncleared `.grad` although `create_graph` was used (`forgot-zero-grad`, not
`missing-create-graph`); a copy taken before the last backward with nothing cleared
(`copied-too-early`, not `cleared-between-passes`); one backward per variable
(`backward-per-input`, not `forgot-zero-grad`). Each is a known wrong solution of its
package too (tests/exercises validates it)."""

from __future__ import annotations

import pytest
from conftest import GradeCode
from grading_helpers import REPO, failed_diagnoses

pytestmark = pytest.mark.sandbox


def wrong_file(slug: str, name: str) -> str:
    return (REPO / "exercises" / slug / "wrong" / name).read_text(encoding="utf-8")


# (package, known wrong solution, every failed check and its diagnosis)
CASES: list[tuple[str, str, dict[str, str]]] = [
    (
        "micro-batch-accumulation",
        "cleared-after-loop.py",
        {"param.grad holds the full-batch gradient": "grad-cleared"},
    ),
    (
        "higher-order-gradients",
        "create-graph-not-cleared.py",
        {
            "dydx is 3x^2 = 27 at x = 3": "forgot-zero-grad",
            "d2ydx2 is 6x = 18 at x = 3": "forgot-zero-grad",
        },
    ),
    (
        "gradient-accumulation",
        "copied-after-first-pass.py",
        {"accumulated is a copy of the accumulated gradient (12)": "copied-too-early"},
    ),
    (
        "multiple-variables",
        "backward-per-input.py",
        {"exactly one backward call": "backward-per-input"},
    ),
    (
        "multiple-variables",
        "backward-per-variable.py",
        {
            "x.grad is dz/dx = y + 1 = 6": "backward-per-input",
            "y.grad is dz/dy = x = 4": "backward-per-input",
            "exactly one backward call": "backward-per-input",
        },
    ),
]


@pytest.mark.parametrize(("package", "wrong", "expected"), CASES, ids=[c[1] for c in CASES])
def test_a_mistake_once_misnamed_is_named_by_what_the_run_did(
    grade_code: GradeCode, package: str, wrong: str, expected: dict[str, str]
) -> None:
    report = grade_code(package, wrong_file(package, wrong))
    assert report.status == "graded" and not report.passed, report.message
    assert failed_diagnoses(report) == expected


def test_the_create_graph_exercise_still_names_a_first_derivative_taken_without_it(
    grade_code: GradeCode,
) -> None:
    report = grade_code(
        "higher-order-gradients", wrong_file("higher-order-gradients", "missing-create-graph.py")
    )
    assert "missing-create-graph" in failed_diagnoses(report).values()


def test_clearing_between_the_passes_is_still_named_cleared_between_passes(
    grade_code: GradeCode,
) -> None:
    report = grade_code(
        "gradient-accumulation", wrong_file("gradient-accumulation", "cleared-between.py")
    )
    assert "cleared-between-passes" in failed_diagnoses(report).values()
    assert "copied-too-early" not in failed_diagnoses(report).values()
