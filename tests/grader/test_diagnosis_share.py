"""The diagnosis share `python -m grader check` prints per package: of the checks its
known wrong solutions and caught mutants fail, how many name a specific mistake."""

from __future__ import annotations

from grader.authoring.diagnosis_share import diagnosis_share
from grader.authoring.mutants import Mutant, MutantResult, classify
from grader.authoring.validation import Validation, ValidationItem
from grader.protocol import CheckResult, Report

MUTANT = Mutant("flip-sign", 3, "x = 1\n", "a sign flipped")


def wrong(*diagnoses: str) -> ValidationItem:
    return ValidationItem("wrong", "wrong/a.py", True, "fails", "", diagnoses=diagnoses)


def report(*diagnoses: str) -> Report:
    checks = [CheckResult(f"c{i}", False, 0.0, 1.0, "", d) for i, d in enumerate(diagnoses)]
    checks.append(CheckResult("kept", True, 1.0, 1.0, "", ""))
    return Report(status="graded", score=1.0, max_score=1.0 + len(diagnoses), passed=False,
                  checks=tuple(checks))  # fmt: skip


def test_the_share_counts_specific_diagnoses_of_wrong_files_and_caught_mutants() -> None:
    caught = classify(report("sign-error", "wrong-value"), MUTANT, {})
    survived = MutantResult(MUTANT, "survived", "10/10")
    validation = Validation(
        "demo",
        (ValidationItem("reference", "solution.py", True, "", ""), wrong("graph-broken", "")),
        mutants=(caught, survived),
    )
    share = diagnosis_share(validation)
    assert (share.wrong.specific, share.wrong.failed) == (1, 2)
    assert (share.mutants.specific, share.mutants.failed) == (1, 2)
    assert share.line() == (
        "  info diagnoses   demo: 2 of 4 failed checks name a specific mistake "
        "(50%; wrong solutions 1/2, mutants 1/2)"
    )


def test_a_caught_mutant_keeps_each_failed_checks_diagnosis_in_order() -> None:
    caught = classify(report("leaf-recreated", "wrong-value", "leaf-recreated"), MUTANT, {})
    assert caught.diagnoses == ("leaf-recreated", "wrong-value", "leaf-recreated")
    assert caught.detail == "leaf-recreated, wrong-value"


def test_a_package_without_failed_checks_says_so() -> None:
    assert diagnosis_share(Validation("empty", ())).line().endswith("no failed check to name")
