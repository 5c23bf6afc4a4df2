"""The catalog: course modules, exercises and their immutable versions."""

from __future__ import annotations

from django.db import models


class Module(models.Model):
    slug = models.SlugField(max_length=100, unique=True)
    title = models.CharField(max_length=200)
    order = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["order", "slug"]

    def __str__(self) -> str:
        return self.title


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
    current_version = models.ForeignKey(
        "ExerciseVersion", on_delete=models.PROTECT, null=True, blank=True, related_name="+"
    )

    class Meta:
        ordering = ["module__order", "order", "slug"]

    def __str__(self) -> str:
        return self.slug


class ExerciseVersion(models.Model):
    """One exact content of a package. Submissions point at the version they were made
    for, so a later edit never changes how an old submission was graded."""

    exercise = models.ForeignKey(Exercise, on_delete=models.CASCADE, related_name="versions")
    number = models.PositiveIntegerField()
    content_hash = models.CharField(max_length=64)
    files = models.JSONField()  # relative path -> text: the whole package
    manifest = models.JSONField()  # exercise.toml, parsed
    statement = models.TextField()
    statement_html = models.TextField()
    starter_code = models.TextField()
    hidden_seed = models.BigIntegerField()  # input seed for hidden cases; never exposed
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["exercise", "number"]
        constraints = [
            models.UniqueConstraint(fields=["exercise", "number"], name="version_number_unique"),
            models.UniqueConstraint(
                fields=["exercise", "content_hash"], name="version_content_unique"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.exercise.slug} v{self.number}"
