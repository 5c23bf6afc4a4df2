"""Reads of submissions, each access-checked for the caller (courses.access holds the
rule: own submissions, plus every submission of a module the caller teaches)."""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db.models import Q, QuerySet

from common.errors import InvalidInput, NotFound
from courses.access import module_is_taught_by, modules_taught_by
from courses.selectors import exercises_visible_to
from submissions.models import Submission


def _with_related(queryset: QuerySet[Submission]) -> QuerySet[Submission]:
    return queryset.select_related("exercise__module", "version", "learner").prefetch_related(
        "checks"
    )


def submission_list_own(
    *, user: AbstractBaseUser | AnonymousUser, exercise_slug: str | None = None
) -> QuerySet[Submission]:
    """The caller's own submissions, newest first, optionally for one exercise: one the
    caller may see or has submitted to; any other slug (unknown, or a draft or exercise of
    a module they are not in) is refused alike, so the answer tells nothing of it."""
    queryset = Submission.objects.filter(learner_id=user.pk, preview=False)
    if exercise_slug is not None:
        queryset = queryset.filter(exercise__slug=exercise_slug)
        known = exercises_visible_to(user=user).filter(slug=exercise_slug).exists()
        if not known and not queryset.exists():
            raise InvalidInput({"exercise": f"Unknown exercise {exercise_slug!r}."})
    return _with_related(queryset.order_by("-created_at", "-id"))


def submission_list_visible(*, user: AbstractBaseUser | AnonymousUser) -> QuerySet[Submission]:
    """Own submissions plus those of every module the caller teaches."""
    if not user.is_authenticated:
        return Submission.objects.none()
    taught = modules_taught_by(user=user)
    return _with_related(
        Submission.objects.filter(Q(learner_id=user.pk) | Q(exercise__module__in=taught))
    )


def submission_get(*, user: AbstractBaseUser | AnonymousUser, submission_id: int) -> Submission:
    """A learner gets only their own; whoever teaches its module also. Anything else is
    NotFound, so that ids of other people's submissions reveal nothing."""
    submission = submission_list_visible(user=user).filter(pk=submission_id).first()
    if submission is None:
        raise NotFound(f"No submission {submission_id}.")
    return submission


def submission_list_for_module(
    *, instructor: AbstractBaseUser | AnonymousUser, module_id: int
) -> QuerySet[Submission]:
    """Every submission of a module the caller teaches; NotFound for anyone else."""
    if not module_is_taught_by(module_id=module_id, user=instructor):
        raise NotFound(f"No module {module_id}.")
    return _with_related(Submission.objects.filter(exercise__module_id=module_id))


def submission_result_withheld(
    *, submission: Submission, user: AbstractBaseUser | AnonymousUser | None
) -> bool:
    """A submission held for review keeps its result (score, checks, feedback) from
    everyone but those who teach its module, until one of them decides."""
    if submission.review != Submission.Review.HELD:
        return False
    if user is None:
        return True
    return not module_is_taught_by(module_id=submission.exercise.module_id, user=user)


# -- the queue, as a learner waiting for a grade sees it ------------------------------------

RECENT_GRADINGS = 50  # the gradings whose durations make the estimate


@dataclass(frozen=True)
class QueuePlace:
    """Where a queued submission stands: `ahead` submissions were queued before it for the
    same kind of worker; `estimated_wait_s` is how long until its grade, from the median
    duration of the recent gradings and how many run at once now (None with no history)."""

    ahead: int
    estimated_wait_s: int | None

    @property
    def position(self) -> int:
        return self.ahead + 1


def queue_place(submission: Submission) -> QueuePlace | None:
    """The submission's place in its queue, or None when it is not queued."""
    if submission.status != Submission.Status.QUEUED:
        return None
    same_queue = Submission.objects.filter(exercise__device=submission.exercise.device)
    ahead = (
        same_queue.filter(status=Submission.Status.QUEUED)
        .filter(
            Q(created_at__lt=submission.created_at)
            | Q(created_at=submission.created_at, pk__lt=submission.pk)
        )
        .count()
    )
    median = _median_grading_seconds(same_queue)
    if median is None:
        return QueuePlace(ahead=ahead, estimated_wait_s=None)
    at_once = max(1, same_queue.filter(status=Submission.Status.RUNNING).count())
    return QueuePlace(ahead=ahead, estimated_wait_s=math.ceil((ahead + 1) * median / at_once))


def _median_grading_seconds(submissions: QuerySet[Submission]) -> float | None:
    recent = (
        submissions.filter(status=Submission.Status.GRADED, started_at__isnull=False)
        .exclude(graded_at__isnull=True)
        .order_by("-graded_at")
        .values_list("started_at", "graded_at")[:RECENT_GRADINGS]
    )
    durations = [
        (graded - started).total_seconds()
        for started, graded in recent
        if started is not None and graded is not None
    ]
    return statistics.median(durations) if durations else None
