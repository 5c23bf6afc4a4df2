"""Mastery of a module's learning objectives (submissions.mastery holds the definition):
a learner's own, one learner's for the module's instructors, the class's. The access rule is
courses.access' as everywhere: a learner reads the modules they are enrolled in (404
otherwise), the module's instructors and staff read its learners' (403 for anyone else).
Course tokens are refused (no scope is declared here)."""

from __future__ import annotations

from typing import Any

from django.urls import reverse
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from common.errors import NotFound
from courses.access import module_get_taught, module_member_get
from courses.models import Module
from courses.selectors import module_get, modules_visible_to
from submissions import mastery

STATUSES = (mastery.SHOWN_STATUS, mastery.NOT_YET, mastery.NO_EVIDENCE)
ERRORS = {
    401: OpenApiResponse(description="Not authenticated"),
    404: OpenApiResponse(description="No such module (or not one of yours)"),
}
TEACHER_ERRORS = {
    **ERRORS,
    403: OpenApiResponse(description="Not an instructor of this module"),
}


def _submission_url(request: Any, pk: int) -> str:
    return request.build_absolute_uri(reverse("api:submission-detail", kwargs={"pk": pk}))


class FailureOutput(serializers.Serializer):
    exercise = serializers.CharField(help_text="the exercise's slug")
    check = serializers.CharField(help_text="the failed check's name")
    diagnosis = serializers.CharField(
        help_text="its diagnosis slug (grader/FORMAT.md), or '' where the run gave no result"
    )
    diagnosis_title = serializers.CharField()
    submission = serializers.IntegerField(source="submission_id")
    submission_url = serializers.SerializerMethodField(help_text="the feedback behind it")

    def get_submission_url(self, failure: mastery.Failure) -> str:
        return _submission_url(self.context["request"], failure.submission_id)


class ObjectiveMasteryOutput(serializers.Serializer):
    objective = serializers.CharField(help_text="the objective's id (module.toml)")
    title = serializers.CharField()
    mastery = serializers.FloatField(
        allow_null=True,
        help_text="points of its checks passed / points of its checks, over the latest "
        "graded submission of each exercise; null without any",
    )
    status = serializers.ChoiceField(choices=STATUSES)
    points = serializers.FloatField()
    passed_points = serializers.FloatField()
    exercises_tried = serializers.IntegerField(help_text="exercises whose evidence counts")
    exercises = serializers.IntegerField(help_text="published exercises that test it")
    failures = FailureOutput(many=True)


class LearnerMasteryOutput(serializers.Serializer):
    module = serializers.CharField()
    learner = serializers.CharField()
    shown_at = serializers.FloatField(help_text="the mastery at which an objective is shown")
    objectives = ObjectiveMasteryOutput(many=True)


class DiagnosisCountOutput(serializers.Serializer):
    exercise = serializers.CharField()
    diagnosis = serializers.CharField(help_text="a diagnosis slug, or '' (no result)")
    title = serializers.CharField()
    count = serializers.IntegerField(help_text="failed checks of the objective it explains")
    latest_submission = serializers.IntegerField(source="latest_submission_id")
    latest_submission_url = serializers.SerializerMethodField()

    def get_latest_submission_url(self, row: mastery.DiagnosisCount) -> str:
        return _submission_url(self.context["request"], row.latest_submission_id)


class ClassObjectiveOutput(serializers.Serializer):
    objective = serializers.CharField()
    title = serializers.CharField()
    learners = serializers.IntegerField(help_text="learners with evidence")
    learners_shown = serializers.IntegerField()
    mastery = serializers.FloatField(allow_null=True, help_text="the mean of their mastery")
    failures = serializers.IntegerField(help_text="failed checks in their latest submissions")
    diagnoses = DiagnosisCountOutput(many=True)


class ClassMasteryOutput(serializers.Serializer):
    module = serializers.CharField()
    learners = serializers.IntegerField(help_text="learners enrolled")
    shown_at = serializers.FloatField()
    objectives = ClassObjectiveOutput(many=True)
    most_failed = serializers.ListField(
        child=serializers.CharField(), help_text="objective ids, most failures first"
    )


def _learner_payload(module: Module, username: str, rows: list[Any], request: Request) -> Any:
    data = {"module": module.slug, "learner": username, "shown_at": mastery.SHOWN,
            "objectives": rows}  # fmt: skip
    return LearnerMasteryOutput(data, context={"request": request}).data


class MyMasteryApi(APIView):
    @extend_schema(responses={200: LearnerMasteryOutput, **ERRORS})
    def get(self, request: Request, module: str) -> Response:
        found = module_get(slug=module)
        if not modules_visible_to(user=request.user).filter(pk=found.pk).exists():
            raise NotFound("No such module.")
        rows = mastery.learner_mastery(module=found, user=request.user)
        return Response(_learner_payload(found, request.user.get_username(), rows, request))


class LearnerMasteryApi(APIView):
    @extend_schema(responses={200: LearnerMasteryOutput, **TEACHER_ERRORS})
    def get(self, request: Request, module: str, user_id: int) -> Response:
        found = module_get_taught(slug=module, user=request.user)
        learner = module_member_get(module=found, user_id=user_id)
        rows = mastery.learner_mastery_of(module=found, learner_id=learner.pk)
        return Response(_learner_payload(found, learner.get_username(), rows, request))


class ClassMasteryApi(APIView):
    @extend_schema(responses={200: ClassMasteryOutput, **TEACHER_ERRORS})
    def get(self, request: Request, module: str) -> Response:
        found = module_get_taught(slug=module, user=request.user)
        result = mastery.class_mastery(module=found)
        data = {
            "module": found.slug,
            "learners": result.learners,
            "shown_at": mastery.SHOWN,
            "objectives": result.objectives,
            "most_failed": [o.objective for o in result.most_failed],
        }
        return Response(ClassMasteryOutput(data, context={"request": request}).data)
