"""One small view per endpoint: parse, authorise, call one service or selector, render."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from api.pagination import Pagination, paginated
from api.serializers import (
    ExerciseDetailOutput,
    ExerciseOutput,
    SubmissionCreatedOutput,
    SubmissionCreateInput,
    SubmissionDetailOutput,
    SubmissionOutput,
)
from courses.selectors import exercise_visible_get, exercises_visible_to
from integrations.idempotency import HEADER as IDEMPOTENCY_HEADER
from integrations.idempotency import idempotent
from integrations.tokens import within_grant
from submissions.selectors import submission_get, submission_list_own
from submissions.services import submission_create

ERROR_RESPONSES = {
    400: OpenApiResponse(description='Bad input, per field: {"code": ["..."]}'),
    401: OpenApiResponse(description="Not authenticated"),
}
PAGE_ERRORS = {404: OpenApiResponse(description="No such page")}


class ExerciseListApi(APIView):
    @extend_schema(responses={200: ExerciseOutput(many=True), **ERROR_RESPONSES})
    def get(self, request: Request) -> Response:
        exercises = within_grant(exercises_visible_to(user=request.user), request.auth)
        data = ExerciseOutput(exercises, many=True, context={"request": request}).data
        return Response(data)


class ExerciseDetailApi(APIView):
    @extend_schema(responses={200: ExerciseDetailOutput, 404: OpenApiResponse()})
    def get(self, request: Request, slug: str) -> Response:
        exercise = exercise_visible_get(slug=slug, user=request.user)
        return Response(ExerciseDetailOutput(exercise, context={"request": request}).data)


class SubmissionListCreateApi(APIView):
    @extend_schema(
        parameters=[
            OpenApiParameter("exercise", OpenApiTypes.STR, description="an exercise slug"),
            OpenApiParameter("page", OpenApiTypes.INT),
            OpenApiParameter("page_size", OpenApiTypes.INT),
        ],
        operation_id="submissions_list",
        responses={200: paginated(SubmissionOutput), **ERROR_RESPONSES, **PAGE_ERRORS},
    )
    def get(self, request: Request) -> Response:
        slug = request.query_params.get("exercise")
        submissions = submission_list_own(user=request.user, exercise_slug=slug)
        paginator = Pagination()
        page = paginator.paginate_queryset(submissions, request, view=self)
        data = SubmissionOutput(page, many=True, context={"request": request}).data
        return paginator.get_paginated_response(data)

    @extend_schema(
        request=SubmissionCreateInput,
        parameters=[
            OpenApiParameter(
                IDEMPOTENCY_HEADER,
                OpenApiTypes.STR,
                OpenApiParameter.HEADER,
                description=(
                    "a retry with the same key and body replays the first response "
                    "(Idempotent-Replayed: true); keys are per caller and expire"
                ),
            )
        ],
        responses={
            201: SubmissionCreatedOutput,
            409: OpenApiResponse(description="The first request with this key is in progress"),
            422: OpenApiResponse(description="Idempotency-Key reused for another body"),
            429: OpenApiResponse(description="Too many submissions; see Retry-After"),
            **ERROR_RESPONSES,
        },
    )
    @idempotent("submissions.create")
    def post(self, request: Request) -> Response:
        payload = SubmissionCreateInput(data=request.data)
        payload.is_valid(raise_exception=True)
        submission, _ = submission_create(
            learner=request.user,
            exercise_slug=payload.validated_data["exercise"],
            code=payload.validated_data["code"],
        )
        data = SubmissionCreatedOutput(submission, context={"request": request}).data
        headers = {"Location": data["url"]}
        return Response(data, status=status.HTTP_201_CREATED, headers=headers)


class SubmissionDetailApi(APIView):
    @extend_schema(responses={200: SubmissionDetailOutput, 404: OpenApiResponse()})
    def get(self, request: Request, pk: int) -> Response:
        submission = submission_get(user=request.user, submission_id=pk)
        return Response(SubmissionDetailOutput(submission, context={"request": request}).data)
