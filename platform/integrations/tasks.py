"""Celery tasks of the integrations: webhook deliveries, their sweep, key housekeeping."""

from __future__ import annotations

from celery import shared_task

from integrations import webhooks
from integrations.idempotency import idempotency_purge


@shared_task(name="gradlab.deliver_webhook")
def deliver_webhook(delivery_id: int) -> str:
    """One attempt; a retry is a new message with a countdown (the row says when)."""
    return webhooks.delivery_attempt(delivery_id=delivery_id).value


@shared_task(name="gradlab.sweep_webhooks")
def sweep_webhooks() -> int:
    return len(webhooks.deliveries_sweep())


@shared_task(name="gradlab.purge_idempotency_keys")
def purge_idempotency_keys() -> int:
    return idempotency_purge()
