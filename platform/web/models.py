"""Instructor jobs: an exercise's validation or regrade, run by a Celery worker.

Both run many sandboxes (seconds to minutes), so they never run inside a web request:
the page creates a job row, a worker runs it (web.tasks), and the page shows its state
and outcome. The row is the source of truth; the outcome is plain JSON.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models

VALIDATE = "validate"
REGRADE = "regrade"


class ExerciseJob(models.Model):
    class Kind(models.TextChoices):
        VALIDATE = VALIDATE, "Validation"
        REGRADE = REGRADE, "Regrade"

    class Status(models.TextChoices):
        QUEUED = "queued"
        RUNNING = "running"
        DONE = "done"
        FAILED = "failed"  # we could not run it (sandbox fault): says why in `error`

    exercise = models.ForeignKey("courses.Exercise", on_delete=models.CASCADE, related_name="jobs")
    version = models.ForeignKey(
        "courses.ExerciseVersion", on_delete=models.CASCADE, related_name="jobs"
    )
    kind = models.CharField(max_length=16, choices=Kind.choices)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.QUEUED)
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, related_name="+"
    )
    outcome = models.JSONField(null=True, blank=True)
    error = models.TextField(blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["exercise", "kind", "created_at"], name="job_recent")]

    def __str__(self) -> str:
        return f"{self.kind} {self.exercise_id} ({self.status})"

    @property
    def pending(self) -> bool:
        return self.status in (self.Status.QUEUED, self.Status.RUNNING)
