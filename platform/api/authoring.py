"""The authoring API (/api/v1/authoring/): modules and exercises for their instructors'
personal tokens (course tokens are refused: no view here declares a scope). Reviewers read,
validate and download; instructors also create, save, upload and publish. Each view starts
with the access-checked getter of courses.access and calls authoring.services."""

from __future__ import annotations

from typing import Any

from django.db.models import Q
from django.http import HttpResponse
from django.urls import reverse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiParameter,
    OpenApiResponse,
    extend_schema,
    extend_schema_field,
)
from rest_framework import serializers, status
from rest_framework.parsers import BaseParser
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.models import Enrollment
from authoring import services as authoring
from common.errors import InvalidInput, NotFound
from courses import roster
from courses.access import (
    module_get_reviewed,
    module_get_taught,
    modules_reviewed_by,
    modules_taught_by,
)
from courses.models import Exercise, ExerciseJob, ExerciseVersion, Module
from courses.selectors import module_objectives
from courses.services import module_export
from grader.authoring import archive, scaffold

ARCHIVE_TYPES = ("application/gzip", "application/x-gzip", "application/zip")
FORMAT_PARAMETER = OpenApiParameter(  # not `format`: DRF reads that for its renderers
    "type", OpenApiTypes.STR, enum=list(archive.FORMATS), description="default tar.gz"
)
ERRORS = {
    400: OpenApiResponse(description='Bad input, per field: {"slug": ["..."]}'),
    401: OpenApiResponse(description="Not authenticated"),
    403: OpenApiResponse(description="Not an instructor (or reviewer) of this module"),
    404: OpenApiResponse(description="No such module or exercise"),
}


# -- shapes ----------------------------------------------------------------------------


class AuthoringModuleInput(serializers.Serializer):
    slug = serializers.CharField(max_length=100)
    title = serializers.CharField(max_length=200)


class AuthoringModuleOutput(serializers.Serializer):
    slug = serializers.CharField()
    title = serializers.CharField()
    exercises = serializers.SerializerMethodField()

    def get_exercises(self, module: Module) -> str:
        return _url(self.context["request"], "api:authoring-exercises", module=module.slug)


class AuthoringExerciseInput(serializers.Serializer):
    slug = serializers.CharField(max_length=100)
    title = serializers.CharField(max_length=200, required=False, default="")
    kind = serializers.ChoiceField(
        choices=scaffold.KINDS, required=False, default="script",
        help_text="the scaffold's kind: a script, or a function with its cases.py",
    )  # fmt: skip


class AuthoringExerciseOutput(serializers.Serializer):
    slug = serializers.CharField()
    title = serializers.CharField()
    kind = serializers.CharField()
    points = serializers.IntegerField()
    published_version = serializers.IntegerField(
        source="current_version.number", allow_null=True, default=None
    )
    is_published = serializers.BooleanField(help_text="false: unpublished, hidden from learners")
    has_draft = serializers.SerializerMethodField(help_text="saved changes not yet published")
    release_at = serializers.DateTimeField(allow_null=True)
    due_at = serializers.DateTimeField(allow_null=True)
    late_counts = serializers.BooleanField()
    url = serializers.SerializerMethodField()

    def get_has_draft(self, exercise: Exercise) -> bool:
        return exercise.draft_version_id is not None

    def get_url(self, exercise: Exercise) -> str:
        return _url(
            self.context["request"], "api:authoring-draft",
            module=exercise.module.slug, slug=exercise.slug,
        )  # fmt: skip


class AuthoringJobOutput(serializers.Serializer):
    id = serializers.IntegerField()
    kind = serializers.CharField()
    status = serializers.CharField(help_text="queued | running | done | failed")
    version = serializers.CharField(source="version.label", help_text="v<n> or draft <hash>")
    content_hash = serializers.CharField(source="version.content_hash")
    outcome = serializers.JSONField(
        allow_null=True,
        help_text=(
            "done: {ok, rows: [{name, expected, got, ok}], mutants, error, problems}; "
            "running: the rows and mutants so far, with pending > 0 runs to come"
        ),
    )
    error = serializers.CharField(help_text="failed: why the job could not run")
    created_at = serializers.DateTimeField()
    finished_at = serializers.DateTimeField(allow_null=True)
    url = serializers.SerializerMethodField()

    def get_url(self, job: ExerciseJob) -> str:
        return _url(self.context["request"], "api:authoring-job", pk=job.pk)


