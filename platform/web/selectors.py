"""Reads that only the pages need: a learner's progress through a module, the class
statistics of an instructor's module, the gradebook."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.contrib.auth import get_user_model
from django.db.models import Count, Max, Q, QuerySet

from accounts.models import Enrollment
from accounts.selectors import AnyUser
from courses.manifest import stored_manifest
from courses.models import Exercise, ExerciseJob, ExerciseVersion, Module
from courses.selectors import exercises_visible_to
from submissions.late import COUNTED, Deadline, deadlines_for
from submissions.mastery import diagnosis_title
from submissions.models import CheckResult, Submission
from web.deadlines import DeadlineView, deadline_view
from web.presenters import STATUS_LABELS, integrity_flags

TOP_DIAGNOSES = 3
HISTORY_LIMIT = 50


@dataclass(frozen=True)
class ExerciseRow:
    slug: str
    title: str
    kind: str
    points: float
    attempts: int
    best_score: float
    status: str  # "not-tried" | "held" | "late" | "failing" | "passed"
    deadline: Deadline | None = None  # the learner's due date (theirs, if extended)
    late_uncounted: int = 0  # graded submissions that do not count for being late

    @property
    def status_label(self) -> str:
        return STATUS_LABELS[self.status]

    @property
    def due(self) -> DeadlineView:
        return deadline_view(self.deadline)


@dataclass(frozen=True)
class ModuleSummary:
    total: int
    passed: int
    score: float
    max_score: float


@dataclass(frozen=True)
class DiagnosisCount:
    slug: str
    title: str
    count: int  # submissions in which a check named this mistake


@dataclass(frozen=True)
class ExerciseStats:
    slug: str
    title: str
    points: float
    version: int
    attempts: int
    learners_tried: int
    learners_passed: int
    diagnoses: tuple[DiagnosisCount, ...]


@dataclass(frozen=True)
class GradeRow:
    user_id: int
    username: str
    email: str
    scores: tuple[float | None, ...]  # best score per exercise, None when not tried
    # Per exercise: when the learner last submitted (None: never), and whether that
    # submission was late.
    submitted: tuple[datetime | None, ...] = ()
    late: tuple[bool, ...] = ()
    name: str = ""  # first and last name, where the account has them
    held: tuple[bool, ...] = ()  # per exercise: a submission of theirs is held for review

    @property
    def late_count(self) -> int:
        """Exercises whose last submission was late."""
        return sum(self.late)

    @property
    def total(self) -> float:
        return sum(s for s in self.scores if s is not None)

    @property
    def tried(self) -> int:
        return sum(1 for s in self.scores if s is not None)


def module_exercises(module: Module) -> QuerySet[Exercise]:
    return Exercise.objects.filter(module=module, current_version__isnull=False).order_by(
        "order", "slug"
    )


# Graded and made after the due date of an exercise whose late submissions do not count.
LATE_UNCOUNTED = Q(
    status=Submission.Status.GRADED, preview=False, late=True, exercise__late_counts=False
)


def learner_progress(*, module: Module, user: AnyUser) -> list[ExerciseRow]:
    """Per exercise: attempts, best score and status. A submission held for review counts
    for nothing until an instructor releases (or rejects) it."""
    stats = {
        row["exercise_id"]: row
        for row in Submission.objects.filter(
            learner_id=user.pk, exercise__module=module, preview=False
        )
        .values("exercise_id")
        .annotate(
            attempts=Count("id"),
            best=Max("score", filter=COUNTED),
            passed=Count("id", filter=COUNTED & Q(passed=True)),
            graded=Count("id", filter=COUNTED),
            held=Count("id", filter=Q(review=Submission.Review.HELD)),
            late_out=Count("id", filter=LATE_UNCOUNTED),
        )
    }
    exercises = list(exercises_visible_to(user=user).filter(module=module))
    deadlines = deadlines_for(exercises=exercises, learner_id=user.pk)
    rows = []
    for exercise in exercises:
        row = stats.get(exercise.pk)
        rows.append(
            ExerciseRow(
                slug=exercise.slug,
                title=exercise.title,
                kind=exercise.kind,
                points=float(exercise.points),
                attempts=row["attempts"] if row else 0,
                best_score=float(row["best"] or 0.0) if row else 0.0,
                status=_status(row),
                deadline=deadlines[exercise.pk],
                late_uncounted=row["late_out"] if row else 0,
            )
        )
    return rows


def _status(row: dict | None) -> str:
    if not row:
        return "not-tried"
    if row["passed"]:
        return "passed"
    if row["graded"]:
        return "failing"
    if row["held"]:
        return "held"
    return "late" if row["late_out"] else "not-tried"


def module_summary(rows: list[ExerciseRow]) -> ModuleSummary:
    return ModuleSummary(
        total=len(rows),
        passed=sum(1 for r in rows if r.status == "passed"),
        score=sum(r.best_score for r in rows),
        max_score=sum(r.points for r in rows),
    )


def exercise_history(*, exercise: Exercise, user: AnyUser) -> QuerySet[Submission]:
    return (
        Submission.objects.filter(exercise=exercise, learner_id=user.pk, preview=False)
        .select_related("exercise", "version")
        .order_by("-created_at", "-id")[:HISTORY_LIMIT]
    )


def class_submissions(module: Module) -> QuerySet[Submission]:
    """Submissions of the module's learners (instructors' own tries are not the class)."""
    learners = Enrollment.objects.filter(module=module, role=Enrollment.Role.LEARNER)
    return Submission.objects.filter(
        exercise__module=module, learner__in=learners.values("user_id"), preview=False
    )


def exercise_stats(module: Module) -> list[ExerciseStats]:
    subs = class_submissions(module)
    per_exercise = {
        row["exercise_id"]: row
        for row in subs.values("exercise_id").annotate(
            attempts=Count("id"),
            tried=Count("learner", distinct=True),
            passed=Count("learner", distinct=True, filter=COUNTED & Q(passed=True)),
        )
    }
    diagnoses = _diagnosis_counts(subs)
    return [
        ExerciseStats(
            slug=e.slug,
            title=e.title,
            points=float(e.points),
            version=(e.current_version.number or 0) if e.current_version else 0,
            attempts=per_exercise.get(e.pk, {}).get("attempts", 0),
            learners_tried=per_exercise.get(e.pk, {}).get("tried", 0),
            learners_passed=per_exercise.get(e.pk, {}).get("passed", 0),
            diagnoses=_top(diagnoses.get(e.pk), e.current_version),
        )
        for e in module_exercises(module).select_related("current_version")
    ]


def _diagnosis_counts(subs: QuerySet[Submission]) -> dict[int, Counter[str]]:
    rows = (
        CheckResult.objects.filter(submission__in=subs, passed=False)
        .exclude(diagnosis="")
        .values("submission__exercise_id", "diagnosis")
        .annotate(n=Count("submission", distinct=True))
    )
    counts: dict[int, Counter[str]] = {}
    for row in rows:
        counts.setdefault(row["submission__exercise_id"], Counter())[row["diagnosis"]] += row["n"]
    return counts


def _top(
    counter: Counter[str] | None, version: ExerciseVersion | None
) -> tuple[DiagnosisCount, ...]:
    if not counter:
        return ()
    manifest = stored_manifest(version) if version is not None else None
    return tuple(
        DiagnosisCount(slug, diagnosis_title(slug, manifest), n)
        for slug, n in counter.most_common(TOP_DIAGNOSES)
    )


def gradebook(module: Module, *, search: str = "") -> tuple[list[Exercise], list[GradeRow]]:
    """The module's exercises and, by username, a row per learner (those `search` matches:
    learners_matching), in a fixed number of queries whatever the number of learners."""
    exercises = list(module_exercises(module))
    users = learners_matching(module_learners(module), search)
    subs = class_submissions(module)
    if search.strip():
        subs = subs.filter(learner__in=users.values("pk"))
    best = {
        (row["learner_id"], row["exercise_id"]): row["best"]
        for row in subs.filter(COUNTED)
        .values("learner_id", "exercise_id")
        .annotate(best=Max("score"))
    }
    last = _last_submissions(subs)
    held = set(subs.filter(review=Submission.Review.HELD).values_list("learner_id", "exercise_id"))
    rows = [
        GradeRow(
            user_id=u.pk,
            username=u.get_username(),
            email=getattr(u, "email", ""),
            scores=tuple(best.get((u.pk, e.pk)) for e in exercises),
            submitted=tuple(last.get((u.pk, e.pk), (None, False))[0] for e in exercises),
            late=tuple(last.get((u.pk, e.pk), (None, False))[1] for e in exercises),
            name=_full_name(u),
            held=tuple((u.pk, e.pk) in held for e in exercises),
        )
        for u in users
    ]
    return exercises, rows


# The user fields a search of learners looks in (django.contrib.auth's User).
SEARCHED_FIELDS = ("username", "first_name", "last_name", "email")


def learners_matching(users: QuerySet[Any], search: str) -> QuerySet[Any]:
    """The users of which every word of `search` is part of the username, the first or
    last name or the e-mail, ignoring case (icontains: PostgreSQL and SQLite alike)."""
    fields = [f for f in SEARCHED_FIELDS if _has_field(users.model, f)]
    for word in search.split():
        match = Q()
        for field in fields:
            match |= Q(**{f"{field}__icontains": word})
        users = users.filter(match)
    return users


def _has_field(model: Any, name: str) -> bool:
    return any(f.name == name for f in model._meta.get_fields())


def _full_name(user: Any) -> str:
    full = getattr(user, "get_full_name", None)
    return str(full()).strip() if callable(full) else ""


def _last_submissions(
    subs: QuerySet[Submission],
) -> dict[tuple[int, int], tuple[datetime, bool]]:
    """(learner, exercise) -> (when they last submitted it, whether that one was late)."""
    rows = subs.values("learner_id", "exercise_id").annotate(
        last=Max("created_at"), last_late=Max("created_at", filter=Q(late=True))
    )
    return {
        (row["learner_id"], row["exercise_id"]): (row["last"], row["last_late"] == row["last"])
        for row in rows
    }


def module_learners(module: Module) -> QuerySet[Any]:
    """The users enrolled in `module` as learners, by username."""
    learner_ids = Enrollment.objects.filter(module=module, role=Enrollment.Role.LEARNER).values(
        "user_id"
    )
    return get_user_model().objects.filter(pk__in=learner_ids).order_by("username")


def learner_submissions(*, module: Module, learner_id: int) -> QuerySet[Submission]:
    return (
        Submission.objects.filter(exercise__module=module, learner_id=learner_id)
        .select_related("exercise", "version")
        .order_by("-created_at", "-id")
    )


_GRADED = Q(status=Submission.Status.GRADED) & ~Q(review=Submission.Review.HELD)
# The status filter of an exercise's submission list, by the badge each shows
# (web.presenters.submission_badge).
SUBMISSION_FILTERS: dict[str, Q] = {
    "queued": Q(status=Submission.Status.QUEUED),
    "running": Q(status=Submission.Status.RUNNING),
    "passed": _GRADED & Q(passed=True),
    "failing": _GRADED & ~Q(passed=True),
    "failed": Q(status=Submission.Status.FAILED),
    "held": Q(review=Submission.Review.HELD),
}


def exercise_submissions(
    exercise: Exercise, *, search: str = "", status: str = "", late_only: bool = False
) -> QuerySet[Submission]:
    """Every submission of `exercise` (an author's previews aside), newest first: those of
    the users `search` matches (learners_matching), with the badge `status` (a key of
    SUBMISSION_FILTERS; any other: all), only the late ones if `late_only`. Without their
    code and report, which a list does not show."""
    subs = Submission.objects.filter(exercise=exercise, preview=False)
    if search.strip():
        users = learners_matching(get_user_model().objects.all(), search)
        subs = subs.filter(learner__in=users.values("pk"))
    if status in SUBMISSION_FILTERS:
        subs = subs.filter(SUBMISSION_FILTERS[status])
    if late_only:
        subs = subs.filter(late=True)
    return (
        subs.select_related("learner", "exercise")
        .defer("code", "report")
        .order_by("-created_at", "-id")
    )


def latest_job(exercise: Exercise, kind: str) -> ExerciseJob | None:
    return ExerciseJob.objects.filter(exercise=exercise, kind=kind).order_by("-id").first()


def stale_submissions(exercise: Exercise) -> int:
    """Graded submissions of `exercise` graded against an older version than the current."""
    return (
        Submission.objects.filter(exercise=exercise, status=Submission.Status.GRADED, preview=False)
        .exclude(version_id=exercise.current_version_id)
        .count()
    )


REVIEWED_SHOWN = 20


@dataclass(frozen=True)
class FlaggedRow:
    """A submission whose report carried integrity flags, for its module's instructors."""

    submission: Submission
    flags: tuple[tuple[str, str], ...]  # (kind, detail), as the grader reported them
    grader_score: float | None  # the score the grader gave, counted only once released

    @property
    def held(self) -> bool:
        return self.submission.review == Submission.Review.HELD


def flagged_submissions(module: Module) -> tuple[list[FlaggedRow], list[FlaggedRow]]:
    """(held for review, oldest first; the last REVIEWED_SHOWN decisions, newest first)."""
    flagged = (
        Submission.objects.filter(exercise__module=module)
        .exclude(review=Submission.Review.NONE)
        .select_related("learner", "exercise", "reviewed_by")
    )
    held = flagged.filter(review=Submission.Review.HELD).order_by("created_at", "id")
    reviewed = flagged.exclude(review=Submission.Review.HELD).order_by("-reviewed_at", "-id")
    return [flagged_row(s) for s in held], [flagged_row(s) for s in reviewed[:REVIEWED_SHOWN]]


def flagged_row(submission: Submission) -> FlaggedRow:
    """A flagged submission with its flags (each once) and the grader's score."""
    report = submission.report if isinstance(submission.report, dict) else {}
    score = report.get("score")
    return FlaggedRow(
        submission,
        integrity_flags(report),
        float(score) if isinstance(score, int | float) else None,
    )
