"""An exercise's history on its author page (issue 33): the saved drafts and published
versions it still has, newest first, and restoring one of them as the current draft.

A restore is a save of that version's files (`draft_save`), so it follows the same rules
as any save: the same content is the same version (content-hash uniqueness), the draft
pointer moves to it (or clears when it is the published content), and no published
version or submission changes. The draft it replaced stays in the history, so a restore is
undone by restoring that one. A restored version counts as saved now
(`ExerciseVersion.saved_again_at`): it heads the history, and the drafts pruning, which
keeps each exercise's most recently saved drafts (courses.pruning), keeps it and the draft
it replaced. The history lists only what is kept, and `drafts_kept_note` says how long.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.conf import settings
from django.db import transaction
from django.db.models.functions import Coalesce
from django.utils import timezone

from accounts.selectors import AnyUser
from authoring.services import Draft, draft_of, draft_save, version_get
from common.errors import Conflict, NotFound
from courses.models import Exercise, ExerciseVersion

HISTORY_LIMIT = 50  # rows the author page lists, newest first


@dataclass(frozen=True)
class HistoryEntry:
    version: ExerciseVersion
    ref: str  # how the diff and restore URLs name it (services.version_get): number or hash
    current: bool  # the content the author page edits now (the draft, else the published)

    @property
    def saved_by(self) -> str:
        user = self.version.saved_by
        return user.get_username() if user is not None else "unknown"


@dataclass(frozen=True)
class Restored:
    draft: Draft  # the current draft now
    restored: ExerciseVersion  # the version whose files were restored
    restored_saved_at: datetime  # when it was last saved, before this restore
    previous: ExerciseVersion  # what the author page edited before (restore it to undo)


def version_ref(version: ExerciseVersion) -> str:
    return str(version.number) if version.number is not None else version.content_hash


def exercise_history(*, exercise: Exercise, limit: int = HISTORY_LIMIT) -> list[HistoryEntry]:
    """The exercise's kept versions, drafts and published, newest saved first."""
    current = draft_of(exercise)
    versions = (
        exercise.versions.select_related("saved_by")
        .defer("files", "manifest", "statement", "statement_html", "starter_code")
        .order_by(Coalesce("saved_again_at", "created_at").desc(), "-id")[:limit]
    )
    return [
        HistoryEntry(
            version=v,
            ref=version_ref(v),
            current=current is not None and v.pk == current.pk,
        )
        for v in versions
    ]


def drafts_kept_note() -> str:
    """How long old drafts are kept (courses.pruning), in the author's words."""
    kept = settings.GRADLAB_DRAFTS_KEPT
    return (
        f"Published versions are kept for good. Of the other drafts, a daily clean-up keeps "
        f"the {kept} most recently saved of this exercise, the current draft, and every "
        "draft that was validated or tried as a learner; older ones are deleted."
    )


def draft_restore(*, exercise: Exercise, ref: str, user: AnyUser) -> Restored:
    """The files of version `ref` become the exercise's current draft (a save of them)."""
    with transaction.atomic():
        Exercise.objects.select_for_update().filter(pk=exercise.pk).first()
        exercise.refresh_from_db(fields=["current_version", "draft_version"])
        try:
            restored = version_get(exercise=exercise, label=ref)
        except NotFound:
            raise NotFound("That version is no longer kept (old drafts are pruned).") from None
        previous = draft_of(exercise)
        assert previous is not None  # version_get found one: the exercise has content
        if previous.pk == restored.pk:
            raise Conflict(f"{restored.label} is the current draft already.")
        saved = restored.last_saved_at
        draft = draft_save(exercise=exercise, files=dict(restored.files), user=user)
    return Restored(draft=draft, restored=restored, restored_saved_at=saved, previous=previous)


def restored_message(result: Restored) -> str:
    saved = timezone.localtime(result.restored_saved_at).strftime("%Y-%m-%d %H:%M %Z")
    return (
        f"Restored draft from {saved} (was {result.restored.label}). "
        f"To undo, restore {result.previous.label} from the History."
    )
