"""Celery tasks of the LTI tool: score passback and its sweep, roster and line item sync,
and the scheduled rotation of the tool's signing key."""

from __future__ import annotations

from celery import shared_task

from lti import keys, lineitems, passback, roster


@shared_task(name="gradlab.lti_post_score")
def post_score(post_id: int) -> str:
    return passback.score_post_attempt(post_id=post_id).value


@shared_task(name="gradlab.lti_sweep_scores")
def sweep_scores() -> int:
    return len(passback.scores_sweep())


@shared_task(name="gradlab.lti_sync_roster")
def sync_roster(context_id: int) -> int:
    return roster.roster_sync(context_id=context_id).enrolled


@shared_task(name="gradlab.lti_sync_lineitem")
def sync_lineitem(link_id: int) -> str | None:
    due_at = lineitems.lineitem_sync(link_id=link_id)
    return due_at.isoformat() if due_at else None


@shared_task(name="gradlab.lti_rotate_keys")
def rotate_keys() -> str | None:
    rotation = keys.keys_rotate_if_due()
    return None if rotation is None else str(rotation.created.pk)
