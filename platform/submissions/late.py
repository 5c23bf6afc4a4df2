"""Due dates and late work: each learner's due date (the exercise's, or their extension),
the `late` mark of their submissions, and what a change of the late policy (due date,
"late submissions count") would do to their scores before it is applied.

A submission is late when it was made after its learner's due date. The mark is kept on
the row and made again whenever a due date moves (a new due date, an extension granted or
withdrawn), so it always says what the dates say now. A late submission counts for a
grade only where the exercise's late submissions count."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.contrib.auth import get_user_model
from django.db import transaction
from django.db.models import Case, Q, QuerySet, Value, When

from accounts.selectors import AnyUser
from common.errors import InvalidInput, NotFound
from courses.models import Exercise, Extension
from submissions import signals
from submissions.models import Submission


@dataclass(frozen=True)
class Deadline:
    """One learner's due date of one exercise, as the pages show it."""

    due_at: datetime | None  # None: no due date
    extended: bool  # an instructor moved this learner's due date
    late_counts: bool

    def passed(self, now: datetime) -> bool:
        return self.due_at is not None and now > self.due_at


@dataclass(frozen=True)
class ScoreChange:
    """A learner whose grade for the exercise a late-policy change would change."""

    learner_id: int
    username: str
    before: float | None  # best counted score; None: nothing counts
    after: float | None
    late: int  # their submissions late under the new policy


def due_for(*, exercise: Exercise, learner_id: int | None) -> datetime | None:
    extension = Extension.objects.filter(exercise=exercise, learner_id=learner_id).first()
    return extension.due_at if extension is not None else exercise.due_at


def deadline_for(*, exercise: Exercise, learner_id: int | None) -> Deadline:
    extension = Extension.objects.filter(exercise=exercise, learner_id=learner_id).first()
    return Deadline(
        due_at=extension.due_at if extension is not None else exercise.due_at,
        extended=extension is not None,
        late_counts=exercise.late_counts,
    )


def deadlines_for(*, exercises: list[Exercise], learner_id: int | None) -> dict[int, Deadline]:
    """deadline_for of each exercise, in one query."""
    extended = dict(
        Extension.objects.filter(exercise__in=exercises, learner_id=learner_id).values_list(
            "exercise_id", "due_at"
        )
    )
    return {
        e.pk: Deadline(extended.get(e.pk, e.due_at), e.pk in extended, e.late_counts)
        for e in exercises
    }


# What counts for a grade: graded, not held for review, not a preview, and not late where
# the exercise's late submissions do not count (`counts` says the same of one row).
COUNTED = (
    Q(status=Submission.Status.GRADED, preview=False)
    & ~Q(review=Submission.Review.HELD)
    & ~Q(late=True, exercise__late_counts=False)
)


def counts(submission: Submission) -> bool:
    """Whether a graded submission's score counts for a grade (COUNTED)."""
    if submission.status != Submission.Status.GRADED or submission.preview:
        return False
    if submission.review == Submission.Review.HELD:
        return False
    return not (submission.late and not submission.exercise.late_counts)


def _late_when(due_at: datetime | None) -> Case | Value:
    if due_at is None:
        return Value(False)
    return Case(When(created_at__gt=due_at, then=Value(True)), default=Value(False))


def late_marks_refresh(*, exercise: Exercise, policy_changed: bool = False) -> list[int]:
    """Marks each submission of `exercise` late or not by its learner's due date now, and
    tells the apps (signals.grades_changed: the LMS gets the new grades) whose grade may
    have changed: the learners whose marks changed and, where `policy_changed` ("late
    submissions count" was just changed), those with late work. Returns their ids."""
    extensions = list(Extension.objects.filter(exercise=exercise))
    with transaction.atomic():
        before = _late_marks(exercise)
        Submission.objects.filter(exercise=exercise, preview=False).exclude(
            learner_id__in=[x.learner_id for x in extensions]
        ).update(late=_late_when(exercise.due_at))
        for extension in extensions:
            Submission.objects.filter(
                exercise=exercise, preview=False, learner_id=extension.learner_id
            ).update(late=_late_when(extension.due_at))
        after = _late_marks(exercise)
        affected = {mark[0] for pk, mark in after.items() if before.get(pk) != mark}
        if policy_changed:
            affected |= {learner for learner, late in after.values() if late}
        signals.submission_grades_changed(exercise_id=exercise.pk, learner_ids=affected)
    return sorted(affected)


def _late_marks(exercise: Exercise) -> dict[int, tuple[int, bool]]:
    """{submission id: (learner id, late)} of the graded submissions that may count."""
    rows = _graded(exercise).values_list("pk", "learner_id", "late")
    return {pk: (learner_id, late) for pk, learner_id, late in rows}


def late_policy_changes(
    *, exercise: Exercise, due_at: datetime | None, late_counts: bool
) -> list[ScoreChange]:
    """The learners whose grade for `exercise` would change if its due date became
    `due_at` and "late submissions count" `late_counts` (extensions stay as they are)."""
    extended = dict(Extension.objects.filter(exercise=exercise).values_list("learner_id", "due_at"))
    rows = _graded(exercise).values_list("learner_id", "created_at", "late", "score")
    best: dict[int, tuple[float | None, float | None, int]] = {}
    for learner_id, created_at, late_now, score in rows:
        due = extended.get(learner_id, due_at)
        late_then = due is not None and created_at > due
        before, after, late = best.get(learner_id, (None, None, 0))
        if exercise.late_counts or not late_now:
            before = _higher(before, score)
        if late_counts or not late_then:
            after = _higher(after, score)
        best[learner_id] = (before, after, late + late_then)
    names = dict(get_user_model().objects.filter(pk__in=list(best)).values_list("pk", "username"))
    changes = [
        ScoreChange(learner_id, names.get(learner_id, "?"), before, after, late)
        for learner_id, (before, after, late) in best.items()
        if before != after
    ]
    return sorted(changes, key=lambda change: change.username)


def _graded(exercise: Exercise) -> QuerySet[Submission]:
    """The submissions of `exercise` that may count for a grade, but for being late."""
    return Submission.objects.filter(
        exercise=exercise, status=Submission.Status.GRADED, preview=False
    ).exclude(Q(review=Submission.Review.HELD) | Q(score__isnull=True))


def _higher(best: float | None, score: float | None) -> float | None:
    if score is None:
        return best
    return score if best is None else max(best, score)


def extension_grant(
    *, exercise: Exercise, learner: AnyUser, due_at: datetime, granted_by: AnyUser
) -> Extension:
    """Gives `learner` their own due date for `exercise` (replacing an earlier one) and
    marks their submissions late or not by it. The caller checked that `granted_by`
    teaches the module and that `learner` is in it."""
    if exercise.release_at is not None and due_at <= exercise.release_at:
        raise InvalidInput({"due_at": ["The due date must come after the release date."]})
    with transaction.atomic():
        extension, _ = Extension.objects.update_or_create(
            exercise=exercise,
            learner_id=learner.pk,
            defaults={"due_at": due_at, "granted_by_id": granted_by.pk},
        )
        late_marks_refresh(exercise=exercise)
    return extension


def extension_withdraw(*, exercise: Exercise, extension_id: int) -> None:
    """The learner's due date is the exercise's again."""
    with transaction.atomic():
        deleted, _ = Extension.objects.filter(exercise=exercise, pk=extension_id).delete()
        if not deleted:
            raise NotFound("No such extension.")
        late_marks_refresh(exercise=exercise)


def extensions_of(exercise: Exercise) -> QuerySet[Extension]:
    return Extension.objects.filter(exercise=exercise).select_related("learner")
