"""Drafts pruning: every save of the authoring page or API is a draft (a version without
a number), so an exercise worked on for a while collects many. `drafts_prune` keeps, per
exercise, its `keep` most recently saved drafts (a restore saves an old one again:
`saved_again_at`), plus every draft something still points at: the exercise's current
draft, a validation or other job (its outcome is the page's history), a submission (a
try-as-learner preview is graded against the draft it was made on).
Published versions (numbered) are never touched. Run by `manage.py prune_drafts` and by
the beat schedule (courses.tasks.prune_drafts, daily).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from django.db import transaction
from django.db.models import F, Q, QuerySet, Window
from django.db.models.deletion import ProtectedError
from django.db.models.functions import Coalesce, RowNumber

from courses.models import Exercise, ExerciseVersion

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class PruneResult:
    deleted: int
    exercises: int  # exercises that lost at least one draft


def drafts_prune(*, keep: int) -> PruneResult:
    """Deletes the drafts beyond each exercise's `keep` most recent that nothing points
    at. A draft that gains a reference meanwhile (a job, a preview) is left alone."""
    if keep < 0:
        raise ValueError("keep: at least 0")
    deleted = 0
    touched: set[int] = set()
    for version in _prunable(keep).only("pk", "exercise_id"):
        if _delete_if_unreferenced(version.pk):
            deleted += 1
            touched.add(version.exercise_id)
    if deleted:
        logger.info("pruned %s drafts of %s exercises (kept %s each)", deleted, len(touched), keep)
    return PruneResult(deleted=deleted, exercises=len(touched))


def _prunable(keep: int) -> QuerySet[ExerciseVersion]:
    """Unreferenced drafts ranked past `keep` among all their exercise's drafts (newest
    first). Ranked first, filtered after: a filter in the same query would rank only the
    unreferenced ones."""
    ranked = (
        ExerciseVersion.objects.filter(number__isnull=True)
        .annotate(
            rank=Window(
                RowNumber(),
                partition_by=[F("exercise_id")],
                order_by=[Coalesce("saved_again_at", "created_at").desc(), F("id").desc()],
            )
        )
        .filter(rank__gt=keep)
        .values_list("pk", flat=True)
    )
    older = ExerciseVersion.objects.filter(pk__in=list(ranked))
    return _unreferenced(older).order_by("exercise_id", "id")


def _unreferenced(versions: QuerySet[ExerciseVersion]) -> QuerySet[ExerciseVersion]:
    drafts = Exercise.objects.filter(draft_version__isnull=False).values("draft_version_id")
    return versions.exclude(pk__in=drafts).exclude(
        Q(jobs__isnull=False) | Q(submissions__isnull=False)
    )


def _delete_if_unreferenced(pk: int) -> bool:
    """One draft, deleted only if it is still an unreferenced draft (checked again under a
    row lock, so a save or validation that picks it up meanwhile keeps it)."""
    with transaction.atomic():
        version = (
            ExerciseVersion.objects.select_for_update().filter(pk=pk, number__isnull=True).first()
        )
        if version is None or not _unreferenced(ExerciseVersion.objects.filter(pk=pk)).exists():
            return False
        try:
            version.delete()
        except ProtectedError:  # a preview submission arrived between the check and here
            return False
    return True
