"""The instructor's tables of grades, for the pages: the Teach page's gradebook (a column
per exercise, sorted by any column, searched, a page at a time) and the list of one
exercise's submissions.

Both work without JavaScript: sorting, search and pages are GET parameters
(`?q=…&sort=<key>&dir=asc|desc&page=N`). The gradebook's scores come from
web.selectors.gradebook in a fixed number of queries whatever the number of learners; it is
sorted here, in Python, so that it orders alike on PostgreSQL and SQLite, ties always by
username. The CSV (grades.csv) ignores all of this: it is always the whole gradebook.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from urllib.parse import urlencode

from django.core.paginator import Page, Paginator
from django.db.models import QuerySet
from django.urls import reverse

from courses.models import Exercise, Module
from submissions.models import Submission
from web import selectors
from web.presenters import STATUS_LABELS, submission_badge
from web.selectors import SUBMISSION_FILTERS, GradeRow

GRADEBOOK_PAGE_SIZE = 100  # learners per page of the gradebook
SUBMISSIONS_PAGE_SIZE = 50  # submissions per page of an exercise's list
SEARCH_MAX_CHARS = 100
ASC, DESC = "asc", "desc"
LEARNER, TRIED, TOTAL, LATE = "learner", "tried", "total", "late"
EXERCISE_KEY = "ex-"  # + the exercise's slug: the key of its column

ARIA_SORT = {ASC: "ascending", DESC: "descending"}

SortKey = Callable[[GradeRow], float | str]
NOT_TRIED = -math.inf  # an exercise not tried sorts below every score


@dataclass(frozen=True)
class GradebookQuery:
    """What the Teach page was asked for: a search, a sort column and direction, a page."""

    q: str = ""
    sort: str = LEARNER
    dir: str = ASC
    page: str = "1"

    @classmethod
    def from_get(cls, params: Mapping[str, str]) -> GradebookQuery:
        sort = params.get("sort", LEARNER)
        direction = params.get("dir", "")
        return cls(
            q=_search(params),
            sort=sort,
            dir=direction if direction in ARIA_SORT else _first_direction(sort),
            page=params.get("page", "1"),
        )

    def url(self, **changes: str) -> str:
        """This query string with `changes` (a change of search or sort goes to page 1)."""
        values = {"q": self.q, "sort": self.sort, "dir": self.dir, "page": "1", **changes}
        if (values["sort"], values["dir"]) == (LEARNER, ASC):  # the default order
            values["sort"] = values["dir"] = ""
        return _query(values, defaults={"page": "1"})


@dataclass(frozen=True)
class Column:
    """A sortable column header: its label, the link that sorts by it (the other way when
    it is the current sort) and its aria-sort ("" unless it is the current sort)."""

    key: str
    label: str
    numeric: bool
    url: str
    direction: str  # what following `url` sorts by: ASC or DESC
    aria_sort: str
    exercise: Exercise | None = None
    note: str = ""  # under the label: the most points, where there is one

    @property
    def action(self) -> str:
        """What following the link does, in words (for a screen reader)."""
        if self.numeric:
            return "sort lowest first" if self.direction == ASC else "sort highest first"
        return "sort A to Z" if self.direction == ASC else "sort Z to A"


@dataclass(frozen=True)
class Cell:
    """One learner's counted best score of one exercise, with its marks."""

    exercise: Exercise
    score: float | None
    late: bool  # their last submission of it was late
    held: bool  # a submission of theirs is held for review

    @property
    def late_counts(self) -> bool:
        return self.exercise.late_counts


@dataclass(frozen=True)
class Pager:
    """Links to the other pages of a list (none when it fits on one)."""

    number: int
    count: int
    previous_url: str
    next_url: str
    links: tuple[tuple[int, str], ...]  # (page number, its address), with gaps as (0, "")


PAGER_WINDOW = 2  # pages linked either side of the current one


