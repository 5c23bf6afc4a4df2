"""Same verdict on every worker: a script exercise of `device = "cuda"` is graded with a
GPU (real, or the harness's stand-in on a CPU worker) and without one, and each check
passes only where it passes in both (grader.runs.devices: device_runs, device_labels); the
scaled-gradient run joins the same way, judging only its own checks (combine_runs)."""

from __future__ import annotations

from fractions import Fraction

import pytest
from grading_helpers import package_at

from grader.capture import Capture, validate_capture
from grader.protocol import CheckResult, IntegrityFlag, Report
from grader.runs import second
from grader.runs.base import LabelledRun, combine_runs
from grader.runs.devices import WITH_GPU, WITHOUT_GPU, device_labels, device_runs
from grader.runs.second import (
    SCALED,
    TRANSFORMS,
    ScaledReference,
    any_assignment,
    followed_by_power,
    second_run_references,
    transform_for,
)


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


# -- the second run's other starting values (grader.runs.second, grader/harness/shift.py) --


def test_every_seed_draws_one_of_four_maps_that_keep_positives_positive_without_a_fixed_point() -> (
    None
):
    drawn = {transform_for(seed) for seed in range(8)}
    assert drawn == set(TRANSFORMS) and len(TRANSFORMS) == 4
    for transform in TRANSFORMS:
        assert transform.scale > 0 and transform.offset > 0
        fixed = Fraction(transform.offset) / (1 - Fraction(transform.scale))
        assert fixed.denominator & (fixed.denominator - 1) != 0  # not a binary float
    keys = {t.key(None) for t in TRANSFORMS} | {TRANSFORMS[0].key([0]), TRANSFORMS[0].key([1])}
    assert len(keys) == 6  # the reference cache keeps every map and every limited run apart


def learner_moving(*marks: str) -> Capture:
    raw = {"protocol": 1, "kind": "script", "provenance": {"shifted": list(marks)}}
    return validate_capture(raw)


def limited_runs(
    monkeypatch: pytest.MonkeyPatch, reference_moved: tuple[str, ...], learner: Capture
) -> list[list[int] | None]:
    """The positions of each limited reference run the learner's second run is graded
    against (None: the reference's own run, every leaf moved)."""
    asked: list[list[int] | None] = []

    def fake(*_: object, indices: list[int], **__: object) -> ScaledReference:
        asked.append(indices)
        return ScaledReference(None, frozenset(), indices=tuple(indices))

    monkeypatch.setattr(second, "scaled_reference", fake)
    scaled = ScaledReference(None, frozenset({0}), shift=TRANSFORMS[0], shifted=reference_moved)
    found = second_run_references(
        package_at("first-gradient"), learner, scaled, learner,
        seed=0, device="cpu", sandbox=None, cache=None,  # type: ignore[arg-type]
    )  # fmt: skip
    return [None if f is scaled else list(f.indices or ()) for f in found]


def test_a_learner_who_moved_the_reference_leaves_is_graded_against_the_reference_own_run(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert limited_runs(monkeypatch, ("a", "b", "a"), learner_moving("b", "a", "a")) == [None]


def test_a_learner_who_moved_fewer_leaves_is_graded_against_each_way_of_choosing_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Two leaves of one value, the learner moved one (the other made by torch, or by a
    route not hooked): which of the reference's it is, is not known; both are tried."""
    assert limited_runs(monkeypatch, ("a", "b", "a"), learner_moving("b", "a")) == [[0, 1], [1, 2]]
    assert limited_runs(monkeypatch, ("a", "b"), learner_moving()) == [[]]


def test_a_check_passes_the_second_run_where_it_passes_against_one_of_the_references(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    package = package_at("first-gradient")
    graded = {"one": report(check("a", False), check("b", False)),
              "two": report(check("a", True), check("b", False))}  # fmt: skip
    monkeypatch.setattr(second, "build_report", lambda _p, _l, ref, *_: graded[ref])
    monkeypatch.setattr(second, "followed_by_power", lambda _p, mine, *_: mine)
    scaled = ScaledReference("plain", frozenset({0, 1}))  # type: ignore[arg-type]
    one = ScaledReference("one", frozenset({0, 1}))  # type: ignore[arg-type]
    two = ScaledReference("two", frozenset({0, 1}))  # type: ignore[arg-type]
    learner = learner_moving()
    mine, judged = any_assignment(package, report(), learner, learner, [one, two], scaled)
    assert judged == {0, 1} and [c.passed for c in mine.checks] == [True, False]
    three = ScaledReference(None, frozenset())
    mine, judged = any_assignment(package, report(), learner, learner, [one, three], scaled)
    assert judged == frozenset()  # a way in which no check changes: nothing judged
