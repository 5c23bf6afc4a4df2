"""Celery tasks of the catalog: thin, call one service. JSON payloads only.
The task names are a contract (messages already queued carry them)."""

from __future__ import annotations

from celery import shared_task
from django.conf import settings

from courses import pruning


@shared_task(name="gradlab.prune_drafts")
def prune_drafts() -> dict[str, int]:
    result = pruning.drafts_prune(keep=settings.GRADLAB_DRAFTS_KEPT)
    return {"deleted": result.deleted, "exercises": result.exercises}
