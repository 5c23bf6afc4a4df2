"""The catalog: course modules, exercises and their immutable versions, and the
instructor jobs (validation, regrade) run on them."""

from __future__ import annotations

from datetime import datetime

from django.conf import settings
from django.db import models


class Module(models.Model):
    slug = models.SlugField(max_length=100, unique=True)
    title = models.CharField(max_length=200)
    order = models.PositiveIntegerField(default=0)
    # The module.toml it was last loaded from, kept so that an export gives the same bytes.
    module_toml = models.TextField(blank=True, default="")

    class Meta:
        ordering = ["order", "slug"]

    def __str__(self) -> str:
        return self.title


class Objective(models.Model):
    """A learning objective of a module (module.toml `[[objectives]]`); exercise checks are
    tagged with its slug in their manifest, and mastery is counted per objective."""

    module = models.ForeignKey(Module, on_delete=models.CASCADE, related_name="objectives")
    slug = models.SlugField(max_length=100)
    title = models.CharField(max_length=300)
    order = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["module", "order", "slug"]
        constraints = [
            models.UniqueConstraint(fields=["module", "slug"], name="objective_slug_unique")
        ]

    def __str__(self) -> str:
        return f"{self.module.slug}: {self.slug}"


class Exercise(models.Model):
    class Kind(models.TextChoices):
        SCRIPT = "script"
        FUNCTION = "function"

    class Device(models.TextChoices):
        CPU = "cpu"
        CUDA = "cuda"

    module = models.ForeignKey(Module, on_delete=models.PROTECT, related_name="exercises")
    slug = models.SlugField(max_length=100, unique=True)
    title = models.CharField(max_length=200)
    kind = models.CharField(max_length=16, choices=Kind.choices)
    points = models.PositiveIntegerField()
    order = models.PositiveIntegerField(default=0)
    device = models.CharField(max_length=8, choices=Device.choices, default=Device.CPU)
    # The published version learners get (null: never published).
    current_version = models.ForeignKey(
        "ExerciseVersion", on_delete=models.PROTECT, null=True, blank=True, related_name="+"
    )
    # The instructor's working copy, saved but not published (null: none beyond the
    # current version). A draft is an ExerciseVersion without a number.
    draft_version = models.ForeignKey(
        "ExerciseVersion", on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    is_published = models.BooleanField(default=True)  # False: unpublished, hidden from learners
    release_at = models.DateTimeField(null=True, blank=True)  # learners see it from then
    due_at = models.DateTimeField(null=True, blank=True)  # later submissions are marked late
    late_counts = models.BooleanField(default=True)  # whether a late submission's score counts

    class Meta:
        ordering = ["module__order", "order", "slug"]

    def __str__(self) -> str:
        return self.slug


class ExerciseVersion(models.Model):
    """One exact content of a package, never changed once written. Submissions point at
    the version they were made for, so a later edit never changes how an old submission was
    graded. A saved draft is a version without a number; publishing gives it the next one."""

    exercise = models.ForeignKey(Exercise, on_delete=models.CASCADE, related_name="versions")
    number = models.PositiveIntegerField(null=True, blank=True)  # null: a draft
    saved_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    published_at = models.DateTimeField(null=True, blank=True)
    content_hash = models.CharField(max_length=64)
    files = models.JSONField()  # relative path -> text: the whole package
    manifest = models.JSONField()  # exercise.toml, parsed
    statement = models.TextField()
    statement_html = models.TextField()
    starter_code = models.TextField()
    hidden_seed = models.BigIntegerField()  # input seed for hidden cases; never exposed
    created_at = models.DateTimeField(auto_now_add=True)
    # When a later save (a restore, an edit back to this content) made it the draft again;
    # null: only when created. The history's order and the drafts pruning use the later.
    saved_again_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["exercise", "number"]
        constraints = [
            models.UniqueConstraint(fields=["exercise", "number"], name="version_number_unique"),
            models.UniqueConstraint(
                fields=["exercise", "content_hash"], name="version_content_unique"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.exercise.slug} {self.label}"

    @property
    def last_saved_at(self) -> datetime:
        return self.saved_again_at or self.created_at

    @property
    def label(self) -> str:
        return f"v{self.number}" if self.number is not None else f"draft {self.content_hash[:8]}"


class ExerciseJob(models.Model):
    """An instructor job: an exercise's validation or regrade, run by a Celery worker.

    Both run many sandboxes (seconds to minutes), so they never run inside a web request:
    the page creates the row, a worker runs it (authoring.tasks) through the same claim,
    lease and sweep as grading (common.jobs), and the page shows its state and outcome.
    The row is the source of truth; the outcome is plain JSON.
    """

    class Kind(models.TextChoices):
        VALIDATE = "validate", "Validation"
        REGRADE = "regrade", "Regrade"
        REGRADE_PREVIEW = "regrade-preview", "Regrade preview"  # says what would change

    class Status(models.TextChoices):
        QUEUED = "queued"
        RUNNING = "running"
        DONE = "done"
        FAILED = "failed"  # we could not run it (sandbox fault, lost): says why in `error`

    exercise = models.ForeignKey(Exercise, on_delete=models.CASCADE, related_name="jobs")
    version = models.ForeignKey(ExerciseVersion, on_delete=models.CASCADE, related_name="jobs")
    kind = models.CharField(max_length=16, choices=Kind.choices)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.QUEUED)
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, related_name="+"
    )
    outcome = models.JSONField(null=True, blank=True)
    error = models.TextField(blank=True, default="")
    attempts = models.PositiveIntegerField(default=0)  # claims so far (common.jobs)
    # common.owner of the current claim: "host#boot/pid/start time"
    claimed_by = models.CharField(max_length=200, blank=True, default="")
    lease_expires_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "courses_exercisejob"
        ordering = ["-created_at", "-id"]
        indexes = [
            models.Index(fields=["exercise", "kind", "created_at"], name="job_recent"),
            models.Index(fields=["status", "lease_expires_at"], name="job_lease"),
        ]

    def __str__(self) -> str:
        return f"{self.kind} {self.exercise_id} ({self.status})"

    @property
    def pending(self) -> bool:
        return self.status in (self.Status.QUEUED, self.Status.RUNNING)


