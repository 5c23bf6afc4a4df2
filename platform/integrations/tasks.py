"""Celery tasks of the integrations: housekeeping of idempotency keys."""

from __future__ import annotations

from celery import shared_task

from integrations.idempotency import idempotency_purge


@shared_task(name="gradlab.purge_idempotency_keys")
def purge_idempotency_keys() -> int:
    return idempotency_purge()
