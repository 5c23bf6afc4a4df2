"""Course endpoints: API tokens and webhooks (managed by the course's instructors with
their own credentials, never with a course token), the course's submissions, webhook
deliveries (visible and redeliverable), and its roster (members: by instructors, or a
course token with the roster scopes)."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import User
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.exceptions import NotAuthenticated, UnsupportedMediaType
from rest_framework.parsers import BaseParser
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from api.pagination import Pagination, paginated
from api.serializers import SubmissionOutput
from common.errors import InvalidInput, NotFound
from courses import roster
from courses.models import Module
from integrations import tokens, webhooks
from integrations.models import WebhookEndpoint
from integrations.serializers import (
    CourseTokenCreatedOutput,
    CourseTokenCreateInput,
    CourseTokenOutput,
    MemberInput,
    MemberOutput,
    RosterImportOutput,
    WebhookCreateInput,
    WebhookDeliveryOutput,
    WebhookOutput,
    WebhookSecretOutput,
    WebhookUpdateInput,
)
from submissions.selectors import submission_list_for_module

ERRORS = {
    400: OpenApiResponse(description="Bad input, per field; or a NUL in the query string"),
    401: OpenApiResponse(description="Not authenticated, or a wrong token"),
    403: OpenApiResponse(description="A course token of another course or without the scope"),
    404: OpenApiResponse(description="No such course, or you do not teach it"),
}


def acting_user(request: Request) -> User:
    """The signed-in user (every view here requires one; a course token acts as its
    creator)."""
    user = request.user
    if not isinstance(user, User):
        raise NotAuthenticated()
    return user


def module_get(slug: str) -> Module:
    module = Module.objects.filter(slug=slug).first()
    if module is None:
        raise NotFound(f"No course {slug!r}.")
    return module


def module_id_of(request: Request) -> int | None:
    """The course a /courses/{module}/ request touches (for CourseTokenScope)."""
    slug = request.parser_context["kwargs"].get("module") if request.parser_context else None
    return Module.objects.filter(slug=slug).values_list("pk", flat=True).first()


def module_taught(request: Request, slug: str) -> Module:
    """The course `slug` if the caller (or a course token's creator) teaches it."""
    module = module_get(slug)
    if not tokens.teaches(acting_user(request), module.pk):
        raise NotFound(f"You do not teach {slug!r}.")
    return module


class CourseView(APIView):
    course_token_scopes: dict[str, str] = {}  # course tokens refused unless a view says
    course_token_module = staticmethod(module_id_of)


class CourseTokenListApi(CourseView):
    @extend_schema(responses={200: CourseTokenOutput(many=True), **ERRORS})
    def get(self, request: Request, module: str) -> Response:
        found = tokens.course_tokens_of(user=acting_user(request), module=module_get(module))
        return Response(CourseTokenOutput(found.select_related("created_by"), many=True).data)

    @extend_schema(
        request=CourseTokenCreateInput,
        responses={201: CourseTokenCreatedOutput, **ERRORS},
    )
    def post(self, request: Request, module: str) -> Response:
        payload = CourseTokenCreateInput(data=request.data)
        payload.is_valid(raise_exception=True)
        issued = tokens.course_token_create(
            creator=acting_user(request), module=module_get(module), **payload.validated_data
        )
        data: dict[str, Any] = dict(CourseTokenOutput(issued.token).data)
        data["token"] = issued.secret
        return Response(data, status=status.HTTP_201_CREATED, headers={"Cache-Control": "no-store"})


class CourseTokenDetailApi(CourseView):
    @extend_schema(responses={204: None, **ERRORS})
    def delete(self, request: Request, module: str, pk: int) -> Response:
        course = module_get(module)
        tokens.course_token_revoke(user=acting_user(request), module=course, token_id=pk)
        return Response(status=status.HTTP_204_NO_CONTENT)


class CourseSubmissionListApi(CourseView):
    course_token_scopes = {"GET": tokens.SUBMISSIONS_READ}

    @extend_schema(
        parameters=[
            OpenApiParameter("exercise", OpenApiTypes.STR, description="an exercise slug"),
            OpenApiParameter("learner", OpenApiTypes.STR, description="a username"),
            OpenApiParameter("page", OpenApiTypes.INT),
            OpenApiParameter("page_size", OpenApiTypes.INT),
        ],
        responses={200: paginated(SubmissionOutput), **ERRORS},
    )
    def get(self, request: Request, module: str) -> Response:
        course = module_get(module)
        try:
            found = submission_list_for_module(instructor=acting_user(request), module_id=course.pk)
        except NotFound:
            raise NotFound(f"You do not teach {module!r}.") from None
        if exercise := request.query_params.get("exercise"):
            found = found.filter(exercise__slug=exercise)
        if learner := request.query_params.get("learner"):
            found = found.filter(learner__username=learner)
        paginator = Pagination()
        page = paginator.paginate_queryset(found.order_by("-created_at", "-id"), request, self)
        data = SubmissionOutput(page, many=True, context={"request": request}).data
        return paginator.get_paginated_response(data)


def _endpoint(request: Request, module: str, pk: int) -> WebhookEndpoint:
    course = module_get(module)
    return webhooks.endpoint_get(user=acting_user(request), module=course, endpoint_id=pk)


class WebhookListApi(CourseView):
    course_token_scopes = {"GET": tokens.WEBHOOKS_READ}

    @extend_schema(responses={200: WebhookOutput(many=True), **ERRORS})
    def get(self, request: Request, module: str) -> Response:
        found = webhooks.endpoints_of(user=acting_user(request), module=module_get(module))
        return Response(WebhookOutput(found, many=True).data)

    @extend_schema(
        request=WebhookCreateInput,
        responses={201: WebhookSecretOutput, **ERRORS},
    )
    def post(self, request: Request, module: str) -> Response:
        payload = WebhookCreateInput(data=request.data)
        payload.is_valid(raise_exception=True)
        endpoint = webhooks.endpoint_create(
            user=acting_user(request), module=module_get(module), **payload.validated_data
        )
        return Response(
            WebhookSecretOutput(endpoint).data,
            status=status.HTTP_201_CREATED,
            headers={"Cache-Control": "no-store"},
        )


class WebhookDetailApi(CourseView):
    @extend_schema(responses={200: WebhookSecretOutput, **ERRORS})
    def get(self, request: Request, module: str, pk: int) -> Response:
        endpoint = _endpoint(request, module, pk)
        return Response(WebhookSecretOutput(endpoint).data, headers={"Cache-Control": "no-store"})

    @extend_schema(
        request=WebhookUpdateInput,
        responses={200: WebhookOutput, **ERRORS},
    )
    def patch(self, request: Request, module: str, pk: int) -> Response:
        payload = WebhookUpdateInput(data=request.data)
        payload.is_valid(raise_exception=True)
        endpoint = webhooks.endpoint_set_active(
            endpoint=_endpoint(request, module, pk), active=payload.validated_data["active"]
        )
        return Response(WebhookOutput(endpoint).data)

    @extend_schema(responses={204: None, **ERRORS})
    def delete(self, request: Request, module: str, pk: int) -> Response:
        webhooks.endpoint_delete(endpoint=_endpoint(request, module, pk))
        return Response(status=status.HTTP_204_NO_CONTENT)


class WebhookSecretRotateApi(CourseView):
    @extend_schema(
        request=None,
        responses={200: WebhookSecretOutput, **ERRORS},
        description=(
            "A new signing secret, shown once here and on the webhook's detail. The "
            "replaced secret signs beside it until previous_secret_expires_at, so that "
            "no delivery fails while the receiver switches."
        ),
    )
    def post(self, request: Request, module: str, pk: int) -> Response:
        endpoint = webhooks.endpoint_rotate_secret(endpoint=_endpoint(request, module, pk))
        return Response(WebhookSecretOutput(endpoint).data, headers={"Cache-Control": "no-store"})


class WebhookDeliveryListApi(CourseView):
    course_token_scopes = {"GET": tokens.WEBHOOKS_READ}

    @extend_schema(
        parameters=[
            OpenApiParameter("page", OpenApiTypes.INT),
            OpenApiParameter("page_size", OpenApiTypes.INT),
        ],
        responses={200: paginated(WebhookDeliveryOutput), **ERRORS},
    )
    def get(self, request: Request, module: str, pk: int) -> Response:
        found = webhooks.deliveries_of(endpoint=_endpoint(request, module, pk))
        paginator = Pagination()
        page = paginator.paginate_queryset(found, request, self)
        return paginator.get_paginated_response(WebhookDeliveryOutput(page, many=True).data)


class WebhookRedeliverApi(CourseView):
    @extend_schema(request=None, responses={202: WebhookDeliveryOutput, **ERRORS})
    def post(self, request: Request, module: str, pk: int, delivery: int) -> Response:
        original = webhooks.deliveries_of(endpoint=_endpoint(request, module, pk))
        found = original.filter(pk=delivery).select_related("endpoint").first()
        if found is None:
            raise NotFound(f"No delivery {delivery} of webhook {pk}.")
        again = webhooks.delivery_redeliver(delivery=found)
        return Response(WebhookDeliveryOutput(again).data, status=status.HTTP_202_ACCEPTED)


ROSTER_ERRORS = {
    **ERRORS,
    409: OpenApiResponse(description="The change would leave the course without an instructor"),
}


class MemberListApi(CourseView):
    course_token_scopes = {"GET": tokens.ROSTER_READ, "POST": tokens.ROSTER_WRITE}

    @extend_schema(
        parameters=[
            OpenApiParameter("role", OpenApiTypes.STR, description="learner, instructor, reviewer"),
            OpenApiParameter("page", OpenApiTypes.INT),
            OpenApiParameter("page_size", OpenApiTypes.INT),
        ],
        responses={200: paginated(MemberOutput), **ERRORS},
        description="The course's members by username: learners, instructors, reviewers.",
    )
    def get(self, request: Request, module: str) -> Response:
        found = roster.module_members(module=module_taught(request, module))
        if role := request.query_params.get("role"):
            found = found.filter(role=role)
        paginator = Pagination()
        page = paginator.paginate_queryset(found, request, self)
        return paginator.get_paginated_response(MemberOutput(page, many=True).data)

    @extend_schema(
        request=MemberInput,
        responses={201: MemberOutput, 200: MemberOutput, **ROSTER_ERRORS},
        description=(
            "Adds a member (201) or changes a member's role (200). A missing user is a 400 "
            "unless `create` is true. Demoting the last instructor is a 409."
        ),
    )
    def post(self, request: Request, module: str) -> Response:
        course = module_taught(request, module)
        payload = MemberInput(data=request.data)
        payload.is_valid(raise_exception=True)
        membership = roster.module_member_set(module=course, **payload.validated_data)
        code = status.HTTP_201_CREATED if membership.added else status.HTTP_200_OK
        return Response(MemberOutput(membership.enrollment).data, status=code)


class MemberDetailApi(CourseView):
    course_token_scopes = {"DELETE": tokens.ROSTER_WRITE}

    @extend_schema(responses={204: None, **ROSTER_ERRORS})
    def delete(self, request: Request, module: str, username: str) -> Response:
        roster.module_member_remove(module=module_taught(request, module), username=username)
        return Response(status=status.HTTP_204_NO_CONTENT)


class CsvParser(BaseParser):
    """A raw text/csv request body, read up to the roster's cap."""

    media_type = "text/csv"

    def parse(self, stream: Any, media_type: str | None = None, parser_context: Any = None) -> Any:
        limit = roster.CSV_MAX_BYTES
        data = stream.read(limit + 1) if stream is not None else b""
        return data  # roster_csv_parse refuses a larger one


class RosterImportApi(CourseView):
    course_token_scopes = {"POST": tokens.ROSTER_WRITE}
    parser_classes = [CsvParser]

    @extend_schema(
        operation_id="courses_roster_import",
        request={"text/csv": OpenApiTypes.BINARY},
        parameters=[
            OpenApiParameter(
                "create", OpenApiTypes.BOOL, description="create missing users (1 or true)"
            )
        ],
        responses={200: RosterImportOutput, **ROSTER_ERRORS},
        description=(
            "A CSV roster, UTF-8, whose header names the columns: `username`, and optionally "
            "`email` (of a created user) and `role` (default learner). Every row is checked "
            "first; then all are applied, or none: a 400 lists each problem by line, "
            '{"csv": ["line 3: no user \'x\' ..."]}.'
        ),
    )
    def post(self, request: Request, module: str) -> Response:
        course = module_taught(request, module)
        try:
            data = request.data if isinstance(request.data, bytes) else b""
        except UnsupportedMediaType:
            message = "Send the CSV with Content-Type: text/csv."
            raise InvalidInput({"content_type": [message]}) from None
        create = request.query_params.get("create") in ("1", "true")
        result = roster.module_roster_import(module=course, data=data, create=create)
        return Response(RosterImportOutput(result).data)
