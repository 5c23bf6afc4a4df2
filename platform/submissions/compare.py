"""Two of a learner's attempts at one exercise compared line by line (or an attempt and
their unsent draft), older first. The attempts are read through submission_get, the one
access rule: a learner compares their own, whoever teaches the module any learner's; an
unsent draft is seen by its learner alone. Anything else is NotFound, like a submission
that is not the caller's."""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from django.contrib.auth.models import AbstractBaseUser
from django.db.models import Q, QuerySet

from accounts.selectors import AnyUser
from common.errors import InvalidInput, NotFound
from common.text import scrub
from submissions.drafts import draft_get
from submissions.models import Submission
from submissions.selectors import submission_get

DRAFT = "draft"  # the `with` value that names the learner's unsent draft
CONTEXT_LINES = 3  # unchanged lines shown around each change, as `diff -u` does
# Submissions and drafts are capped at GRADLAB_CODE_MAX_BYTES (64 KiB), which still allows
# 30,000 one-character lines, and difflib is quadratic on some inputs (about 100 s there).
# At 2,000 lines a side its worst case we measured is under half a second; an exercise's
# answer is a few hundred lines at most.
DIFF_MAX_LINES = 2000

Kind = Literal["context", "added", "removed"]


@dataclass(frozen=True)
class DiffLine:
    kind: Kind
    old_no: int | None  # its number in the older side (None: added)
    new_no: int | None  # its number in the newer side (None: removed)
    text: str


@dataclass(frozen=True)
class Hunk:
    old_start: int
    old_end: int
    new_start: int
    new_end: int
    lines: tuple[DiffLine, ...]


@dataclass(frozen=True)
class LineDiff:
    hunks: tuple[Hunk, ...]
    added: int
    removed: int
    too_long: str  # "" when compared; else why not, in words

    @property
    def same(self) -> bool:
        return not self.too_long and not self.hunks


def line_diff(old: str, new: str, *, max_lines: int = DIFF_MAX_LINES) -> LineDiff:
    """The lines `new` adds to and removes from `old`, in hunks with CONTEXT_LINES of
    unchanged lines around them; refused (too_long) past `max_lines` on either side."""
    before, after = old.splitlines(), new.splitlines()
    longest = max(len(before), len(after))
    if longest > max_lines:
        reason = f"One side has {longest:,} lines; attempts are compared up to {max_lines:,}."
        return LineDiff(hunks=(), added=0, removed=0, too_long=reason)
    matcher = difflib.SequenceMatcher(None, before, after)
    hunks = tuple(
        _hunk(group, before, after) for group in matcher.get_grouped_opcodes(CONTEXT_LINES)
    )
    lines = [line for hunk in hunks for line in hunk.lines]
    return LineDiff(
        hunks=hunks,
        added=sum(line.kind == "added" for line in lines),
        removed=sum(line.kind == "removed" for line in lines),
        too_long="",
    )


Opcode = tuple[str, int, int, int, int]


def _hunk(group: list[Opcode], before: list[str], after: list[str]) -> Hunk:
    lines: list[DiffLine] = []
    for tag, i1, i2, j1, j2 in group:
        if tag == "equal":
            lines.extend(
                DiffLine("context", i + 1, j + 1, before[i])
                for i, j in zip(range(i1, i2), range(j1, j2), strict=True)
            )
            continue
        lines.extend(DiffLine("removed", i + 1, None, before[i]) for i in range(i1, i2))
        lines.extend(DiffLine("added", None, j + 1, after[j]) for j in range(j1, j2))
    first, last = group[0], group[-1]
    return Hunk(first[1] + 1, last[2], first[3] + 1, last[4], tuple(lines))


# -- the two sides: access-checked reads ----------------------------------------------------

CHOICES_LIMIT = 100  # attempts offered in the page's list (any other is reachable by id)
ID_MAX_DIGITS = 18  # a longer "id" is no row's (and would overflow the database's bigint)


