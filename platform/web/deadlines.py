"""The words the pages use for due dates and late work (submissions.late has the rules)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime

from django.utils import timezone
from django.utils.dateformat import format as date_format

from common.errors import InvalidInput
from submissions.late import Deadline
from submissions.models import Submission

DATE_FORMAT = "M j, Y, H:i"  # shown with " UTC": the platform's time zone (TIME_ZONE)
LATE_COUNTS = "Late submissions still count; they are marked late."
LATE_DOES_NOT_COUNT = "Submissions after the due date are marked late and do not count."


def when(moment: datetime) -> str:
    return f"{date_format(timezone.localtime(moment), DATE_FORMAT)} UTC"


@dataclass(frozen=True)
class DeadlineView:
    due: str  # "Dec 5, 2026, 17:00 UTC"; "" for no due date
    passed: bool
    extended: bool
    policy: str  # what happens to late work

    @property
    def summary(self) -> str:
        """One sentence for the exercise page."""
        if not self.due:
            return ""
        mine = " (your extension)" if self.extended else ""
        head = f"Was due {self.due}{mine}." if self.passed else f"Due {self.due}{mine}."
        return f"{head} {self.policy}"


def deadline_view(deadline: Deadline | None, now: datetime | None = None) -> DeadlineView:
    if deadline is None or deadline.due_at is None:
        return DeadlineView("", False, False, "")
    return DeadlineView(
        due=when(deadline.due_at),
        passed=deadline.passed(now or timezone.now()),
        extended=deadline.extended,
        policy=LATE_COUNTS if deadline.late_counts else LATE_DOES_NOT_COUNT,
    )


def late_note(submission: Submission) -> str:
    """What being late did to a submission's score ("" when it was on time)."""
    if not submission.late or submission.preview:
        return ""
    if submission.exercise.late_counts:
        return "Submitted after the due date: marked late. Late submissions count."
    return (
        "Submitted after the due date: this submission does not count towards your grade "
        "(late submissions do not count for this exercise). The score shows how it did."
    )


@dataclass(frozen=True)
class Schedule:
    """The dates and late policy a form posted (datetime-local fields, read as UTC)."""

    release_at: datetime | None
    due_at: datetime | None
    late_counts: bool

    def as_query(self) -> dict[str, str]:
        """The form fields that give this schedule again."""
        query = {"release_at": _field(self.release_at), "due_at": _field(self.due_at)}
        return query | ({"late_counts": "on"} if self.late_counts else {})

    @property
    def due(self) -> str:
        return when(self.due_at) if self.due_at else "no due date"


def _field(moment: datetime | None) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M") if moment else ""


def posted_time(value: str, field: str) -> datetime | None:
    """A datetime-local field's value, read as UTC (the pages say so)."""
    if not value.strip():
        return None
    try:
        return datetime.fromisoformat(value.strip()).replace(tzinfo=UTC)
    except ValueError:
        raise InvalidInput({field: [f"{value!r} is not a date and time."]}) from None


def posted_schedule(data: Mapping[str, str]) -> Schedule:
    return Schedule(
        release_at=posted_time(data.get("release_at", ""), "release_at"),
        due_at=posted_time(data.get("due_at", ""), "due_at"),
        late_counts=bool(data.get("late_counts")),
    )
