"""Plain view models of submissions for the templates (built from the stored report).

The report is `grader.protocol.Report.to_json()` as saved by the worker. It only carries
values of visible inputs (the grader omits hidden ones); everything here is rendered by
auto-escaping templates, so nothing a learner printed can become markup.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from itertools import zip_longest
from typing import Any

from django.urls import reverse

from common.text import scrub
from courses.manifest import stored_manifest
from grader.checks.diagnoses.catalogue import describe
from grader.spec import Manifest
from submissions.mastery import extra_diagnoses
from submissions.models import Submission
from web.deadlines import late_note

STDOUT_DISPLAY_CHARS = 20_000  # the grader caps stdout too; this keeps the page light
TRACEBACK_DISPLAY_CHARS = 8_000
VALUE_DISPLAY_CHARS = 400  # one cell of the expected-vs-yours table
TRUNCATED_MARK = "[output truncated]"  # grader.report.TRUNCATED, without its newlines
NO_VALUE = "\u2013"  # an en dash: no value at this step
DONE_STATUSES = frozenset({Submission.Status.GRADED, Submission.Status.FAILED})
HELD = "held"  # a graded submission held for review (Submission.Review.HELD)
# The one table of status words: a submission's status, and an exercise's status in a
# learner's progress (web.selectors.ExerciseRow).
STATUS_LABELS = {
    "queued": "queued",
    "running": "running",
    "graded": "graded",
    "failed": "not graded",
    HELD: "held for review",
    "late": "late: does not count",
    "not-tried": "not tried",
    "failing": "failing",
    "passed": "passed",
}
# The one diagnosis that names no mistake: never shown beside a specific one.
GENERIC_DIAGNOSIS = "wrong-value"
# An exception that stopped the run: shown once, first, and not again in each check.
CRASH_DIAGNOSIS = "crashed"
STOPPED_BY_ERROR = "not reached: your code stopped with the error shown above"
CLAIM_NOTE = (
    "This point rests on what your code reported about itself, not on inputs it could not "
    "know in advance (grader/FORMAT.md, section 7)."
)
# What ran out, by the words of a failed run's message (grader.runs.learner).
RAN_OUT = (
    ("time limit", "Time ran out"),
    ("memory limit", "Memory ran out"),
    ("output limit", "Too much output"),
)
HELD_MESSAGE = (
    "This submission is held for review: the grader noticed something an instructor must "
    "look at. It has no score and does not count yet; its score and feedback appear here "
    "once they have decided."
)


@dataclass(frozen=True)
class ValueRow:
    label: str
    expected: str
    got: str


@dataclass(frozen=True)
class CheckView:
    name: str
    passed: bool
    score: float
    max_score: float
    message: str
    diagnosis: str
    hint: str
    values: tuple[ValueRow, ...]
    claim: str = ""  # why this point rests on what the code reported about itself


@dataclass(frozen=True)
class DiagnosisView:
    slug: str
    title: str
    hint: str
    checks: tuple[str, ...]


@dataclass(frozen=True)
class ExceptionView:
    type: str
    message: str
    line: int | None
    traceback: str
    hint: str = ""


@dataclass(frozen=True)
class StopView:
    """A run that did not finish: what ran out, and where the code was when the report
    says so (the line of an exception, or the last line it printed)."""

    title: str
    message: str
    where: str


@dataclass(frozen=True)
class Feedback:
    id: int
    status: str
    status_label: str
    done: bool
    score: float
    max_score: float
    passed: bool
    message: str
    checks: tuple[CheckView, ...]
    diagnoses: tuple[DiagnosisView, ...]
    stdout: str
    stdout_truncated: bool
    stdout_cap: int
    exception: ExceptionView | None
    curves: Mapping[str, list[float | str | None]] | None
    curve_rows: tuple[tuple[int, str, str], ...]
    created_at: datetime
    graded_at: datetime | None
    detail_url: str
    # For those who teach the module only: the integrity review and the grader's reasons.
    review_label: str = ""
    review_flags: tuple[tuple[str, str], ...] = ()
    # Held for review, seen by one who teaches the module: the score is the grader's, not final.
    held: bool = False
    # "note": `message` remarks on a graded run (its output was cut); "alert": why it failed.
    message_role: str = "alert"
    # Made after the due date: what that does to its score (web.deadlines.late_note).
    late_note: str = ""
    late_uncounted: bool = False  # late, and the exercise's late submissions do not count
    stop: StopView | None = None  # the run did not finish (a limit ran out, no result)

    @property
    def failed_count(self) -> int:
        return sum(1 for c in self.checks if not c.passed)

    @property
    def curves_script_id(self) -> str:
        return f"curves-{self.id}"


@dataclass(frozen=True)
class HistoryItem:
    id: int
    status: str
    label: str
    badge: str
    done: bool
    score: float
    max_score: float
    created_at: datetime
    code: str
    detail_url: str
    late: bool = False  # made after the learner's due date
    late_counts: bool = True  # and the exercise's late submissions count


def feedback_for(
    submission: Submission, *, withheld: bool = False, show_review: bool = False
) -> Feedback:
    """The feedback page of a submission. `withheld` (submissions.selectors.
    submission_result_withheld): held for review, shown to someone who may not see its
    result yet: no score, no check, nothing from the report. `show_review`: the viewer
    teaches the module, and sees the integrity review with the grader's reasons."""
    if withheld:
        return _withheld_feedback(submission)
    # A row written before input was checked may hold lone surrogates: shown as U+FFFD.
    report: Mapping[str, Any] = scrub(submission.report or {})
    done = submission.status in DONE_STATUSES
    exception = _exception(report.get("exception"))
    checks = tuple(_check_view(raw, exception) for raw in report.get("checks", ()))
    stdout = str(report.get("stdout") or "")
    curves = _curves(report.get("curves"))
    diagnoses = _diagnoses(checks, stored_manifest(submission.version))
    stop = _stop(submission, report, exception, stdout)
    return Feedback(
        id=submission.pk,
        status=submission.status,
        status_label=STATUS_LABELS.get(submission.status, submission.status),
        done=done,
        score=float(_score(submission, report)),
        max_score=float(submission.max_score or submission.exercise.points),
        passed=bool(submission.passed),
        message="" if stop is not None else _run_message(submission, report),
        checks=checks,
        diagnoses=_shown_diagnoses(diagnoses, exception),
        stdout=stdout[:STDOUT_DISPLAY_CHARS],
        stdout_truncated=len(stdout) > STDOUT_DISPLAY_CHARS or bool(report.get("stdout_truncated")),
        stdout_cap=STDOUT_DISPLAY_CHARS,
        exception=_with_hint(exception, diagnoses),
        curves=curves,
        curve_rows=_curve_rows(curves),
        created_at=submission.created_at,
        graded_at=submission.graded_at,
        detail_url=reverse("web:submission", args=[submission.pk]),
        review_label=submission.get_review_display() if show_review and submission.review else "",
        review_flags=integrity_flags(report) if show_review and submission.review else (),
        held=submission.review == Submission.Review.HELD,
        message_role=_message_role(submission, report),
        late_note=late_note(submission),
        late_uncounted=submission.late and not submission.exercise.late_counts,
        stop=stop,
    )


