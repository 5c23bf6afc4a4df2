"""Reads of the catalog."""

from __future__ import annotations

from django.db.models import QuerySet

from common.errors import NotFound
from courses.models import Exercise


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
