"""What gradlab keeps about LTI beside django-lti's own models (registrations, deployments,
keys, contexts, users, resource links): which gradlab modules an LMS course may open,
which exercise a resource link opens, where a learner's scores go, the scores waiting to be
posted, and the nonces already used."""

from __future__ import annotations

from datetime import datetime

from django.conf import settings
from django.db import models

from common.outbox import OutboxRow


class ContextBinding(models.Model):
    """An LMS course (a context of one deployment) allowed to open one gradlab module.

    Nothing else gives an LMS course access: a launch, roster sync or deep-link request
    from a context opens, enrols and offers only the modules bound to it, and LMS roles
    give roles only in those. A binding is made by an operator (`manage.py lti_bind`) or
    by deep linking from the context by someone who already teaches the module in gradlab.
    """

    class Origin(models.TextChoices):
        OPERATOR = "operator"  # manage.py lti_bind
        DEEP_LINK = "deep-link"  # a gradlab instructor of the module, from the context
        MIGRATION = "migration"  # a context that had launched into the module before

    deployment = models.ForeignKey(
        "lti_tool.LtiDeployment", on_delete=models.CASCADE, related_name="gradlab_bindings"
    )
    context_id = models.CharField(max_length=255)  # the platform's context id
    module = models.ForeignKey(
        "courses.Module", on_delete=models.CASCADE, related_name="lti_bindings"
    )
    origin = models.CharField(max_length=16, choices=Origin.choices)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["deployment", "context_id", "module"], name="lti_binding_unique"
            )
        ]

    def __str__(self) -> str:
        return f"{self.deployment} {self.context_id} -> {self.module}"


class ExerciseLink(models.Model):
    """An LMS resource link (an assignment) that opens one gradlab exercise."""

    class Policy(models.TextChoices):
        BEST = "best"  # the learner's best graded score
        LAST = "last"  # the score of the latest graded submission

    resource_link = models.OneToOneField(
        "lti_tool.LtiResourceLink", on_delete=models.CASCADE, related_name="gradlab_link"
    )
    exercise = models.ForeignKey(
        "courses.Exercise", on_delete=models.CASCADE, related_name="lti_links"
    )
    lineitem_url = models.URLField(max_length=2000, blank=True)
    score_policy = models.CharField(max_length=8, choices=Policy.choices, default=Policy.BEST)
    # The line item's endDateTime (read from the platform after a launch): the exercise's
    # due date in this course context. A submission after it is late.
    due_at = models.DateTimeField(null=True, blank=True)
    lineitem_checked_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"{self.resource_link} -> {self.exercise}"

    def is_late(self, submitted_at: datetime) -> bool:
        return self.due_at is not None and submitted_at > self.due_at


class GradeTarget(models.Model):
    """Where one learner's scores of one exercise go: a line item of a registration, and
    the learner's id (`sub`) on that platform."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="lti_grade_targets"
    )
    link = models.ForeignKey(ExerciseLink, on_delete=models.CASCADE, related_name="targets")
    sub = models.CharField(max_length=255)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["user", "link"], name="lti_grade_target_unique")
        ]

    def __str__(self) -> str:
        return f"{self.user} -> {self.link.lineitem_url}"


class ScorePost(OutboxRow):
    """The outbox of Assignment and Grade Services: one score to post, written in the
    grade's transaction, posted (and retried) by a worker."""

    class Status(models.TextChoices):
        PENDING = "pending"
        SENDING = "sending"
        POSTED = "posted"
        FAILED = "failed"  # a permanent refusal (e.g. a test student), or attempts used

    DONE = Status.POSTED
    DONE_AT = "posted_at"

    target = models.ForeignKey(GradeTarget, on_delete=models.CASCADE, related_name="posts")
    submission = models.ForeignKey(
        "submissions.Submission", on_delete=models.CASCADE, related_name="lti_score_posts"
    )
    payload = models.JSONField()
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    posted_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["status", "next_attempt_at"], name="lti_score_post_due")]

    def __str__(self) -> str:
        return f"score of submission {self.submission_id} ({self.status})"


class UsedNonce(models.Model):
    """A launch's nonce, once its id_token was accepted: a second launch with it is a
    replay. Kept past the id_token's lifetime, then purged."""

    issuer = models.CharField(max_length=255)
    nonce = models.CharField(max_length=255)
    expires_at = models.DateTimeField(db_index=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["issuer", "nonce"], name="lti_nonce_once")]

    def __str__(self) -> str:
        return f"{self.issuer} {self.nonce}"
