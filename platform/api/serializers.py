"""Input and output shapes of /api/v1/. These field names are a public contract."""

from __future__ import annotations

from typing import Any

from django.urls import reverse
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from courses.models import Exercise
from submissions.models import Submission
from submissions.selectors import queue_place, submission_result_withheld


class StrictCharField(serializers.CharField):
    """A CharField that refuses numbers and booleans instead of turning them into text."""

    def to_internal_value(self, data: Any) -> str:
        if not isinstance(data, str):
            self.fail("invalid")
        return super().to_internal_value(data)


class SubmissionCreateInput(serializers.Serializer):
    exercise = StrictCharField(max_length=100)
    # Emptiness, size and NUL bytes are checked by the service, with clear messages.
    code = StrictCharField(allow_blank=True, trim_whitespace=False)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["code"].validators = []  # the service owns these rules


def _absolute(request: Any, name: str, **kwargs: Any) -> str:
    return request.build_absolute_uri(reverse(name, kwargs=kwargs))


class ExerciseOutput(serializers.Serializer):
    slug = serializers.CharField()
    title = serializers.CharField()
    module = serializers.CharField(source="module.slug")
    kind = serializers.CharField()
    points = serializers.IntegerField()
    url = serializers.SerializerMethodField()

    def get_url(self, exercise: Exercise) -> str:
        return _absolute(self.context["request"], "api:exercise-detail", slug=exercise.slug)


class ExerciseDetailOutput(ExerciseOutput):
    version = serializers.IntegerField(source="current_version.number")
    statement = serializers.CharField(source="current_version.statement")
    statement_html = serializers.CharField(source="current_version.statement_html")
    starter_code = serializers.CharField(source="current_version.starter_code")


class SubmissionCreatedOutput(serializers.Serializer):
    id = serializers.IntegerField()
    status = serializers.CharField()
    url = serializers.SerializerMethodField()

    def get_url(self, submission: Submission) -> str:
        return _absolute(self.context["request"], "api:submission-detail", pk=submission.pk)


class CheckOutput(serializers.Serializer):
    name = serializers.CharField()
    passed = serializers.BooleanField()
    score = serializers.FloatField()
    max_score = serializers.FloatField()
    message = serializers.CharField()
    diagnosis = serializers.CharField(help_text="a diagnosis slug (grader/FORMAT.md) or ''")
    hint = serializers.CharField()


class SubmissionOutput(SubmissionCreatedOutput):
    exercise = serializers.CharField(source="exercise.slug")
    version = serializers.IntegerField(source="version.number", allow_null=True)
    late = serializers.BooleanField(help_text="made after the exercise's due date")
    learner = serializers.CharField(source="learner.username")
    score = serializers.FloatField(allow_null=True)
    max_score = serializers.FloatField(allow_null=True)
    passed = serializers.BooleanField(allow_null=True)
    message = serializers.CharField(
        source="error_message", help_text="why grading failed or the run stopped, or ''"
    )
    checks = CheckOutput(many=True)
    attempts = serializers.IntegerField()
    created_at = serializers.DateTimeField()
    graded_at = serializers.DateTimeField(allow_null=True)
    held_for_review = serializers.SerializerMethodField(
        help_text="the report carries integrity flags: its score is withheld from the learner "
        "(score, passed and checks are null/empty) until an instructor releases or rejects it"
    )

    def get_held_for_review(self, submission: Submission) -> bool:
        return submission.review == Submission.Review.HELD

    def to_representation(self, submission: Submission) -> dict[str, Any]:
        data: dict[str, Any] = super().to_representation(submission)
        viewer = getattr(self.context.get("request"), "user", None)
        if submission_result_withheld(submission=submission, user=viewer):
            data.update(score=None, passed=None, checks=[], message="")
        return data


class QueueOutput(serializers.Serializer):
    position = serializers.IntegerField(help_text="1: next to be graded")
    ahead = serializers.IntegerField(help_text="submissions queued before this one")
    estimated_wait_s = serializers.IntegerField(
        allow_null=True,
        help_text="seconds until the grade, from recent grading times (null: no history yet)",
    )


class SubmissionDetailOutput(SubmissionOutput):
    queue = serializers.SerializerMethodField(
        help_text="while queued: its place in the queue and an estimate; otherwise null"
    )

    @extend_schema_field(QueueOutput(allow_null=True))
    def get_queue(self, submission: Submission) -> dict[str, Any] | None:
        place = queue_place(submission)
        if place is None:
            return None
        return {
            "position": place.position,
            "ahead": place.ahead,
            "estimated_wait_s": place.estimated_wait_s,
        }
