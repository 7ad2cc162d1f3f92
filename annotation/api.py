"""REST API for the admin side: rubrics, studies, item upload, members, progress.

Admins (is_staff) write; researchers of a study may read it and its progress;
annotators use the workspace endpoints only.
"""

from __future__ import annotations

from django.db.models import Q
from drf_spectacular.utils import extend_schema
from rest_framework import mixins, permissions, status, viewsets
from rest_framework.decorators import action
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.response import Response

from config.parsers import BoundedJSONParser
from annotation import selectors
from annotation.access import Can, can, is_admin, may_read_api_docs, studies_where
from annotation.importers import ItemFileError
from annotation.models import Study
from annotation.serializers import (
    ItemUploadSerializer,
    MembersSerializer,
    ProgressSerializer,
    RubricVersionSerializer,
    StudySerializer,
    StudyStatusSerializer,
)
from annotation.traces.imports import file_import
from annotation.services.studies import StudyError, study_create, study_members_add, study_set_status
from rubrics.loader import RubricError
from rubrics.models import RubricVersion
from rubrics.services import rubric_version_create


PARSERS = [BoundedJSONParser, FormParser, MultiPartParser]


class IsSiteAdmin(permissions.BasePermission):
    def has_permission(self, request, view) -> bool:
        return is_admin(request.user)


class MayReadApiDocs(permissions.BasePermission):
    """The API's schema and docs page (settings.SPECTACULAR_SETTINGS): signed-in staff and study
    members, not crowd participants (annotation.access.may_read_api_docs)."""

    def has_permission(self, request, view) -> bool:
        return may_read_api_docs(request.user)


class ReadOnly(permissions.BasePermission):
    def has_permission(self, request, view) -> bool:
        return request.method in permissions.SAFE_METHODS


class StudyPermission(permissions.BasePermission):
    """The access model's capability the view names for its action (`capability`): reading a study
    and its progress, managing it (items, members, status)."""

    def has_object_permission(self, request, view, obj: Study) -> bool:
        return can(request.user, obj, view.capability)


class RubricViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, mixins.CreateModelMixin,
                    viewsets.GenericViewSet):
    """Rubric versions. POST a rubric definition (JSON body) to add a rubric or its next version."""

    serializer_class = RubricVersionSerializer
    parser_classes = PARSERS
    permission_classes = [permissions.IsAuthenticated & (IsSiteAdmin | ReadOnly)]
    queryset = RubricVersion.objects.select_related("rubric").order_by("rubric__slug", "-version")

    def get_queryset(self):
        if is_admin(self.request.user):
            return self.queryset
        # The rubrics of the studies the user reads or rates (annotation.access).
        user = self.request.user
        visible = Study.objects.filter(Q(pk__in=studies_where(user, Can.READ).values("pk"))
                                       | Q(pk__in=studies_where(user, Can.RATE).values("pk")))
        return self.queryset.filter(pk__in=visible.values("rubric_version"))

    @extend_schema(request={"application/json": {"type": "object"}}, responses=RubricVersionSerializer)
    def create(self, request, *args, **kwargs):
        if not isinstance(request.data, dict):
            return Response({"detail": "send the rubric as a JSON object"}, status=400)
        try:
            version, created = rubric_version_create(data=dict(request.data), user=request.user)
        except RubricError as exc:
            return Response({"detail": "invalid rubric", "errors": [{"field": p, "message": m} for p, m in exc.errors]},
                            status=status.HTTP_400_BAD_REQUEST)
        return Response(RubricVersionSerializer(version).data, status=201 if created else 200)


class StudyViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, mixins.CreateModelMixin,
                   viewsets.GenericViewSet):
    serializer_class = StudySerializer
    queryset = Study.objects.all()  # for the schema's parameter types; requests go through get_queryset
    lookup_field = "slug"
    parser_classes = PARSERS

    @property
    def capability(self) -> Can:
        return Can.READ if self.action in {"list", "retrieve", "progress"} else Can.MANAGE

    def get_permissions(self):
        if self.action == "create":
            return [permissions.IsAuthenticated(), IsSiteAdmin()]
        return [permissions.IsAuthenticated(), StudyPermission()]

    def get_queryset(self):
        # Reading: the studies the user reads, others are a 404 (slugs stay unknown). Writing: 403 on
        # a study the user may not manage, as the manage pages answer (StudyPermission decides).
        studies = Study.objects if self.capability == Can.MANAGE else studies_where(self.request.user, Can.READ)
        return studies.select_related("rubric_version")

    def perform_create(self, serializer):
        data = dict(serializer.validated_data)
        try:
            serializer.instance = study_create(user=self.request.user, **data)
        except StudyError as exc:
            from rest_framework.exceptions import ValidationError

            raise ValidationError({"detail": str(exc)}) from exc

    @extend_schema(request=ItemUploadSerializer, responses={201: {"type": "object"}})
    @action(detail=True, methods=["post"], parser_classes=[MultiPartParser])
    def items(self, request, slug=None, **kwargs):  # kwargs: `format` from a .json suffix
        """Upload items (JSONL or CSV), all or nothing."""
        study = self.get_object()
        upload = ItemUploadSerializer(data=request.data)
        upload.is_valid(raise_exception=True)
        file = upload.validated_data["file"]
        try:
            count = file_import(study=study, file=file, filename=file.name)
        except ItemFileError as exc:
            return Response({"detail": "file refused; nothing was imported",
                             "errors": [{"line": line, "field": f, "message": m} for line, f, m in exc.errors]},
                            status=400)
        except UnicodeDecodeError:
            return Response({"detail": "the file is not UTF-8 text; nothing was imported"}, status=400)
        return Response({"imported": count}, status=201)

    @extend_schema(request=MembersSerializer, responses={200: {"type": "object"}})
    @action(detail=True, methods=["post"])
    def members(self, request, slug=None, **kwargs):  # kwargs: `format` from a .json suffix
        study = self.get_object()
        body = MembersSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        try:
            added = study_members_add(study=study, user=request.user, **body.validated_data)
        except StudyError as exc:
            return Response({"detail": str(exc)}, status=400)
        return Response({"added": [m.user.username for m in added]})

    @extend_schema(request=StudyStatusSerializer, responses=StudySerializer)
    @action(detail=True, methods=["post"])
    def status(self, request, slug=None, **kwargs):  # kwargs: `format` from a .json suffix
        study = self.get_object()
        body = StudyStatusSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        try:
            study_set_status(study=study, status=body.validated_data["status"], user=request.user)
        except StudyError as exc:
            return Response({"detail": str(exc)}, status=400)
        return Response(StudySerializer(study).data)

    @extend_schema(responses=ProgressSerializer)
    @action(detail=True, methods=["get"])
    def progress(self, request, slug=None, **kwargs):  # kwargs: `format` from a .json suffix
        progress = selectors.study_progress(self.get_object())
        return Response(ProgressSerializer({**progress.__dict__, "percent": progress.percent}).data)


# ---------------------------------------------------------------- schema

ERROR_RESPONSES = {
    "400": "The request was refused: `detail` says why; upload and validation errors list line/field in `errors`.",
    "403": "Not signed in, or not allowed to do this.",
    "404": "No such object, or one this user may not see; also a page number beyond the last page.",
    "409": "The object's state does not allow this now (e.g. resuming a finished run).",
}
# Only where a body is read: DRF answers 415 when the body's Content-Type is missing or none of its parsers'.
BODY_ERROR_RESPONSES = {"415": "The body's Content-Type is missing or not JSON, a form or multipart."}


def document_error_responses(result: dict, generator, request, public) -> dict:
    """drf-spectacular postprocessing hook: every operation may answer 400, 403, 404 or 409 (and one
    that reads a body, 415) with a JSON body (`{"detail": ...}` or DRF's `{field: [messages]}`), so clients and
    schema checks expect them."""
    schemas = result.setdefault("components", {}).setdefault("schemas", {})
    schemas["Error"] = {
        "type": "object",
        "properties": {
            "detail": {"type": "string"},
            # uploads: a list of {line, field, message}; answers: {field: message}
            "errors": {"description": "What was wrong, by line and field or by field."},
        },
        "additionalProperties": True,
    }
    body = {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}
    for path_item in result.get("paths", {}).values():
        for operation in path_item.values():
            errors = {**ERROR_RESPONSES, **(BODY_ERROR_RESPONSES if "requestBody" in operation else {})}
            for code, description in errors.items():
                operation.setdefault("responses", {}).setdefault(code, {"description": description, "content": body})
    return result
