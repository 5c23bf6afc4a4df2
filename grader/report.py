"""The report (FORMAT.md section 6): run every check of the manifest on the learner's
capture and the reference's, name the mistakes, gather what the learner may see
(printed output and exceptions of visible cases only, the loss curves) and the
integrity flags that hold the score for review (grader.checks.integrity)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from grader.capture import Capture
from grader.checks.base import CheckSpec, Outcome
from grader.checks.diagnoses.catalogue import Diagnosis, describe
from grader.checks.integrity import capture_flags, limited
from grader.checks.registry import run_check
from grader.checks.runs import losses
from grader.protocol import CheckResult, IntegrityFlag, Report
from grader.spec import Package

TRUNCATED = "\n[output truncated]\n"


def failed_report(
    package: Package,
    message: str,
    runtime: str,
    duration: float,
    capture: Capture | None = None,
    flags: Iterable[IntegrityFlag] = (),
) -> Report:
    """A failed run: score 0, `message` says why; flagged like a graded one."""
    found = [*flags, *(capture_flags(capture) if capture else [])]
    return Report(
        status="failed",
        score=0.0,
        max_score=float(package.manifest.points),
        passed=False,
        message=message,
        stdout=stdout_text(capture, package.manifest.limits.stdout_bytes) if capture else "",
        exception=exception_json(capture) if capture else None,
        duration_s=round(duration, 3),
        runtime=runtime,
        integrity_flags=limited(found),
    )


def run_checks(package: Package, learner: Capture, reference: Capture) -> tuple[CheckResult, ...]:
    return tuple(r for r, _ in _checked(package, learner, reference))


def _checked(
    package: Package, learner: Capture, reference: Capture
) -> list[tuple[CheckResult, Outcome]]:
    extra = {
        slug: Diagnosis(slug, spec.title, spec.hint)
        for slug, spec in package.manifest.diagnoses.items()
    }
    results = []
    for spec in package.manifest.checks:
        outcome = run_check(spec, learner, reference)
        results.append((_result(spec, outcome, extra), outcome))
    return results


def _result(spec: CheckSpec, outcome: Outcome, extra: dict[str, Diagnosis]) -> CheckResult:
    diagnosis = hint = ""
    data = dict(outcome.data)
    if not outcome.passed and not outcome.grading_error:
        found = describe(outcome.diagnosis or "wrong-value", extra)
        diagnosis, hint = found.slug, found.hint
        data["diagnosis_title"] = found.title
    return CheckResult(
        name=spec.name,
        passed=outcome.passed,
        score=float(spec.points) if outcome.passed else 0.0,
        max_score=float(spec.points),
        message=outcome.message,
        diagnosis=diagnosis,
        hint=hint,
        data=data,
    )


def stdout_text(capture: Capture, cap: int) -> str:
    """What the learner's code printed (visible cases only), at most `cap` characters."""
    parts = [capture.stdout]
    parts += [case.stdout for case in capture.cases if case.visible]
    if capture.stderr and capture.kind == "script":  # raw output could echo hidden inputs
        parts.append(capture.stderr)
    text = "".join(part for part in parts if part)
    if len(text) > cap:
        return text[:cap] + TRUNCATED
    return text + TRUNCATED if capture.output_truncated else text


def exception_json(capture: Capture) -> dict[str, Any] | None:
    if capture.exception is not None:
        return capture.exception.to_json()
    for case in capture.cases:
        if case.exception is not None and case.visible:
            return case.exception.to_json()
    for case in capture.cases:
        if case.exception is not None:  # a hidden input: its values are never shown
            hidden = "raised on a hidden input (its message is not shown)"
            return {**case.exception.to_json(), "message": hidden, "traceback": ""}
    return None


def _curves(package: Package, learner: Capture, reference: Capture) -> dict[str, Any] | None:
    if not any(c.type == "loss_curve" for c in package.manifest.checks):
        return None
    if reference.kind == "function":
        mine = losses(learner.cases[0].backward_calls) if learner.cases else []
        theirs = losses(reference.cases[0].backward_calls) if reference.cases else []
    else:
        mine, theirs = losses(learner.backward_calls), losses(reference.backward_calls)
    return {"learner": [_finite(v) for v in mine], "reference": [_finite(v) for v in theirs]}


def _finite(value: float) -> float | str:
    return value if value == value and abs(value) != float("inf") else str(value)


def build_report(
    package: Package, learner: Capture, reference: Capture, runtime: str, duration: float
) -> Report:
    checked = _checked(package, learner, reference)
    checks = tuple(result for result, _ in checked)
    errors = [IntegrityFlag("grading-error", o.grading_error) for _, o in checked]
    errors = [flag for flag in errors if flag.detail]
    score = sum(c.score for c in checks)
    maximum = float(package.manifest.points)
    return Report(
        status="graded",
        score=score,
        max_score=maximum,
        passed=score == maximum,
        checks=checks,
        stdout=stdout_text(learner, package.manifest.limits.stdout_bytes),
        exception=exception_json(learner),
        curves=_curves(package, learner, reference),
        duration_s=round(duration, 3),
        runtime=runtime,
        integrity_flags=limited([*capture_flags(learner), *errors]),
    )
