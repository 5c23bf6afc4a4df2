"""The caller's draft of an exercise: the unsent code the exercise page autosaves, read,
replaced and dropped through the API (submissions.drafts, the same rules as the page)."""

from __future__ import annotations

from typing import Any

from django.urls import reverse
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.permissions import BasePermission, IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from api.serializers import StrictCharField
from common.errors import NotFound
from courses.selectors import exercise_visible_get
from integrations.tokens import CourseGrant
from submissions.drafts import draft_delete, draft_get, draft_save
from submissions.models import Draft


class LearnerCaller(BasePermission):
    """A draft is one learner's: a course token acts for a course, so it has none."""

    message = (
        "A draft belongs to a learner: a course token cannot read or keep one. Use your "
        "own token (Authorization: Token ...) or the web session."
    )

    def has_permission(self, request: Request, view: Any) -> bool:
        return not isinstance(request.auth, CourseGrant)


class LearnerDraftInput(serializers.Serializer):
    # May be empty (a cleared editor); size, NUL bytes and surrogates: the service's rules.
    code = StrictCharField(allow_blank=True, trim_whitespace=False)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["code"].validators = []


class LearnerDraftOutput(serializers.Serializer):
    exercise = serializers.CharField(source="exercise.slug")
    code = serializers.CharField(trim_whitespace=False)
    updated_at = serializers.DateTimeField()
    url = serializers.SerializerMethodField()

    def get_url(self, draft: Draft) -> str:
        path = reverse("api:exercise-draft", kwargs={"slug": draft.exercise.slug})
        return str(self.context["request"].build_absolute_uri(path))


ERRORS = {
    401: OpenApiResponse(description="Not authenticated"),
    403: OpenApiResponse(description="A course token (a draft belongs to a learner)"),
    404: OpenApiResponse(description="No such exercise for the caller, or no draft of it"),
}


class LearnerDraftApi(APIView):
    permission_classes = [IsAuthenticated, LearnerCaller]

    @extend_schema(operation_id="exercise_draft_get", responses={200: LearnerDraftOutput, **ERRORS})
    def get(self, request: Request, slug: str) -> Response:
        exercise = exercise_visible_get(slug=slug, user=request.user)
        draft = draft_get(learner=request.user, exercise=exercise)
        if draft is None:
            raise NotFound(f"You have no draft of {slug!r}.")
        return Response(LearnerDraftOutput(draft, context={"request": request}).data)

    @extend_schema(
        operation_id="exercise_draft_put",
        request=LearnerDraftInput,
        responses={
            200: LearnerDraftOutput,
            400: OpenApiResponse(description='Bad input, per field: {"code": ["..."]}'),
            **ERRORS,
        },
    )
    def put(self, request: Request, slug: str) -> Response:
        exercise = exercise_visible_get(slug=slug, user=request.user)
        payload = LearnerDraftInput(data=request.data)
        payload.is_valid(raise_exception=True)
        code = payload.validated_data["code"]
        draft = draft_save(learner=request.user, exercise=exercise, code=code)
        return Response(LearnerDraftOutput(draft, context={"request": request}).data)

    @extend_schema(operation_id="exercise_draft_delete", responses={204: None, **ERRORS})
    def delete(self, request: Request, slug: str) -> Response:
        exercise = exercise_visible_get(slug=slug, user=request.user)
        draft_delete(learner=request.user, exercise=exercise)
        return Response(status=status.HTTP_204_NO_CONTENT)
