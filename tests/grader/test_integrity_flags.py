"""Integrity flags on the report (FORMAT.md section 6): tamper records, structurally
impossible captures and checks that could not judge a capture hold the score for review;
an honest capture, even one the checks fail, raises none."""

from __future__ import annotations

import json
from typing import Any

import pytest
from check_helpers import spec_of
from grading_helpers import call, script_capture, tensor

import grader.checks.registry as registry
from grader.capture import TENSOR_ELEMENTS, Capture, validate_capture
from grader.checks.registry import CheckType
from grader.protocol import IntegrityFlag, Report
from grader.report import build_report, failed_report
from grader.spec import Manifest, Package

REFERENCE = script_capture({"x": tensor([1.0, 2.0], grad=[2.0, 4.0], requires_grad=True)})


def package() -> Package:
    checks = tuple(spec_of(kind, "x", name=f"{kind} of x", points=5) for kind in ("value", "grad"))
    manifest = Manifest(slug="p", title="P", kind="script", points=10, names=("x",), checks=checks)
    return Package(slug="p", manifest=manifest, files={})


def learner_with(x: dict[str, Any], **extra: Any) -> Capture:
    raw = json.loads(json.dumps(dict(script_capture({"x": x}).raw)))
    raw.update(extra)
    return validate_capture(raw)


def report_of(learner: Capture) -> Report:
    return build_report(package(), learner, REFERENCE, "test", 0.1)


def kinds(report: Report) -> list[str]:
    return [flag.kind for flag in report.integrity_flags]


def test_an_honest_capture_has_no_flags_and_the_json_an_empty_list() -> None:
    report = report_of(learner_with(tensor([1.0, 2.0], grad=[2.0, 4.0], requires_grad=True)))
    assert report.passed and report.integrity_flags == ()
    assert report.to_json()["integrity_flags"] == []


def test_an_honest_wrong_answer_and_a_meta_tensor_raise_no_flag() -> None:
    wrong = report_of(learner_with(tensor([1.0, 2.0], grad=[-2.0, -4.0], requires_grad=True)))
    assert not wrong.passed and wrong.integrity_flags == ()
    meta = {**tensor([], [2], device="meta"), "truncated": True}
    on_meta = report_of(learner_with({**meta, "grad": meta}))
    assert on_meta.score == 0 and on_meta.integrity_flags == ()


def test_tamper_records_become_flags_and_the_checks_still_run() -> None:
    x = tensor([1.0, 2.0], grad=[2.0, 4.0], requires_grad=True)
    events = [{"kind": "ctypes", "detail": "import ctypes"}]
    report = report_of(learner_with(x, tamper=events))
    assert report.score == 10
    assert report.integrity_flags == (IntegrityFlag("tamper", "ctypes: import ctypes"),)
    again = Report.from_json(json.loads(json.dumps(report.to_json())))
    assert again.integrity_flags == report.integrity_flags


def test_data_cut_shorter_than_our_own_cap_is_an_impossible_capture() -> None:
    short = {**tensor([1.0], [2]), "truncated": True}
    report = report_of(learner_with({**short, "requires_grad": True}))
    assert not report.passed
    assert kinds(report) == ["impossible-capture"]
    assert "x: 1 data values where 2 of 2 are always captured" in report.integrity_flags[0].detail


def test_exactly_our_cap_of_a_larger_tensor_is_not_flagged() -> None:
    big = TENSOR_ELEMENTS + 1
    capped = {**tensor([0.0] * TENSOR_ELEMENTS, [big]), "truncated": True}
    assert report_of(learner_with(capped)).integrity_flags == ()


@pytest.mark.parametrize(
    ("fields", "detail"),
    [
        ({"is_leaf": True, "grad_fn": "MulBackward0", "requires_grad": True}, "a leaf with"),
        ({"is_leaf": False, "grad_fn": None, "requires_grad": True}, "a non-leaf without"),
        ({"is_leaf": False, "grad_fn": "MulBackward0", "requires_grad": False}, "not require"),
    ],
)
def test_graph_facts_no_real_tensor_has_are_impossible(fields: dict[str, Any], detail: str) -> None:
    report = report_of(learner_with({**tensor([1.0, 2.0], grad=[2.0, 4.0]), **fields}))
    assert kinds(report) == ["impossible-capture"]
    assert detail in report.integrity_flags[0].detail


def test_a_successful_implicit_backward_on_a_non_scalar_is_impossible() -> None:
    x = tensor([1.0, 2.0], grad=[2.0, 4.0], requires_grad=True)
    claimed = {**call(), "loss_shape": [3], "gradient_given": False}
    report = report_of(learner_with(x, backward_calls=[claimed]))
    assert kinds(report) == ["impossible-capture"]
    assert "backward() without a gradient succeeded on shape [3]" in (
        report.integrity_flags[0].detail
    )
    failed = {**claimed, "error": {"type": "RuntimeError", "message": "only scalar"}}
    given = {**claimed, "gradient_given": True}
    for honest in (failed, given):
        assert report_of(learner_with(x, backward_calls=[honest])).integrity_flags == ()


def test_a_check_that_raises_is_a_failed_check_and_a_grading_error_flag(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def broken(learner: Capture, reference: Capture, spec: Any) -> Any:
        raise OverflowError("int too large to convert to float")

    table = dict(registry.REGISTRY)
    table["value"] = CheckType(broken, table["value"].options, needs_target=True)
    monkeypatch.setattr(registry, "REGISTRY", table)
    report = report_of(learner_with(tensor([1.0, 2.0], grad=[2.0, 4.0], requires_grad=True)))
    value, grad = report.checks
    assert (value.passed, value.score, value.diagnosis, value.hint) == (False, 0.0, "", "")
    assert "held for an instructor" in value.message and "Overflow" not in value.message
    assert grad.passed  # one broken check does not take the others down
    assert kinds(report) == ["grading-error"]
    assert "OverflowError" in report.integrity_flags[0].detail


def test_a_failed_run_carries_the_captures_flags_and_the_engines_own() -> None:
    x = tensor([1.0, 2.0], grad=[2.0, 4.0], requires_grad=True)
    capture = learner_with(x, tamper=[{"kind": "proc-self", "detail": "/proc/self/mem"}])
    invalid = IntegrityFlag("invalid-capture", "no result frame")
    report = failed_report(package(), "time limit", "test", 1.0, capture, flags=[invalid])
    assert kinds(report) == ["invalid-capture", "tamper"]
    assert failed_report(package(), "time limit", "test", 1.0).integrity_flags == ()


def test_a_flood_of_flags_is_capped_with_a_count_of_the_rest() -> None:
    x = tensor([1.0, 2.0], grad=[2.0, 4.0], requires_grad=True)
    events = [{"kind": "ctypes", "detail": str(i)} for i in range(50)]
    flags = report_of(learner_with(x, tamper=events)).integrity_flags
    assert len(flags) == 21 and flags[-1] == IntegrityFlag("more", "30 more flags not listed")
