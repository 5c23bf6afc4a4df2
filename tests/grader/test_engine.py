"""Grading end to end through the real sandbox: failure semantics, the reference cache,
package validation."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from conftest import GradeCode
from grading_helpers import package_at

from grader.authoring.validation import Validation, validate_package
from grader.cache import ReferenceCache
from grader.engine import GradeJob, grade
from grader.protocol import (
    ExerciseError,
    InfrastructureError,
    Limits,
    Report,
    RunStatus,
    SandboxRequest,
    SandboxResult,
)
from grader.runs.learner import NO_RESULT, failure_message
from grader.sandbox import SandboxConfig, build_backend
from grader.sandbox.base import Sandbox
from grader.spec import Package

pytestmark = pytest.mark.sandbox


def with_limits(package: Package, limits: str) -> Package:
    files = dict(package.files)
    files["exercise.toml"] += f"\n[limits]\n{limits}\n"
    return Package.from_files(files)


@dataclasses.dataclass
class CountingSandbox:
    """The real sandbox, counting the jobs it is given (a spy, not a stand-in)."""

    inner: Sandbox
    jobs: list[str] = dataclasses.field(default_factory=list)
    name: str = "counting"

    def runtime_key(self, device: str) -> str:
        return self.inner.runtime_key(device)

    def run(self, request: SandboxRequest) -> SandboxResult:
        self.jobs.append(request.job_id)
        return self.inner.run(request)


def test_correct_answer_gets_full_score_and_a_json_round_trippable_report(
    grade_code: GradeCode,
) -> None:
    report = grade_code("first-gradient", package_at("first-gradient").solution)
    assert (report.status, report.score, report.max_score, report.passed) == (
        "graded",
        10.0,
        10.0,
        True,
    )
    assert all(c.passed and not c.diagnosis for c in report.checks)
    assert report.runtime.startswith("bubblewrap torch-")
    assert "tensor(10.)" in report.stdout
    assert Report.from_json(report.to_json()).to_json() == report.to_json()


@pytest.mark.parametrize(
    ("status", "message"),
    [
        (RunStatus.TIMEOUT, "time limit of 8 s exceeded"),
        (RunStatus.MEMORY, "memory limit of 512 MB exceeded"),
        (RunStatus.OUTPUT_LIMIT, "output limit exceeded"),
        (RunStatus.CRASHED, NO_RESULT),
    ],
)
def test_each_sandbox_limit_gets_its_own_clear_message(status: RunStatus, message: str) -> None:
    # The real limits are enforced and waited out in tests/sandbox (test_bubblewrap_backend,
    # test_docker_backend); the message is a pure function of the result and the limits.
    result = SandboxResult(status=status, stdout=b"", exit_code=None, duration_s=8.1)
    assert failure_message(result, Limits(wall_seconds=8, memory_mb=512)) == message


def test_memory_exhaustion_fails_the_run_with_a_clear_message(grade_code: GradeCode) -> None:
    package = with_limits(package_at("first-gradient"), "memory_mb = 512")
    code = "import torch\nblocks = [torch.ones(256, 1024, 1024) for _ in range(8)]\n"
    report = grade_code(package, code)
    assert report.status == "failed"
    assert report.message == "memory limit of 512 MB exceeded"


def test_an_oversized_result_is_an_output_limit_failure(grade_code: GradeCode) -> None:
    report = grade_code("first-gradient", "y = ['x' * 10_000] * 1000\n")
    assert report.status == "failed"
    assert report.message.startswith("output limit exceeded")


def test_a_crashing_learner_is_graded_with_the_exception_shown(grade_code: GradeCode) -> None:
    report = grade_code("first-gradient", "import torch\nx = torch.tensor(5.0)\n1 / 0\n")
    assert report.status == "graded" and not report.passed
    assert report.exception is not None
    assert (report.exception["type"], report.exception["line"]) == ("ZeroDivisionError", 3)


def test_a_failing_reference_raises_exercise_error(
    sandbox: Sandbox, reference_cache: ReferenceCache
) -> None:
    files = dict(package_at("first-gradient").files)
    files["solution.py"] = "import torch\nx = torch.tensor(5.0)\nraise ValueError('broken')\n"
    package = Package.from_files(files)
    with pytest.raises(ExerciseError, match="broken"):
        grade(GradeJob(package=package, code="x = 1\n"), sandbox=sandbox, cache=reference_cache)


def test_a_broken_sandbox_raises_infrastructure_error(tmp_path: Path) -> None:
    sandbox = build_backend(SandboxConfig(runtime_dir=tmp_path / "no-runtime"))
    job = GradeJob(package=package_at("first-gradient"), code="x = 1\n")
    with pytest.raises(InfrastructureError):
        grade(job, sandbox=sandbox, cache=None)


def test_the_reference_runs_once_then_comes_from_the_cache(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    counting = CountingSandbox(sandbox)
    cache = ReferenceCache(tmp_path)
    package = package_at("chunked-mean")
    answer = package.solution
    for _ in range(2):
        report = grade(GradeJob(package, answer, seed=5), sandbox=counting, cache=cache)
        assert report.passed
    assert len(counting.jobs) == 3  # one reference run, two learner runs
    assert len(list(tmp_path.glob("*.json"))) == 1
    grade(GradeJob(package, answer, seed=6), sandbox=counting, cache=cache)
    assert len(counting.jobs) == 5  # another seed: another reference run
    assert len(list(tmp_path.glob("*.json"))) == 2


def test_hidden_case_values_are_never_shown(grade_code: GradeCode) -> None:
    code = (
        "def accumulate(x, chunks):\n"
        "    scale = chunks if x.numel() == 4 else 1\n"
        "    for part in x.chunk(chunks):\n"
        "        ((part**2).mean() / scale).backward()\n"
    )
    report = grade_code("chunked-mean", code)
    (failed,) = [c for c in report.checks if not c.passed]
    assert "hidden input" in failed.message
    assert "tensor(" not in failed.message and failed.data["case"] == 1
    assert "tensor(" not in str(failed.data)
    assert failed.diagnosis == "unscaled-microbatch-loss"


def test_validation_reports_a_wrong_solution_declared_with_another_diagnosis(
    sandbox: Sandbox, reference_cache: ReferenceCache
) -> None:
    files = dict(package_at("vector-square").files)
    files["exercise.toml"] = files["exercise.toml"].replace(
        'diagnosis = "scaled-by-n"', 'diagnosis = "sign-error"'
    )
    validation = validate_package(Package.from_files(files), sandbox=sandbox, cache=reference_cache)
    assert not validation.ok
    (bad,) = [item for item in validation.items if not item.ok]
    assert (bad.kind, bad.file) == ("wrong", "wrong/mean.py")
    assert "fails with sign-error" in validation.summary()
    assert "[scaled-by-n]" in validation.summary()


def test_validation_reports_the_reference_then_each_run_as_it_finishes(
    sandbox: Sandbox, reference_cache: ReferenceCache
) -> None:
    package = package_at("vector-square")
    seen: list[Validation] = []

    validation = validate_package(
        package, sandbox=sandbox, cache=reference_cache, on_progress=seen.append
    )

    runs = len(validation.items) - 1 + len(validation.mutants)  # all but the reference
    assert [p.pending for p in seen] == list(range(runs, 0, -1))  # one report per finished run
    assert [i.kind for i in seen[0].items] == ["reference"] and not seen[0].mutants
    done = [len(p.items) + len(p.mutants) for p in seen]
    assert done == list(range(1, runs + 1)) and not any(p.ok for p in seen)
    assert validation.ok and validation.pending == 0
    files = {(i.kind, i.file) for i in validation.items}
    assert {(i.kind, i.file) for i in seen[-1].items} <= files


def test_validation_rejects_an_alternative_that_does_not_pass(
    sandbox: Sandbox, reference_cache: ReferenceCache
) -> None:
    files = dict(package_at("vector-square").files)
    files["alternatives/autograd-grad.py"] = files["wrong/mean.py"]
    validation = validate_package(Package.from_files(files), sandbox=sandbox, cache=reference_cache)
    assert [(i.kind, i.ok) for i in validation.items if not i.ok] == [("alternative", False)]


def test_a_function_exercise_without_its_entry_is_missing_name(grade_code: GradeCode) -> None:
    report = grade_code("chunked-mean", "def other(x, chunks):\n    pass\n")
    assert report.status == "graded" and report.score == 0
    assert {c.diagnosis for c in report.checks} == {"missing-name"}
    assert all(c.message == "accumulate is not defined" for c in report.checks)


def test_a_syntax_error_is_reported_with_its_line(grade_code: GradeCode) -> None:
    report = grade_code("first-gradient", "import torch\nx = torch.tensor(5.0\n")
    assert report.exception is not None
    assert (report.exception["type"], report.exception["line"]) == ("SyntaxError", 2)
    grad = report.checks[0]
    assert grad.diagnosis == "crashed" and "line 2 with SyntaxError" in grad.message


def test_loss_curve_exercises_report_both_curves(grade_code: GradeCode) -> None:
    solution = package_at("tiny-training").solution
    report = grade_code("tiny-training", solution.replace("lr=0.05", "lr=0.02"))
    assert report.passed, report.to_json()
    assert report.curves is not None
    mine, theirs = report.curves["learner"], report.curves["reference"]
    assert len(mine) == len(theirs) == 20
    assert mine[0] == theirs[0] and mine[-1] > theirs[-1]  # a slower rate, same start
    assert report.stdout.startswith("step 0: loss ")


def test_printing_past_the_output_cap_cuts_the_output_and_grades_the_run(
    grade_code: GradeCode,
) -> None:
    flood = "for _ in range(200):\n    print('x' * 1000)\n"
    report = grade_code("first-gradient", flood + package_at("first-gradient").solution)
    assert (report.status, report.score, report.passed) == ("graded", 10.0, True)
    assert report.message.startswith("your output was cut at 64 KiB")
    assert report.stdout.startswith("x" * 1000)
    assert len(report.stdout) <= 65_536 + 40


def test_hidden_inputs_do_not_leak_through_output_or_exceptions(grade_code: GradeCode) -> None:
    code = (
        "import os\n"
        "def accumulate(x, chunks):\n"
        "    os.write(2, repr(x.tolist()).encode())\n"
        "    print('input', x.tolist())\n"
        "    if x.numel() != 4:\n"
        "        raise ValueError(f'hidden input {x.tolist()}')\n"
        "    for part in x.chunk(chunks):\n"
        "        ((part**2).mean() / chunks).backward()\n"
    )
    report = grade_code("chunked-mean", code)
    assert not report.passed
    assert report.stdout == "input [1.0, 2.0, 3.0, 4.0]\n"  # the visible example only
    assert report.exception is not None and report.exception["type"] == "ValueError"
    assert "hidden input [" not in str(report.to_json())