def _message_role(submission: Submission, report: Mapping[str, Any]) -> str:
    graded = submission.status == Submission.Status.GRADED and report.get("status") == "graded"
    return "note" if graded else "alert"


def integrity_flags(report: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
    """(kind, detail) of each integrity flag of a stored report, for instructors only:
    each flag once, in the grader's order (a sandbox may report the same sign twice)."""
    raw = scrub(report.get("integrity_flags"))
    flags = (
        (str(flag.get("kind", "")), str(flag.get("detail", "")))
        for flag in (raw if isinstance(raw, list) else [])
        if isinstance(flag, Mapping)
    )
    return tuple(dict.fromkeys(flags))


def _withheld_feedback(submission: Submission) -> Feedback:
    return Feedback(
        id=submission.pk,
        status=HELD,
        status_label=STATUS_LABELS[HELD],
        done=True,
        score=0.0,
        max_score=float(submission.max_score or submission.exercise.points),
        passed=False,
        message=HELD_MESSAGE,
        checks=(),
        diagnoses=(),
        stdout="",
        stdout_truncated=False,
        stdout_cap=STDOUT_DISPLAY_CHARS,
        exception=None,
        curves=None,
        curve_rows=(),
        created_at=submission.created_at,
        graded_at=submission.graded_at,
        detail_url=reverse("web:submission", args=[submission.pk]),
    )


def _score(submission: Submission, report: Mapping[str, Any]) -> float:
    """The stored score; while held (no score yet), the grader's, for those who review."""
    if submission.score is not None:
        return submission.score
    raw = report.get("score")
    return float(raw) if isinstance(raw, int | float) else 0.0


def submission_badge(submission: Submission) -> str:
    """A submission's status word in lists (a key of STATUS_LABELS): held first, then
    passed or failing once graded, else its status."""
    if submission.review == Submission.Review.HELD:
        return HELD
    if submission.status == Submission.Status.GRADED:
        return "passed" if submission.passed else "failing"
    return str(submission.status)


def history_item(submission: Submission) -> HistoryItem:
    """One line of a submission list. A held submission shows no score to anyone."""
    status = submission_badge(submission)
    return HistoryItem(
        id=submission.pk,
        status=submission.status,
        label=STATUS_LABELS.get(status, status),
        badge=status,
        done=status in ("passed", "failing"),
        score=float(submission.score or 0.0),
        max_score=float(submission.max_score or submission.exercise.points),
        created_at=submission.created_at,
        code=scrub(submission.code),
        detail_url=reverse("web:submission", args=[submission.pk]),
        late=submission.late and not submission.preview,
        late_counts=submission.exercise.late_counts,
    )


def _run_message(submission: Submission, report: Mapping[str, Any]) -> str:
    if submission.status == Submission.Status.FAILED:
        reason = scrub(submission.error_message) or "the grader could not run it"
        return f"We could not grade this submission ({reason}). It does not count against you."
    return str(report.get("message") or "")


def _check_view(raw: Mapping[str, Any], exception: ExceptionView | None) -> CheckView:
    data = raw.get("data") or {}
    data = data if isinstance(data, Mapping) else {}
    name = str(raw.get("name", ""))
    diagnosis = str(raw.get("diagnosis") or "")
    message = str(raw.get("message") or "")
    return CheckView(
        name=name,
        passed=bool(raw.get("passed")),
        score=float(raw.get("score") or 0.0),
        max_score=float(raw.get("max_score") or 0.0),
        message=_without_error(message, diagnosis, exception),
        diagnosis=diagnosis,
        hint=str(raw.get("hint") or ""),
        values=_values(data),
        claim=_claim(name, data),
    )


def _claim(name: str, data: Mapping[str, Any]) -> str:
    """Why a check's point is a claim (FORMAT.md section 7): its own sentence, or ours."""
    claim = data.get("claim")
    if isinstance(claim, str) and claim.strip():
        return f"{CLAIM_NOTE} {claim.strip()}"
    return CLAIM_NOTE if claim or name.startswith("claim:") else ""


def _without_error(message: str, diagnosis: str, exception: ExceptionView | None) -> str:
    """A check's message without the exception the page already shows first: the crash
    check's own words become a pointer to it, the "(your code stopped ...)" that checks
    append (grader.checks.base) is dropped."""
    if exception is None:
        return message
    if diagnosis == CRASH_DIAGNOSIS and exception.type in message:
        return STOPPED_BY_ERROR
    cut = message.find(" (your code stopped")
    return message[:cut] if cut > 0 and message.endswith(")") else message


def _stop(
    submission: Submission,
    report: Mapping[str, Any],
    exception: ExceptionView | None,
    stdout: str,
) -> StopView | None:
    """A graded submission whose run did not finish (report status "failed")."""
    if submission.status != Submission.Status.GRADED or report.get("status") != "failed":
        return None
    message = str(report.get("message") or "")
    title = next((t for words, t in RAN_OUT if words in message), "Your run did not finish")
    return StopView(title=title, message=message, where=_where(exception, stdout))


def _where(exception: ExceptionView | None, stdout: str) -> str:
    if exception is not None and exception.line:
        return f"Your code was at line {exception.line} ({exception.type})."
    printed = [line for line in stdout.replace(TRUNCATED_MARK, "").splitlines() if line.strip()]
    if printed:
        return f"The last line your code printed was: {_short(printed[-1])}"
    return "It printed nothing, and the run ended before it could say which line it was on."


def _shown_diagnoses(
    found: tuple[DiagnosisView, ...], exception: ExceptionView | None
) -> tuple[DiagnosisView, ...]:
    """The named mistakes the page lists: the crash is the exception shown first, and the
    generic "Wrong value" is left out beside any specific diagnosis (its checks still show
    their expected-vs-yours)."""
    shown = tuple(d for d in found if not (exception is not None and d.slug == CRASH_DIAGNOSIS))
    specific = any(d.slug != GENERIC_DIAGNOSIS for d in found)
    return tuple(d for d in shown if not (specific and d.slug == GENERIC_DIAGNOSIS))


def _with_hint(
    exception: ExceptionView | None, found: tuple[DiagnosisView, ...]
) -> ExceptionView | None:
    """The exception with the crash diagnosis's hint, which the page shows beside it."""
    hint = next((d.hint for d in found if d.slug == CRASH_DIAGNOSIS), "")
    return replace(exception, hint=hint) if exception is not None and hint else exception


def _diagnoses(checks: Sequence[CheckView], manifest: Manifest) -> tuple[DiagnosisView, ...]:
    """One entry per distinct named mistake, in the order of the checks that found it."""
    extra = extra_diagnoses(manifest)
    found: dict[str, DiagnosisView] = {}
    for check in checks:
        if check.passed or not check.diagnosis:
            continue
        known = found.get(check.diagnosis)
        if known is None:
            described = describe(check.diagnosis, extra)
            found[check.diagnosis] = DiagnosisView(
                slug=check.diagnosis,
                title=described.title,
                hint=check.hint or described.hint,
                checks=(check.name,),
            )
        else:
            found[check.diagnosis] = DiagnosisView(
                known.slug, known.title, known.hint, (*known.checks, check.name)
            )
    return tuple(found.values())


def _exception(raw: Any) -> ExceptionView | None:
    if not isinstance(raw, Mapping):
        return None
    line = raw.get("line")
    return ExceptionView(
        type=str(raw.get("type") or "Exception"),
        message=str(raw.get("message") or ""),
        line=line if isinstance(line, int) else None,
        traceback=str(raw.get("traceback") or "")[:TRACEBACK_DISPLAY_CHARS],
    )


def _curves(raw: Any) -> dict[str, list[float | str | None]] | None:
    if not isinstance(raw, Mapping):
        return None
    learner = raw.get("learner")
    if not isinstance(learner, list) or not learner:
        return None
    reference = raw.get("reference")
    return {
        "learner": [_point(v) for v in learner],
        "reference": [_point(v) for v in reference] if isinstance(reference, list) else [],
    }


def _point(value: Any) -> float | str | None:
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int | float):
        return float(value) if math.isfinite(value) else str(value)
    return str(value)[:10]  # "nan", "inf", "-inf" as the capture encodes them


def _curve_rows(curves: Mapping[str, list[Any]] | None) -> tuple[tuple[int, str, str], ...]:
    if not curves:
        return ()
    pairs = zip_longest(curves["learner"], curves["reference"], fillvalue=None)
    return tuple((i, _fmt(mine), _fmt(ref)) for i, (mine, ref) in enumerate(pairs, start=1))


def _fmt(value: Any) -> str:
    if value is None:
        return NO_VALUE
    if isinstance(value, float):
        return f"{value:.6g}"
    return _short(value)


def _short(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    if len(text) > VALUE_DISPLAY_CHARS:
        return text[: VALUE_DISPLAY_CHARS - 1] + "…"
    return text


def _values(data: Mapping[str, Any]) -> tuple[ValueRow, ...]:
    """The expected-vs-got row of a check's data {"label", "want", "got"} (grader.checks).
    Anything else (e.g. {"case": 3} of a hidden case) shows no table."""
    if "got" not in data or "want" not in data:
        return ()
    label = str(data.get("label") or "value")
    return (ValueRow(label, _short(data["want"]), _short(data["got"])),)
