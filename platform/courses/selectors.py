"""Reads of the catalog. `exercise_list` is every published exercise (its current version
public, not unpublished, released); a learner reads those of the modules they are
enrolled in (`exercises_visible_to`, the access rule of courses.access)."""

from __future__ import annotations

from typing import Any

from django.db.models import Q, QuerySet
from django.utils import timezone

from common.errors import NotFound
from courses.models import Exercise, Module, Objective
from grader import spec


def exercise_list() -> QuerySet[Exercise]:
    """Published, released exercises in course order."""
    released = Q(release_at__isnull=True) | Q(release_at__lte=timezone.now())
    return (
        Exercise.objects.filter(released, current_version__isnull=False, is_published=True)
        .select_related("module", "current_version")
        .order_by("module__order", "module__slug", "order", "slug")
    )


def exercises_visible_to(*, user: Any) -> QuerySet[Exercise]:
    """Published exercises of the modules `user` is enrolled in (any role); staff: all."""
    if not user.is_authenticated:
        return Exercise.objects.none()
    if getattr(user, "is_staff", False):
        return exercise_list()
    return exercise_list().filter(module__enrollments__user_id=user.pk)


def exercise_visible_get(*, slug: str, user: Any) -> Exercise:
    exercise = exercises_visible_to(user=user).filter(slug=slug).first()
    if exercise is None:
        raise NotFound(f"No exercise {slug!r}.")
    return exercise


def modules_visible_to(*, user: Any) -> QuerySet[Module]:
    """Modules `user` is enrolled in (any role); staff: all."""
    if getattr(user, "is_staff", False):
        return module_list()
    return module_list().filter(enrollments__user_id=user.pk).distinct()


def exercise_get(*, slug: str) -> Exercise:
    exercise = exercise_list().filter(slug=slug).first()
    if exercise is None:
        raise NotFound(f"No exercise {slug!r}.")
    return exercise


def exercise_get_in_module(*, module: Module, slug: str) -> Exercise:
    exercise = exercise_list().filter(module=module, slug=slug).first()
    if exercise is None:
        raise NotFound("No such exercise.")
    return exercise


def module_list() -> QuerySet[Module]:
    return Module.objects.all()


def module_get(*, slug: str) -> Module:
    module = module_list().filter(slug=slug).first()
    if module is None:
        raise NotFound("No such module.")
    return module


def module_objectives(module: Module) -> tuple[spec.Objective, ...]:
    """The module's learning objectives, in the order its module.toml declares them."""
    return tuple(
        spec.Objective(id=o.slug, title=o.title)
        for o in Objective.objects.filter(module=module).order_by("order", "slug")
    )
