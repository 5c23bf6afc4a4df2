"""Reads of submissions, each access-checked for the caller."""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser
from django.db.models import Q, QuerySet

from accounts.selectors import modules_taught_by
from common.errors import InvalidInput, NotFound
from courses.models import Exercise
from submissions.models import Submission


def _with_related(queryset: QuerySet[Submission]) -> QuerySet[Submission]:
    return queryset.select_related("exercise", "version", "learner").prefetch_related("checks")


def submission_list_own(
    *, user: AbstractBaseUser, exercise_slug: str | None = None
) -> QuerySet[Submission]:
    """The caller's own submissions, newest first, optionally for one exercise."""
    queryset = Submission.objects.filter(learner=user)
    if exercise_slug is not None:
        if not Exercise.objects.filter(slug=exercise_slug).exists():
            raise InvalidInput({"exercise": f"Unknown exercise {exercise_slug!r}."})
        queryset = queryset.filter(exercise__slug=exercise_slug)
    return _with_related(queryset.order_by("-created_at", "-id"))


def submission_list_visible(*, user: AbstractBaseUser) -> QuerySet[Submission]:
    """Own submissions plus those of every module the caller teaches."""
    taught = modules_taught_by(user=user)
    return _with_related(
        Submission.objects.filter(Q(learner=user) | Q(exercise__module__in=taught))
    )


def submission_get(*, user: AbstractBaseUser, submission_id: int) -> Submission:
    """A learner gets only their own; an instructor also their modules'. Anything else is
    NotFound, so that ids of other people's submissions reveal nothing."""
    submission = submission_list_visible(user=user).filter(pk=submission_id).first()
    if submission is None:
        raise NotFound(f"No submission {submission_id}.")
    return submission


def submission_list_for_module(
    *, instructor: AbstractBaseUser, module_id: int
) -> QuerySet[Submission]:
    """Every submission of a module the caller teaches (gradebook, class mistakes)."""
    if not modules_taught_by(user=instructor).filter(pk=module_id).exists():
        raise NotFound(f"No module {module_id}.")
    return _with_related(Submission.objects.filter(exercise__module_id=module_id))
