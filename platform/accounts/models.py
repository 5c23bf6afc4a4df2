"""Users are django.contrib.auth users; their role is given per course module."""

from __future__ import annotations

from django.conf import settings
from django.db import models


class Enrollment(models.Model):
    class Role(models.TextChoices):
        LEARNER = "learner"
        INSTRUCTOR = "instructor"  # edits and publishes the module's exercises
        REVIEWER = "reviewer"  # reads drafts, validates and previews; edits nothing

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="enrollments"
    )
    module = models.ForeignKey(
        "courses.Module", on_delete=models.CASCADE, related_name="enrollments"
    )
    role = models.CharField(max_length=16, choices=Role.choices, default=Role.LEARNER)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["user", "module"], name="enrollment_unique")]

    def __str__(self) -> str:
        return f"{self.user} {self.role} in {self.module}"
