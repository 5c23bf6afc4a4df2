"""Reads of the catalog. Every signed-in user may read every module's exercises."""

from __future__ import annotations

from django.db.models import QuerySet

from common.errors import NotFound
from courses.models import Exercise, Module


def exercise_list() -> QuerySet[Exercise]:
    """Published exercises (those with a current version) in course order."""
    return (
        Exercise.objects.filter(current_version__isnull=False)
        .select_related("module", "current_version")
        .order_by("module__order", "module__slug", "order", "slug")
    )


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