class AuthoringDraftInput(serializers.Serializer):
    files = serializers.DictField(
        child=serializers.CharField(allow_blank=True, trim_whitespace=False),
        help_text="the whole package: {relative path: text}, as in exercises/<slug>/",
    )


class ProblemPlaceOutput(serializers.Serializer):
    file = serializers.CharField()
    line = serializers.IntegerField()
    field = serializers.CharField()


class AuthoringDraftOutput(serializers.Serializer):
    version = serializers.CharField(source="version.label")
    content_hash = serializers.CharField(source="version.content_hash")
    files = serializers.JSONField(source="version.files")
    problem = serializers.CharField(help_text="'' or the PackageError naming file and field")
    problem_place = serializers.SerializerMethodField(
        help_text="null, or where the problem points: {file, line (1-based; 0: the whole "
        "file), field (the manifest field, or '')}"
    )
    statement_html = serializers.CharField(source="version.statement_html")
    validation = serializers.SerializerMethodField()

    @extend_schema_field(ProblemPlaceOutput(allow_null=True))
    def get_problem_place(self, draft: authoring.Draft) -> dict[str, Any] | None:
        place = draft.place
        return None if place is None else dict(ProblemPlaceOutput(place).data)

    def get_validation(self, draft: authoring.Draft) -> dict[str, Any] | None:
        job = authoring.validation_latest(version=draft.version)
        if job is None:
            return None
        return dict(AuthoringJobOutput(job, context=self.context).data)


class AuthoringVersionOutput(serializers.Serializer):
    number = serializers.IntegerField()
    content_hash = serializers.CharField()
    published_at = serializers.DateTimeField(allow_null=True)


class AuthoringScheduleInput(serializers.Serializer):
    release_at = serializers.DateTimeField(allow_null=True, required=False, default=None)
    due_at = serializers.DateTimeField(allow_null=True, required=False, default=None)
    late_counts = serializers.BooleanField(required=False, default=True)


class ScheduleChangeOutput(serializers.Serializer):
    learner = serializers.CharField(source="username")
    before = serializers.FloatField(
        allow_null=True, help_text="the best score that counts now; null: none counts"
    )
    after = serializers.FloatField(
        allow_null=True, help_text="the best score that would count; null: none would"
    )
    late_submissions = serializers.IntegerField(
        source="late", help_text="their graded submissions late under the new schedule"
    )


class SchedulePreviewOutput(serializers.Serializer):
    release_at = serializers.DateTimeField(allow_null=True)
    due_at = serializers.DateTimeField(allow_null=True)
    late_counts = serializers.BooleanField()
    changes = ScheduleChangeOutput(
        many=True, help_text="the learners whose grade would change, by username"
    )


class AuthoringMemberInput(serializers.Serializer):
    username = serializers.CharField(max_length=150)
    role = serializers.ChoiceField(choices=Enrollment.Role.values)


class AuthoringFileDiffOutput(serializers.Serializer):
    path = serializers.CharField()
    status = serializers.CharField(help_text="added | removed | changed")
    diff = serializers.CharField()


class ArchiveParser(BaseParser):
    """A raw .tar.gz or .zip request body, read up to the archive cap."""

    media_type = "application/*"

    def parse(self, stream: Any, media_type: str | None = None, parser_context: Any = None) -> Any:
        limit = archive.DEFAULT_LIMITS.archive_bytes
        data = stream.read(limit + 1) if stream is not None else b""
        if len(data) > limit:
            raise InvalidInput({"archive": [f"The archive is larger than {limit} bytes."]})
        return data


def _url(request: Any, name: str, **kwargs: Any) -> str:
    return str(request.build_absolute_uri(reverse(name, kwargs=kwargs)))


def _exercise(module: Module, slug: str) -> Exercise:
    exercise = (
        Exercise.objects.filter(module=module, slug=slug)
        .select_related("module", "current_version", "draft_version")
        .first()
    )
    if exercise is None:
        raise NotFound("No such exercise in this module.")
    return exercise


def _format(request: Request) -> str:
    kind = request.query_params.get("type", archive.TAR_GZ)
    if kind not in archive.FORMATS:
        raise InvalidInput({"type": [f"One of {', '.join(archive.FORMATS)}."]})
    return kind


