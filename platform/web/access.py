"""Who may see what. Every web view starts with one of these access-checked getters.

A signed-in user reads every module's exercises and only their own submissions; an
instructor (role "instructor" in the module's Enrollment) or a staff user also sees the
module's statistics and every submission made to its exercises. What a user may not see
is a 404 when its existence is private (someone else's submission) and a 403 when the
page is known to exist but is not theirs to open (a learner on an instructor page).
"""

from __future__ import annotations

from typing import TypeAlias

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.http import Http404

from accounts.models import Enrollment
from courses.models import Exercise, Module
from submissions.models import Submission

AnyUser: TypeAlias = AbstractBaseUser | AnonymousUser


def modules_for_learner(user: AnyUser) -> QuerySet[Module]:
    """Every signed-in user may read every module's exercises (as the API allows); what
    is private is their work."""
    if not user.is_authenticated:
        return Module.objects.none()
    return Module.objects.all()


def modules_for_instructor(user: AnyUser) -> QuerySet[Module]:
    if getattr(user, "is_staff", False):
        return Module.objects.all()
    return Module.objects.filter(
        enrollments__user=user, enrollments__role=Enrollment.Role.INSTRUCTOR
    ).distinct()


def is_instructor(user: AnyUser, module: Module) -> bool:
    return modules_for_instructor(user).filter(pk=module.pk).exists()


def get_module_for_learner(user: AnyUser, slug: str) -> Module:
    module = modules_for_learner(user).filter(slug=slug).first()
    if module is None:
        raise Http404("No such module.")
    return module


def get_module_for_instructor(user: AnyUser, slug: str) -> Module:
    module = Module.objects.filter(slug=slug).first()
    if module is None:
        raise Http404("No such module.")
    if not is_instructor(user, module):
        raise PermissionDenied("Only the module's instructors may open this page.")
    return module


def get_exercise_in_module(module: Module, slug: str) -> Exercise:
    exercise = (
        Exercise.objects.filter(module=module, slug=slug, current_version__isnull=False)
        .select_related("current_version", "module")
        .first()
    )
    if exercise is None:
        raise Http404("No such exercise.")
    return exercise


def get_submission_for_viewer(user: AnyUser, submission_id: int) -> Submission:
    """The submission if `user` made it or teaches its module; 404 otherwise."""
    submission = (
        Submission.objects.select_related("exercise__module", "version", "learner")
        .filter(pk=submission_id)
        .first()
    )
    if submission is None:
        raise Http404("No such submission.")
    if submission.learner_id == user.pk or is_instructor(user, submission.exercise.module):
        return submission
    raise Http404("No such submission.")