class Extension(models.Model):
    """One learner's own due date for one exercise, granted by an instructor: it moves
    that learner's due date (their submissions are late only after it)."""

    exercise = models.ForeignKey(Exercise, on_delete=models.CASCADE, related_name="extensions")
    learner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="extensions"
    )
    due_at = models.DateTimeField()
    granted_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["exercise", "due_at", "id"]
        constraints = [
            models.UniqueConstraint(fields=["exercise", "learner"], name="extension_unique")
        ]

    def __str__(self) -> str:
        return f"{self.exercise.slug}: {self.learner_id} until {self.due_at:%Y-%m-%d %H:%M}"


class EnrolmentLink(models.Model):
    """A shareable way into a module (courses.enrolment_links): whoever signs in and opens
    /join/<code>/, or types the code on the home page, joins the module with `role` until
    the link expires, is revoked or has been used `max_uses` times. It never grants the
    instructor role, and never changes the role of someone already in the module."""

    class Role(models.TextChoices):
        LEARNER = "learner"
        REVIEWER = "reviewer"

    module = models.ForeignKey(Module, on_delete=models.CASCADE, related_name="enrolment_links")
    code = models.CharField(max_length=32)  # shown to the module's instructors, never looked up
    # sha256 of the code: what a lookup compares, so its timing says nothing of the code.
    code_digest = models.CharField(max_length=64, unique=True)
    role = models.CharField(max_length=16, choices=Role.choices, default=Role.LEARNER)
    expires_at = models.DateTimeField()
    max_uses = models.PositiveIntegerField(null=True, blank=True)  # null: no limit
    use_count = models.PositiveIntegerField(default=0)  # members it added
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["module", "-created_at", "-id"]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(role__in=["learner", "reviewer"]),
                name="enrolment_link_role_not_instructor",
            )
        ]

    def __str__(self) -> str:
        return f"{self.module.slug}: {self.role} link until {self.expires_at:%Y-%m-%d %H:%M}"


class EnrolmentCodeMiss(models.Model):
    """One lookup of an enrolment code that matched no link, by `user`: counted over a
    sliding window (common.ratelimit) to throttle guessing."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        indexes = [models.Index(fields=["user", "created_at"], name="enrolment_miss_recent")]
