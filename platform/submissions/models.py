"""Submissions and their per-check grading results. The database is the source of truth:
the broker only carries hints (a submission id) that a worker may or may not receive."""

from __future__ import annotations

from django.conf import settings
from django.db import models


class Submission(models.Model):
    class Status(models.TextChoices):
        QUEUED = "queued"
        RUNNING = "running"
        GRADED = "graded"  # a report exists (the learner's run may still have failed)
        FAILED = "failed"  # we could not grade it: never counted as a wrong answer

    class Review(models.TextChoices):
        """An integrity hold: a report that carries integrity flags (signs of tampering)
        keeps its score from the learner until an instructor decides."""

        NONE = "", "not held"
        HELD = "held", "held for review"
        RELEASED = "released", "released after review"  # the grader's score counts
        REJECTED = "rejected", "rejected after review"  # score 0

    learner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="submissions"
    )
    exercise = models.ForeignKey(
        "courses.Exercise", on_delete=models.PROTECT, related_name="submissions"
    )
    version = models.ForeignKey(
        "courses.ExerciseVersion", on_delete=models.PROTECT, related_name="submissions"
    )
    code = models.TextField()
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.QUEUED)
    attempts = models.PositiveIntegerField(default=0)  # grading claims so far
    # common.owner of the current claim: "host#boot/pid/start time"
    claimed_by = models.CharField(max_length=200, blank=True, default="")
    lease_expires_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    started_at = models.DateTimeField(null=True, blank=True)
    graded_at = models.DateTimeField(null=True, blank=True)
    score = models.FloatField(null=True, blank=True)
    max_score = models.FloatField(null=True, blank=True)
    passed = models.BooleanField(null=True, blank=True)
    report = models.JSONField(null=True, blank=True)  # grader.protocol.Report.to_json()
    error_message = models.TextField(blank=True, default="")
    review = models.CharField(max_length=16, choices=Review.choices, blank=True, default="")
    # The seed of this submission's hidden cases (grading.seed_for): set when it is
    # first graded, never shown; a regrade of the same version reproduces it.
    hidden_seed = models.BigIntegerField(null=True, blank=True)
    reviewed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    reviewed_at = models.DateTimeField(null=True, blank=True)
    late = models.BooleanField(default=False)  # made after the exercise's due date
    # An instructor trying the exercise as a learner (a draft, perhaps): graded, counted
    # nowhere (no gradebook, statistics, LMS or webhook).
    preview = models.BooleanField(default=False)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [
            models.Index(fields=["learner", "created_at"], name="submission_learner_recent"),
            models.Index(fields=["status", "lease_expires_at"], name="submission_lease"),
            models.Index(fields=["review", "created_at"], name="submission_review"),
        ]

    def __str__(self) -> str:
        return f"submission {self.pk} ({self.status})"


class ReviewDecision(models.Model):
    """One integrity-review decision on a submission held for review: who, when and what.
    Kept when the decision is undone (the undo is a decision of its own)."""

    class Action(models.TextChoices):
        RELEASED = "released", "released"
        REJECTED = "rejected", "rejected"
        UNDONE = "undone", "undid the decision"

    submission = models.ForeignKey(
        Submission, on_delete=models.CASCADE, related_name="review_decisions"
    )
    action = models.CharField(max_length=16, choices=Action.choices)
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    decided_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["decided_at", "id"]

    def __str__(self) -> str:
        return f"{self.action} submission {self.submission_id}"


class CheckResult(models.Model):
    submission = models.ForeignKey(Submission, on_delete=models.CASCADE, related_name="checks")
    order = models.PositiveIntegerField()
    name = models.CharField(max_length=300)
    passed = models.BooleanField()
    score = models.FloatField()
    max_score = models.FloatField()
    message = models.TextField(blank=True, default="")
    diagnosis = models.CharField(max_length=100, blank=True, default="")
    hint = models.TextField(blank=True, default="")

    class Meta:
        ordering = ["submission", "order"]
        constraints = [
            models.UniqueConstraint(fields=["submission", "order"], name="check_order_unique")
        ]

    def __str__(self) -> str:
        return f"{self.name}: {'pass' if self.passed else 'fail'}"


class Draft(models.Model):
    """A learner's unsent code of one exercise, saved as they type (the editor posts it),
    so that it survives a reload, another device and a new session."""

    learner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="code_drafts"
    )
    exercise = models.ForeignKey(
        "courses.Exercise", on_delete=models.CASCADE, related_name="code_drafts"
    )
    code = models.TextField()
    updated_at = models.DateTimeField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["learner", "exercise"], name="draft_unique")]

    def __str__(self) -> str:
        return f"draft of {self.exercise_id} by {self.learner_id}"