@dataclass(frozen=True)
class Side:
    key: str  # the `with` value that names it: an attempt's id, or DRAFT
    label: str  # "#12", "your unsent draft"
    code: str
    at: datetime
    submission: Submission | None  # None: the draft


@dataclass(frozen=True)
class Comparison:
    submission: Submission  # the attempt the page is about
    owner: AbstractBaseUser
    choices: tuple[Side, ...]  # what it may be compared with, newest first (code not read)
    other: Side | None  # None: nothing chosen and nothing to compare it with yet
    older: Side | None
    newer: Side | None
    diff: LineDiff | None


def attempt_comparison(*, user: AnyUser, submission_id: int, other: str | None) -> Comparison:
    """Attempt `submission_id` and `other`: another attempt's id (at the same exercise, by
    the same learner), DRAFT, or None (the attempt before it, else the draft, else none)."""
    submission = submission_get(user=user, submission_id=submission_id)
    draft = _draft_side(submission, user)
    choices = _choices(submission, draft)
    chosen = _chosen(submission, draft, other)
    if chosen is None:
        return Comparison(submission, submission.learner, choices, None, None, None, None)
    older, newer = sorted((_attempt_side(submission), chosen), key=_age)
    diff = line_diff(older.code, newer.code)
    return Comparison(submission, submission.learner, choices, chosen, older, newer, diff)


def _attempts(submission: Submission) -> QuerySet[Submission]:
    """The owner's other attempts at the same exercise (a try-as-learner preview: their
    other previews), newest first."""
    return (
        Submission.objects.filter(
            exercise_id=submission.exercise_id,
            learner_id=submission.learner_id,
            preview=submission.preview,
        )
        .exclude(pk=submission.pk)
        .order_by("-created_at", "-id")
    )


def _draft_side(submission: Submission, user: AnyUser) -> Side | None:
    """The unsent draft of the exercise, when the caller owns the attempt (and a draft)."""
    if submission.learner_id != user.pk:
        return None
    draft = draft_get(learner=user, exercise=submission.exercise)
    if draft is None:
        return None
    return Side(DRAFT, "your unsent draft", scrub(draft.code), draft.updated_at, None)


def _choices(submission: Submission, draft: Side | None) -> tuple[Side, ...]:
    rows = _attempts(submission).only("id", "created_at")[:CHOICES_LIMIT]
    sides = [Side(str(row.pk), f"#{row.pk}", "", row.created_at, row) for row in rows]
    if draft is not None:
        sides.append(draft)
    return tuple(sorted(sides, key=_age, reverse=True))


def _chosen(submission: Submission, draft: Side | None, other: str | None) -> Side | None:
    if not other:
        return _default(submission, draft)
    if other == DRAFT:
        if draft is None:
            raise NotFound("There is no unsent draft of this exercise to compare with.")
        return draft
    if not (other.isascii() and other.isdigit()):
        raise InvalidInput({"with": ["Choose an attempt by its number, or 'draft'."]})
    found = (
        None if len(other) > ID_MAX_DIGITS else _attempts(submission).filter(pk=int(other)).first()
    )
    if found is None:
        raise NotFound(f"No attempt #{other[:ID_MAX_DIGITS]} at this exercise by this learner.")
    return _attempt_side(found)


def _default(submission: Submission, draft: Side | None) -> Side | None:
    """The attempt just before this one; else the draft; else nothing."""
    before = Q(created_at__lt=submission.created_at) | Q(
        created_at=submission.created_at, pk__lt=submission.pk
    )
    earlier = _attempts(submission).filter(before).first()
    return _attempt_side(earlier) if earlier is not None else draft


def _attempt_side(submission: Submission) -> Side:
    code = scrub(submission.code)
    return Side(str(submission.pk), f"#{submission.pk}", code, submission.created_at, submission)


def _age(side: Side) -> tuple[datetime, int]:
    """Oldest first, by time then id (the draft, saved at the same moment, after)."""
    pk = side.submission.pk if side.submission is not None else 2**63
    return (side.at, pk)