def _download(data: bytes, filename: str, kind: str) -> HttpResponse:
    response = HttpResponse(data, content_type=archive.CONTENT_TYPES[kind])
    response["Content-Disposition"] = f'attachment; filename="{filename}.{kind}"'
    return response


def _valid(serializer_class: type[serializers.Serializer], request: Request) -> dict[str, Any]:
    payload = serializer_class(data=request.data)
    payload.is_valid(raise_exception=True)
    return dict(payload.validated_data)


# -- modules ---------------------------------------------------------------------------------


class ModuleListApi(APIView):
    @extend_schema(responses={200: AuthoringModuleOutput(many=True), **ERRORS})
    def get(self, request: Request) -> Response:
        modules = modules_reviewed_by(user=request.user)
        return Response(
            AuthoringModuleOutput(modules, many=True, context={"request": request}).data
        )

    @extend_schema(request=AuthoringModuleInput, responses={201: AuthoringModuleOutput, **ERRORS})
    def post(self, request: Request) -> Response:
        data = _valid(AuthoringModuleInput, request)
        module = authoring.module_create(slug=data["slug"], title=data["title"], user=request.user)
        body = AuthoringModuleOutput(module, context={"request": request}).data
        return Response(body, status=status.HTTP_201_CREATED)


class ModuleArchiveApi(APIView):
    parser_classes = [ArchiveParser]

    @extend_schema(
        parameters=[FORMAT_PARAMETER],
        responses={
            (200, "application/gzip"): OpenApiTypes.BINARY,
            (200, "application/zip"): OpenApiTypes.BINARY,  # ?type=zip
            **ERRORS,
        },
        description="The module's published exercises and module.toml, as exercises/ holds them.",
    )
    def get(self, request: Request, module: str) -> HttpResponse:
        found = module_get_reviewed(slug=module, user=request.user)
        kind = _format(request)
        return _download(module_export(module=found, kind=kind), found.slug, kind)

    @extend_schema(
        parameters=[OpenApiParameter("copy", OpenApiTypes.BOOL, description="import as copies")],
        request={media: OpenApiTypes.BINARY for media in ARCHIVE_TYPES},
        responses={200: AuthoringDraftOutput(many=True), **ERRORS},
        description=(
            "Each package of a .tar.gz or .zip (the layout of exercises/) becomes a draft of "
            "its exercise in this module; nothing is published. With ?copy=1 each is a new "
            "exercise <slug>-<module> (a copy of another module's). A refused archive is a 400 "
            'naming the entry: {"archive": ["..."]}.'
        ),
    )
    def post(self, request: Request, module: str) -> Response:
        found = module_get_taught(slug=module, user=request.user)
        data = request.data if isinstance(request.data, bytes) else b""
        try:
            drafts = authoring.module_archive_upload(
                module=found, data=data, name="upload", user=request.user,
                copy=request.query_params.get("copy") in ("1", "true"),
            )  # fmt: skip
        except archive.spec.PackageError as error:
            raise InvalidInput({"archive": [str(error)]}) from None
        return Response(AuthoringDraftOutput(drafts, many=True, context={"request": request}).data)


class MemberApi(APIView):
    @extend_schema(request=AuthoringMemberInput, responses={204: None, **ERRORS})
    def post(self, request: Request, module: str) -> Response:
        found = module_get_taught(slug=module, user=request.user)
        data = _valid(AuthoringMemberInput, request)
        roster.module_member_set(module=found, username=data["username"], role=data["role"])
        return Response(status=status.HTTP_204_NO_CONTENT)


class ObjectiveShape(serializers.Serializer):
    id = serializers.CharField(max_length=100, help_text="a slug, unique in the module")
    title = serializers.CharField(max_length=300)


class ObjectivesShape(serializers.Serializer):
    objectives = ObjectiveShape(many=True, help_text="in order; checks name them by id")