def pager(page: Page, url_of: Callable[[int], str]) -> Pager:
    count, number = page.paginator.num_pages, page.number
    shown = sorted(
        {1, count, *range(max(1, number - PAGER_WINDOW), min(count, number + PAGER_WINDOW) + 1)}
    )
    links: list[tuple[int, str]] = []
    for n in shown:
        if links and n > links[-1][0] + 1:
            links.append((0, ""))
        links.append((n, url_of(n)))
    return Pager(
        number=number,
        count=count,
        previous_url=url_of(number - 1) if page.has_previous() else "",
        next_url=url_of(number + 1) if page.has_next() else "",
        links=tuple(links),
    )


@dataclass(frozen=True)
class GradebookLine:
    grade: GradeRow
    cells: tuple[Cell, ...]


@dataclass(frozen=True)
class GradebookTable:
    exercises: list[Exercise]
    columns: list[Column]  # after the learner's: exercises, then tried, total, late
    learner_column: Column
    page: Page
    query: GradebookQuery
    matched: int  # learners the search matched (all of them without a search)
    enrolled: int  # learners of the module
    max_total: float

    @property
    def lines(self) -> list[GradebookLine]:
        return list(self.page.object_list)

    @property
    def pager(self) -> Pager:
        return pager(self.page, lambda n: self.query.url(page=str(n)))

    @property
    def clear_search_url(self) -> str:
        return self.query.url(q="")


def gradebook_table(module: Module, query: GradebookQuery) -> GradebookTable:
    exercises, rows = selectors.gradebook(module, search=query.q)
    enrolled = len(rows) if not query.q else selectors.module_learners(module).count()
    keys = _sort_keys(exercises)
    if query.sort not in keys:  # an unknown column: the default order
        query = GradebookQuery(q=query.q, page=query.page)
    lines = [_line(row, exercises) for row in _sorted(rows, keys[query.sort], query.dir)]
    columns = _columns(exercises, query, max_total=sum(float(e.points) for e in exercises))
    return GradebookTable(
        exercises=exercises,
        columns=columns[1:],
        learner_column=columns[0],
        page=Paginator(lines, GRADEBOOK_PAGE_SIZE).get_page(query.page),
        query=query,
        matched=len(rows),
        enrolled=enrolled,
        max_total=sum(float(e.points) for e in exercises),
    )


def _sort_keys(exercises: list[Exercise]) -> dict[str, SortKey]:
    keys: dict[str, SortKey] = {
        LEARNER: lambda r: r.username.casefold(),
        TRIED: lambda r: r.tried,
        TOTAL: lambda r: r.total,
        LATE: lambda r: r.late_count,
    }
    for i, exercise in enumerate(exercises):
        keys[EXERCISE_KEY + exercise.slug] = _score_key(i)
    return keys


def _score_key(index: int) -> SortKey:
    def key(row: GradeRow) -> float:
        score = row.scores[index]
        return NOT_TRIED if score is None else score

    return key


def _sorted(rows: list[GradeRow], key: SortKey, direction: str) -> list[GradeRow]:
    """By `key` in `direction`; rows alike by it stay by username, A to Z, either way
    (Python's sort is stable, reverse=True included)."""
    by_name = sorted(rows, key=lambda r: (r.username.casefold(), r.username))
    return sorted(by_name, key=key, reverse=direction == DESC)


def _columns(exercises: list[Exercise], query: GradebookQuery, *, max_total: float) -> list[Column]:
    heads: list[tuple[str, str, bool, Exercise | None, str]] = [
        (LEARNER, "Learner", False, None, "")
    ]
    heads += [(EXERCISE_KEY + e.slug, e.title, True, e, _of(float(e.points))) for e in exercises]
    heads += [
        (TRIED, "Exercises tried", True, None, ""),
        (TOTAL, "Total", True, None, _of(max_total)),
        (LATE, "Last submitted late", True, None, ""),
    ]
    return [_column(query, *head) for head in heads]


def _of(points: float) -> str:
    return f"of {points:g}"


