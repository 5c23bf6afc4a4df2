"""The output limit is one a learner can meet and is told about: printing past it cuts the
output (the first `stdout_bytes` bytes are kept, the report says so) and never fails a
run whose graded values are right; the statement states it; package validation checks
it against what the statement asks (a print per iteration, the reference's own output).
The sandboxed tests grade real code in the bubblewrap sandbox."""

from __future__ import annotations

import pytest
from conftest import GradeCode
from grading_helpers import call, package_at, script_capture

from grader.authoring.validation import limits_problems
from grader.protocol import size_label
from grader.spec import Package

TRAINING_LOOP_CAP = 262_144


def training_loop(steps: int, printed: str) -> str:
    """The reference training loop for `steps` steps, printing `printed` every step."""
    solution = package_at("training-loop").solution
    return solution.replace("range(200)", f"range({steps})").replace(
        'print(f"step {step + 1}: loss {loss.item():.6f}")', printed
    )


@pytest.mark.sandbox
def test_five_thousand_plain_loss_prints_fit_the_training_loop_output_limit(
    grade_code: GradeCode,
) -> None:
    report = grade_code("training-loop", training_loop(5000, "print(loss.item())"))
    assert (report.status, report.score, report.message) == ("graded", 10.0, "")
    assert report.stdout.count("\n") >= 5000


@pytest.mark.sandbox
def test_a_correct_loop_printing_past_the_limit_is_cut_and_scores_full_marks(
    grade_code: GradeCode,
) -> None:
    chatty = 'print(f"step {step + 1}: loss {loss.item():.6f}", "." * 100)'
    report = grade_code("training-loop", training_loop(5000, chatty))
    assert (report.status, report.score, report.passed) == ("graded", 10.0, True)
    assert report.message.startswith("your output was cut at 256 KiB")
    assert report.stdout.startswith("step 1: loss ")
    assert report.stdout.endswith("[output truncated]\n")
    printed = next(c for c in report.checks if c.name == "the loss is printed every iteration")
    assert printed.passed


@pytest.mark.sandbox
def test_a_cut_output_still_fails_the_print_check_when_no_loss_was_printed(
    grade_code: GradeCode,
) -> None:
    flood = 'print("-" * 300)'
    report = grade_code("training-loop", training_loop(1000, flood))
    assert report.status == "graded" and report.message.startswith("your output was cut")
    printed = next(c for c in report.checks if c.name == "the loss is printed every iteration")
    assert not printed.passed
    assert [c.name for c in report.checks if not c.passed] == [printed.name]


@pytest.mark.sandbox
def test_the_output_is_cut_at_bytes_not_characters(grade_code: GradeCode) -> None:
    wide = "print('é' * 50_000)\n"  # 100,000 bytes of UTF-8 in 50,000 characters
    report = grade_code("first-gradient", wide + package_at("first-gradient").solution)
    assert report.passed and report.message.startswith("your output was cut at 64 KiB")
    kept = report.stdout.removesuffix("\n[output truncated]\n")
    assert set(kept) == {"é"} and len(kept.encode()) == 65_536


def test_the_statement_states_the_output_limit_under_the_checks_table() -> None:
    statement = package_at("training-loop").statement
    table_end = statement.index("| the loss is printed every iteration |")
    assert statement.index("Output limit: what your code prints is kept up to 256 KiB") > table_end
    assert "kept up to 64 KiB" in package_at("first-gradient").statement


def test_the_training_loop_allows_a_print_at_each_of_its_5000_iterations() -> None:
    package = package_at("training-loop")
    assert package.manifest.limits.stdout_bytes == TRAINING_LOOP_CAP
    reference = script_capture(stdout="step 1: loss 2.473700\n" * 200, calls=[call()] * 200)
    assert limits_problems(package, reference) == []


def test_validation_names_an_output_limit_too_small_for_a_print_per_iteration() -> None:
    package = package_at("training-loop")
    files = dict(package.files)
    files["exercise.toml"] = files["exercise.toml"].replace(
        f"stdout_bytes = {TRAINING_LOOP_CAP}", "stdout_bytes = 65536"
    )
    reference = script_capture(stdout="step 1: loss 2.473700\n" * 200, calls=[call()] * 200)
    (problem,) = limits_problems(Package.from_files(files), reference)
    assert problem.startswith("up to 5000 steps with the loss printed at each need about")


def test_validation_names_an_output_limit_the_reference_does_not_fit_four_times() -> None:
    package = package_at("first-gradient")
    reference = script_capture(stdout="x" * 20_000)
    (problem,) = limits_problems(package, reference)
    assert problem == (
        "the reference prints 20000 bytes: limits.stdout_bytes (65536) must be at least 4 "
        "times that"
    )


def test_byte_counts_read_as_learners_read_them() -> None:
    assert [size_label(n) for n in (65_536, 262_144, 1_048_576, 1000)] == [
        "64 KiB",
        "256 KiB",
        "1 MiB",
        "1000 bytes",
    ]