class ObjectivesApi(APIView):
    """The module's learning objectives (module.toml's [[objectives]])."""

    @extend_schema(responses={200: ObjectivesShape, **ERRORS})
    def get(self, request: Request, module: str) -> Response:
        found = module_get_reviewed(slug=module, user=request.user)
        return Response(ObjectivesShape({"objectives": module_objectives(found)}).data)

    @extend_schema(
        request=ObjectivesShape,
        responses={200: ObjectivesShape, **ERRORS},
        description=(
            "Replaces the objectives (ids unique slugs, titles non-empty). An objective still "
            'named by a check of a draft or published version is kept: 400 {"objectives": '
            '["..."]} naming the exercise.'
        ),
    )
    def put(self, request: Request, module: str) -> Response:
        found = module_get_taught(slug=module, user=request.user)
        data = _valid(ObjectivesShape, request)
        authoring.module_objectives_set(
            module=found, objectives=[dict(item) for item in data["objectives"]]
        )
        return Response(ObjectivesShape({"objectives": module_objectives(found)}).data)


# -- exercises ---------------------------------------------------------------------------


class ExerciseListApi(APIView):
    @extend_schema(responses={200: AuthoringExerciseOutput(many=True), **ERRORS})
    def get(self, request: Request, module: str) -> Response:
        found = module_get_reviewed(slug=module, user=request.user)
        exercises = found.exercises.select_related("module", "current_version").order_by(
            "order", "slug"
        )
        return Response(
            AuthoringExerciseOutput(exercises, many=True, context={"request": request}).data
        )

    @extend_schema(
        request=AuthoringExerciseInput,
        responses={201: AuthoringDraftOutput, **ERRORS},
        description="A new exercise whose first draft is a package that validates.",
    )
    def post(self, request: Request, module: str) -> Response:
        found = module_get_taught(slug=module, user=request.user)
        data = _valid(AuthoringExerciseInput, request)
        draft = authoring.exercise_create(
            module=found, slug=data["slug"], title=data["title"], kind=data["kind"],
            user=request.user,
        )  # fmt: skip
        body = AuthoringDraftOutput(draft, context={"request": request}).data
        return Response(body, status=status.HTTP_201_CREATED)


class DraftApi(APIView):
    @extend_schema(responses={200: AuthoringDraftOutput, **ERRORS})
    def get(self, request: Request, module: str, slug: str) -> Response:
        exercise = _exercise(module_get_reviewed(slug=module, user=request.user), slug)
        draft = authoring.draft_get(exercise=exercise)
        return Response(AuthoringDraftOutput(draft, context={"request": request}).data)

    @extend_schema(
        request=AuthoringDraftInput,
        responses={200: AuthoringDraftOutput, **ERRORS},
        description="Saves the whole package as the draft, valid or not (see `problem`).",
    )
    def put(self, request: Request, module: str, slug: str) -> Response:
        exercise = _exercise(module_get_taught(slug=module, user=request.user), slug)
        data = _valid(AuthoringDraftInput, request)
        try:
            draft = authoring.draft_save(exercise=exercise, files=data["files"], user=request.user)
        except archive.ArchiveError as error:
            raise InvalidInput({"files": [str(error)]}) from None
        return Response(AuthoringDraftOutput(draft, context={"request": request}).data)


class DraftArchiveApi(APIView):
    @extend_schema(
        parameters=[FORMAT_PARAMETER],
        responses={
            (200, "application/gzip"): OpenApiTypes.BINARY,
            (200, "application/zip"): OpenApiTypes.BINARY,  # ?type=zip
            **ERRORS,
        },
        description="The draft (else the published version) as <slug>/... in an archive.",
    )
    def get(self, request: Request, module: str, slug: str) -> HttpResponse:
        exercise = _exercise(module_get_reviewed(slug=module, user=request.user), slug)
        kind = _format(request)
        return _download(authoring.draft_export(exercise=exercise, kind=kind), slug, kind)


class ValidateApi(APIView):
    @extend_schema(
        request=None,
        responses={202: AuthoringJobOutput, **ERRORS},
        description="Starts the draft's validation on a worker; poll the job's url.",
    )
    def post(self, request: Request, module: str, slug: str) -> Response:
        exercise = _exercise(module_get_reviewed(slug=module, user=request.user), slug)
        job = authoring.draft_validate(exercise=exercise, user=request.user)
        job = ExerciseJob.objects.select_related("version").get(pk=job.pk)
        body = AuthoringJobOutput(job, context={"request": request}).data
        return Response(body, status=status.HTTP_202_ACCEPTED, headers={"Location": body["url"]})