def _column(
    query: GradebookQuery, key: str, label: str, numeric: bool, exercise: Exercise | None, note: str
) -> Column:
    current = query.sort == key
    # The current sort's heading sorts the other way; any other, its first way.
    flipped = DESC if query.dir == ASC else ASC
    direction = flipped if current else _first_direction(key)
    return Column(
        key=key,
        label=label,
        numeric=numeric,
        url=query.url(sort=key, dir=direction),
        direction=direction,
        aria_sort=ARIA_SORT[query.dir] if current else "",
        exercise=exercise,
        note=note,
    )


def _first_direction(key: str) -> str:
    """A column's first click: names A to Z, numbers highest first."""
    return ASC if key == LEARNER else DESC


def _line(row: GradeRow, exercises: list[Exercise]) -> GradebookLine:
    late = row.late or (False,) * len(exercises)
    held = row.held or (False,) * len(exercises)
    return GradebookLine(
        grade=row,
        cells=tuple(
            Cell(exercise=e, score=score, late=late[i], held=held[i])
            for i, (score, e) in enumerate(zip(row.scores, exercises, strict=True))
        ),
    )


# -- one exercise's submissions ---------------------------------------------------------


@dataclass(frozen=True)
class SubmissionsQuery:
    q: str = ""
    status: str = ""  # a key of SUBMISSION_FILTERS, or "" for all
    late: bool = False
    page: str = "1"

    @classmethod
    def from_get(cls, params: Mapping[str, str]) -> SubmissionsQuery:
        status = params.get("status", "")
        return cls(
            q=_search(params),
            status=status if status in SUBMISSION_FILTERS else "",
            late=params.get("late") in ("1", "on", "yes"),
            page=params.get("page", "1"),
        )

    def url(self, page: int = 1) -> str:
        values = {"q": self.q, "status": self.status, "late": "1" if self.late else ""}
        return _query({**values, "page": str(page)}, defaults={"page": "1"})


@dataclass(frozen=True)
class SubmissionLine:
    id: int
    learner_id: int
    username: str
    name: str
    created_at: datetime
    badge: str
    label: str
    score: float | None  # None while not graded, and while held for review
    max_score: float
    late: bool
    late_counts: bool
    held: bool
    detail_url: str


# The status filter's choices, in the order a submission goes through them.
STATUS_CHOICES = tuple((key, STATUS_LABELS[key]) for key in SUBMISSION_FILTERS)


@dataclass(frozen=True)
class SubmissionsPage:
    lines: list[SubmissionLine]
    page: Page
    pager: Pager


def submissions_page(exercise: Exercise, query: SubmissionsQuery) -> SubmissionsPage:
    """The page `query.page` of the exercise's submissions (two queries: the count and the
    page, with each row's learner and exercise)."""
    subs: QuerySet[Submission] = selectors.exercise_submissions(
        exercise, search=query.q, status=query.status, late_only=query.late
    )
    page = Paginator(subs, SUBMISSIONS_PAGE_SIZE).get_page(query.page)
    return SubmissionsPage(
        lines=[_submission_line(s) for s in page.object_list],
        page=page,
        pager=pager(page, query.url),
    )


def _submission_line(submission: Submission) -> SubmissionLine:
    badge = submission_badge(submission)
    learner = submission.learner
    full_name = getattr(learner, "get_full_name", None)
    return SubmissionLine(
        id=submission.pk,
        learner_id=learner.pk,
        username=learner.get_username(),
        name=str(full_name()).strip() if callable(full_name) else "",
        created_at=submission.created_at,
        badge=badge,
        label=STATUS_LABELS.get(badge, badge),
        score=submission.score if badge in ("passed", "failing") else None,
        max_score=float(submission.max_score or submission.exercise.points),
        late=submission.late,
        late_counts=submission.exercise.late_counts,
        held=badge == "held",
        detail_url=reverse("web:submission", args=[submission.pk]),
    )


def _search(params: Mapping[str, str]) -> str:
    return " ".join(params.get("q", "").split())[:SEARCH_MAX_CHARS]


def _query(values: Mapping[str, str], *, defaults: Mapping[str, str]) -> str:
    """`?a=1&b=2` of the values that are set and differ from their defaults ("?" alone
    when none)."""
    kept = {k: v for k, v in values.items() if v and v != defaults.get(k)}
    return "?" + urlencode(kept)
