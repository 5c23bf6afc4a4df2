"""Same verdict on every worker: a script exercise of `device = "cuda"` is graded with a
GPU (real, or the harness's stand-in on a CPU worker) and without one, and each check
passes only where it passes in both (grader.runs.devices: device_runs, device_labels); the
scaled-gradient run joins the same way, judging only its own checks (combine_runs)."""

from __future__ import annotations

from dataclasses import replace

from grading_helpers import package_at

from grader.protocol import CheckResult, IntegrityFlag, Report
from grader.runs.base import LabelledRun, combine_runs
from grader.runs.devices import WITH_GPU, WITHOUT_GPU, device_labels, device_runs
from grader.runs.second import SCALED, ScaledReference, followed_by_power


def test_a_cuda_script_runs_with_and_without_a_gpu_on_every_worker() -> None:
    package = package_at("device-agnostic-training")
    assert device_runs(package, "cpu") == [("cpu", "cuda"), ("cpu", None)]
    assert device_runs(package, "cuda") == [("cuda", None), ("cpu", None)]


def test_other_exercises_run_once_on_the_workers_device() -> None:
    assert device_runs(package_at("training-loop"), "cpu") == [("cpu", None)]
    assert device_runs(package_at("custom-autograd-function"), "cuda") == [("cuda", None)]


def check(name: str, passed: bool, message: str = "m", points: float = 5.0) -> CheckResult:
    return CheckResult(name, passed, points if passed else 0.0, points, message)


def report(*checks: CheckResult, status: str = "graded", message: str = "") -> Report:
    score = sum(c.score for c in checks)
    return Report(
        status=status,
        score=score,
        max_score=10.0,
        passed=score == 10.0,
        message=message,
        checks=checks,
        duration_s=1.0,
    )


def test_a_check_passes_only_where_it_passes_in_both_runs() -> None:
    with_gpu = report(check("a", True), check("b", False, "on cpu"))
    without = report(check("a", False, "crashed"), check("b", True))
    combined = combine_runs(device_labels([with_gpu, without]))
    assert combined.score == 0.0 and not combined.passed
    assert [c.message for c in combined.checks] == [WITHOUT_GPU + "crashed", WITH_GPU + "on cpu"]
    assert combined.duration_s == 2.0


def test_two_passing_runs_keep_every_point_and_both_runs_flags() -> None:
    flagged = Report(
        **{**report(check("a", True), check("b", True)).__dict__,
           "integrity_flags": (IntegrityFlag("tamper", "x: y"),)}
    )  # fmt: skip
    combined = combine_runs(device_labels([report(check("a", True), check("b", True)), flagged]))
    assert combined.passed and combined.score == 10.0
    assert combined.integrity_flags == (IntegrityFlag("tamper", "x: y"),)


def test_a_failed_run_fails_the_whole_and_says_on_which_machine() -> None:
    failed = report(status="failed", message="time limit of 20 s exceeded")
    combined = combine_runs(device_labels([report(check("a", True), check("b", True)), failed]))
    assert combined.status == "failed"
    assert combined.message == WITHOUT_GPU + "time limit of 20 s exceeded"


def test_a_run_that_judges_some_checks_only_fails_those() -> None:
    """The scaled run judges only the checks whose reference value follows the gradients:
    its failure of another check is ignored, its failure of a judged one is kept."""
    plain = report(check("a", True), check("b", True))
    scaled = report(check("a", False, "typed in"), check("b", False, "other"))
    combined = combine_runs([LabelledRun("", plain), LabelledRun(SCALED, scaled, frozenset({0}))])
    assert [c.passed for c in combined.checks] == [False, True]
    assert combined.checks[0].message == SCALED + "typed in"
    assert combined.score == 5.0 and not combined.passed


def test_the_first_failure_wins_over_the_scaled_runs() -> None:
    plain = report(check("a", False, "wrong"), check("b", True))
    scaled = report(check("a", False, "typed in"), check("b", True))
    combined = combine_runs(
        [LabelledRun("", plain), LabelledRun(SCALED, scaled, frozenset({0, 1}))]
    )
    assert combined.checks[0].message == "wrong"


def test_a_failed_scaled_run_is_left_for_combine_runs_to_fail_the_whole() -> None:
    package = package_at("gradient-accumulation")
    failed = report(status="failed", message="time limit of 20 s exceeded")
    scaled = ScaledReference(None, frozenset({0, 1}))
    assert followed_by_power(package, failed, None, None, scaled) is failed  # type: ignore[arg-type]
    combined = combine_runs([LabelledRun("", report(check("a", True), check("b", True))),
                             LabelledRun(SCALED, failed, frozenset({0}))])  # fmt: skip
    assert combined.status == "failed" and combined.message == SCALED + failed.message


# -- the claim label of a second run that could not start every leaf ---------------------


def test_a_claim_label_of_a_run_that_judges_a_check_is_kept_when_the_check_passes() -> None:
    claimed = replace(check("a", True), data={"claim": "rests on what your code reports"})
    plain = report(check("a", True), check("b", True))
    combined = combine_runs(
        [LabelledRun("", plain), LabelledRun(SCALED, report(claimed, check("b", True)),
                                              frozenset({0}))]
    )  # fmt: skip
    assert combined.passed
    assert combined.checks[0].data["claim"] == "rests on what your code reports"
    assert "claim" not in combined.checks[1].data