# Jobs whose outcome holds learners' scores (a regrade's old and new score per learner):
# a module's instructors read them, its reviewers (who see no grades anywhere) do not.
GRADE_JOBS = (ExerciseJob.Kind.REGRADE, ExerciseJob.Kind.REGRADE_PREVIEW)


def _job_readable_by(user: Any, pk: int) -> ExerciseJob | None:
    """The job `pk` if `user` may read it: validations for the module's reviewers and
    instructors, regrades for its instructors only; None otherwise (one 404 for both)."""
    jobs = ExerciseJob.objects.select_related("version", "exercise__module").filter(pk=pk)
    reviewed = Q(exercise__module__in=modules_reviewed_by(user=user)) & ~Q(kind__in=GRADE_JOBS)
    taught = Q(exercise__module__in=modules_taught_by(user=user))
    return jobs.filter(reviewed | taught).first()


class JobApi(APIView):
    @extend_schema(responses={200: AuthoringJobOutput, **ERRORS})
    def get(self, request: Request, pk: int) -> Response:
        found = _job_readable_by(request.user, pk)
        if found is None:
            raise NotFound("No such job.")
        return Response(AuthoringJobOutput(found, context={"request": request}).data)


class PublishApi(APIView):
    @extend_schema(
        request=None,
        responses={
            200: AuthoringVersionOutput,
            409: OpenApiResponse(description="Not validated, validation running or failed"),
            **ERRORS,
        },
    )
    def post(self, request: Request, module: str, slug: str) -> Response:
        exercise = _exercise(module_get_taught(slug=module, user=request.user), slug)
        version: ExerciseVersion = authoring.exercise_publish(exercise=exercise)
        return Response(AuthoringVersionOutput(version).data)


class UnpublishApi(APIView):
    @extend_schema(request=None, responses={204: None, **ERRORS})
    def post(self, request: Request, module: str, slug: str) -> Response:
        exercise = _exercise(module_get_taught(slug=module, user=request.user), slug)
        authoring.exercise_unpublish(exercise=exercise)
        return Response(status=status.HTTP_204_NO_CONTENT)


class ScheduleApi(APIView):
    @extend_schema(
        request=AuthoringScheduleInput,
        responses={200: AuthoringExerciseOutput, **ERRORS},
        description=(
            "Sets the release date, the due date and whether late submissions count (a "
            "field left out is null, or true for late_counts). Every submission is marked "
            "late or not again, and the grades this changes are posted to the LMS again. "
            "POST schedule/preview/ with the same body first says whose grades change."
        ),
    )
    def put(self, request: Request, module: str, slug: str) -> Response:
        exercise = _exercise(module_get_taught(slug=module, user=request.user), slug)
        data = _valid(AuthoringScheduleInput, request)
        authoring.exercise_schedule_set(exercise=exercise, **data)
        return Response(AuthoringExerciseOutput(exercise, context={"request": request}).data)


class SchedulePreviewApi(APIView):
    @extend_schema(
        request=AuthoringScheduleInput,
        responses={200: SchedulePreviewOutput, **ERRORS},
        description=(
            "A dry run of PUT schedule/ with the same body: nothing changes. Lists the "
            "learners whose grade (their best score that counts) the new due date or late "
            "policy would change, from what to what; extensions stay as they are."
        ),
    )
    def post(self, request: Request, module: str, slug: str) -> Response:
        exercise = _exercise(module_get_taught(slug=module, user=request.user), slug)
        data = _valid(AuthoringScheduleInput, request)
        changes = authoring.exercise_schedule_preview(exercise=exercise, **data)
        return Response(SchedulePreviewOutput({**data, "changes": changes}).data)


class DiffApi(APIView):
    @extend_schema(
        parameters=[
            OpenApiParameter("from", OpenApiTypes.STR, description="a number, current or draft"),
            OpenApiParameter("to", OpenApiTypes.STR, description="default: draft"),
        ],
        responses={200: AuthoringFileDiffOutput(many=True), **ERRORS},
    )
    def get(self, request: Request, module: str, slug: str) -> Response:
        exercise = _exercise(module_get_reviewed(slug=module, user=request.user), slug)
        old = authoring.version_get(
            exercise=exercise, label=request.query_params.get("from", "current")
        )
        new = authoring.version_get(
            exercise=exercise, label=request.query_params.get("to", "draft")
        )
        return Response(AuthoringFileDiffOutput(authoring.versions_diff(old, new), many=True).data)
