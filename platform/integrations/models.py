"""Course API tokens, stored idempotent responses, webhook endpoints and their outbox.

Secrets are never stored in clear when we only need to check them: a course token is kept
as its SHA-256 (the token itself is shown once). A webhook secret must be kept to sign
with, so it is stored as given to the instructor.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models

from common.outbox import OutboxRow


class CourseToken(models.Model):
    """A credential for scripts and other systems, limited to one course module and to a
    set of scopes. Requests made with it act as the instructor who created it."""

    module = models.ForeignKey(
        "courses.Module", on_delete=models.CASCADE, related_name="api_tokens"
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="course_tokens"
    )
    name = models.CharField(max_length=100)
    token_hash = models.CharField(max_length=64, unique=True)  # sha256 hex of the token
    prefix = models.CharField(max_length=16)  # the first characters, to recognise it
    scopes = models.JSONField(default=list)
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    last_used_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"{self.prefix}… ({self.name}, {self.module})"


class IdempotencyRecord(models.Model):
    """One Idempotency-Key of one caller on one operation, and the response it got."""

    class State(models.TextChoices):
        PROCESSING = "processing"
        COMPLETED = "completed"

    caller = models.CharField(max_length=64)  # "user:<id>" or "course-token:<id>"
    operation = models.CharField(max_length=64)
    key = models.CharField(max_length=255)
    fingerprint = models.CharField(max_length=64)  # sha256 of the canonical request
    state = models.CharField(max_length=16, choices=State.choices)
    response_status = models.PositiveSmallIntegerField(null=True, blank=True)
    response_body = models.JSONField(null=True, blank=True)
    response_headers = models.JSONField(default=dict)
    created_at = models.DateTimeField(auto_now_add=True)
    locked_until = models.DateTimeField()  # a PROCESSING record older than this is abandoned
    expires_at = models.DateTimeField(db_index=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["caller", "operation", "key"], name="idempotency_record_unique"
            )
        ]

    def __str__(self) -> str:
        return f"{self.caller} {self.operation} {self.key} ({self.state})"


class WebhookEndpoint(models.Model):
    """Where a course's events are sent. Signed per the Standard Webhooks format."""

    module = models.ForeignKey("courses.Module", on_delete=models.CASCADE, related_name="webhooks")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="webhooks"
    )
    url = models.URLField(max_length=2000)
    secret = models.CharField(max_length=100)  # "whsec_" + base64 of 32 random bytes
    # After a rotation, the secret it replaced signs beside it until then (Standard Webhooks
    # allows several signatures), so that no delivery fails while the receiver switches.
    previous_secret = models.CharField(max_length=100, blank=True, default="")
    previous_secret_expires_at = models.DateTimeField(null=True, blank=True)
    events = models.JSONField(default=list)
    active = models.BooleanField(default=True)
    disabled_reason = models.CharField(max_length=300, blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["module", "id"]

    def __str__(self) -> str:
        return f"webhook {self.pk} -> {self.url}"


class WebhookDelivery(OutboxRow):
    """The outbox: one message for one endpoint, written in the transaction that caused it,
    then sent (and retried) by a worker. `message_id` stays the same across retries and
    redeliveries, so that a receiver can drop duplicates."""

    class Status(models.TextChoices):
        PENDING = "pending"  # waiting for its next attempt (next_attempt_at)
        SENDING = "sending"  # claimed by a worker until locked_until
        DELIVERED = "delivered"
        FAILED = "failed"  # gave up (attempts used, endpoint gone or disabled)

    DONE = Status.DELIVERED
    DONE_AT = "delivered_at"

    endpoint = models.ForeignKey(
        WebhookEndpoint, on_delete=models.CASCADE, related_name="deliveries"
    )
    message_id = models.CharField(max_length=64, db_index=True)
    event_type = models.CharField(max_length=64)
    payload = models.JSONField()
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    delivered_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [
            models.Index(fields=["status", "next_attempt_at"], name="webhook_delivery_due"),
        ]

    def __str__(self) -> str:
        return f"{self.event_type} {self.message_id} -> endpoint {self.endpoint_id} ({self.status})"
