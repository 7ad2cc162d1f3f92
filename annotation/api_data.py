"""REST endpoints for a study's data, as the Python client (clients/python) reads it: live exports,
the report as JSON, comparative answers, releases; and rubric files (YAML or JSON) as uploaded.

Readers of the study (admins and its researchers) only; anyone else gets 404, as on the pages.
"""

from __future__ import annotations

from django.http import FileResponse, HttpResponse, StreamingHttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import permissions, serializers
from rest_framework.decorators import api_view, parser_classes, permission_classes
from rest_framework.exceptions import ValidationError
from rest_framework.parsers import MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response

from annotation.access import get_study_for_reader, is_admin
from annotation.audit import audit_download
from annotation.datasets import DEFAULT_DELTA, FORMATS, export_chunks, export_filename
from annotation.datasets.card import LICENSES
from annotation.datasets.quotas import export_quota_check
from annotation.datasets.releases import ReleaseError, releases_create, study_releases
from annotation.datasets.views import release_file_response
from annotation.models import DatasetRelease
from annotation.reports.pending import ReportFailed, ReportPending
from annotation.reports.views import report_not_ready
from annotation.serializers import RubricVersionSerializer
from config.parsers import ApiNumberField
from rubrics.loader import RubricError, parse_rubric_text
from config.limits import QuotaExceeded, upload_validator
from rubrics.services import rubric_version_create

PARQUET = "application/vnd.apache.parquet"


class ReleaseSerializer(serializers.ModelSerializer):
    class Meta:
        model = DatasetRelease
        fields = ["id", "version", "format", "status", "progress", "error", "sha256", "size", "license", "changelog",
                  "created_at", "finished_at"]
        read_only_fields = fields


class ReleaseCreateSerializer(serializers.Serializer):
    version = serializers.CharField(max_length=64)
    formats = serializers.ListField(child=serializers.ChoiceField(choices=list(FORMATS)), min_length=1)
    changelog = serializers.CharField(required=False, allow_blank=True, default="")
    delta = ApiNumberField(required=False, min_value=0.01, default=DEFAULT_DELTA)
    license = serializers.ChoiceField(choices=list(LICENSES), required=False, default="", allow_blank=True,
                                      help_text="Required with the hf format: the dataset card states it.")


class RubricFileSerializer(serializers.Serializer):
    file = serializers.FileField(validators=[upload_validator("upload.rubric", name="rubric file")])


def _rubric_refused(errors) -> Response:
    return Response({"detail": "invalid rubric", "errors": [{"field": p, "message": m} for p, m in errors]},
                    status=400)


@extend_schema(
    parameters=[OpenApiParameter("file", str, enum=list(FORMATS), required=True,
                                 description="csv, jsonl, parquet (ratings), pairs, consensus")],
    responses={(200, f.content_type.split(";")[0]): OpenApiTypes.BINARY for f in FORMATS.values()})
@api_view(["GET"])
@permission_classes([permissions.IsAuthenticated])
def study_export(request: Request, slug: str) -> StreamingHttpResponse:
    """A live export of the study (`?file=csv|jsonl|parquet|pairs|consensus`), streamed."""
    study = get_study_for_reader(request.user, slug)
    fmt = request.query_params.get("file", "")
    if fmt not in FORMATS:
        raise ValidationError({"file": f"{fmt!r} is not an export; choose one of {', '.join(FORMATS)}"})
    try:
        export_quota_check(study)
    except QuotaExceeded as exc:
        return Response({"detail": str(exc), "limit": exc.key}, status=429)
    audit_download(actor=request.user, study=study, target=export_filename(study, fmt), query=request.query_params,
                   format=fmt, live=True, api=True)
    response = StreamingHttpResponse(export_chunks(study, fmt, delta=DEFAULT_DELTA),
                                     content_type=FORMATS[fmt].content_type)
    response["Content-Disposition"] = f'attachment; filename="{export_filename(study, fmt)}"'
    return response


@extend_schema(responses={200: OpenApiTypes.OBJECT, 202: OpenApiTypes.STR})
@api_view(["GET"])
@permission_classes([permissions.IsAuthenticated])
def study_report_json(request: Request, slug: str) -> HttpResponse:
    """The study report as JSON: the bytes of the report page's JSON download. A large study's report
    is computed by a worker: 202 with Retry-After until it is ready (a report computed before, while
    a newer one is computed, comes with `"out_of_date": true`)."""
    from annotation.reports.downloads import report_bytes  # here: pandas, scipy, matplotlib

    study = get_study_for_reader(request.user, slug)
    try:
        body = report_bytes(study, "json", web=True)
    except (ReportPending, ReportFailed) as exc:
        return report_not_ready(exc)
    audit_download(actor=request.user, study=study, target=f"{study.slug}-report.json", query=request.query_params,
                   format="json", api=True)
    return HttpResponse(body, content_type="application/json")


@extend_schema(responses={(200, PARQUET): OpenApiTypes.BINARY})
@api_view(["GET"])
@permission_classes([permissions.IsAuthenticated])
def study_comparisons(request: Request, slug: str) -> HttpResponse:
    """Every comparative answer of the study's raters as Parquet (systems by name, in the order shown)."""
    from annotation.comparison_table import comparisons_parquet  # here: pyarrow, the comparison statistics

    study = get_study_for_reader(request.user, slug)
    response = HttpResponse(comparisons_parquet(study), content_type=PARQUET)
    audit_download(actor=request.user, study=study, target=f"{study.slug}-comparisons.parquet",
                   query=request.query_params, format="parquet", api=True)
    response["Content-Disposition"] = f'attachment; filename="{study.slug}-comparisons.parquet"'
    return response


@extend_schema(methods=["GET"], responses=ReleaseSerializer(many=True))
@extend_schema(methods=["POST"], request=ReleaseCreateSerializer, responses={201: ReleaseSerializer(many=True)})
@api_view(["GET", "POST"])
@permission_classes([permissions.IsAuthenticated])
def study_releases_view(request: Request, slug: str) -> Response:
    """The study's releases (GET), or queue a new version in some formats (POST; built by a worker)."""
    study = get_study_for_reader(request.user, slug)
    if request.method == "GET":
        return Response(ReleaseSerializer(study_releases(study), many=True).data)
    body = ReleaseCreateSerializer(data=request.data)
    body.is_valid(raise_exception=True)
    try:
        made = releases_create(study=study, user=request.user, **body.validated_data)
    except ReleaseError as exc:
        return Response({"detail": str(exc)}, status=400)
    except QuotaExceeded as exc:
        return Response({"detail": str(exc), "limit": exc.key}, status=429)
    return Response(ReleaseSerializer(made, many=True).data, status=201)


@extend_schema(responses={200: OpenApiTypes.BINARY})
@api_view(["GET"])
@permission_classes([permissions.IsAuthenticated])
def release_file(request: Request, slug: str, pk: int) -> FileResponse:
    """A ready release's file, its SHA-256 in `X-Checksum-SHA256` and `Digest`."""
    study = get_study_for_reader(request.user, slug)
    return release_file_response(study, pk, actor=request.user)


@extend_schema(request={"multipart/form-data": RubricFileSerializer}, responses=RubricVersionSerializer)
@api_view(["POST"])
@parser_classes([MultiPartParser])
@permission_classes([permissions.IsAuthenticated])
def rubric_file(request: Request) -> Response:
    """Add a rubric (or its next version) from a YAML or JSON file, as `manage.py load_rubric` does (admins)."""
    if not is_admin(request.user):
        return Response({"detail": "only admins add rubrics"}, status=403)
    body = RubricFileSerializer(data=request.data)
    body.is_valid(raise_exception=True)
    file = body.validated_data["file"]
    try:
        data = parse_rubric_text(file.read().decode("utf-8"), filename=file.name)
        if not isinstance(data, dict):
            raise RubricError([("", "a rubric file holds one mapping (name, slug, criteria…)")])
        version, created = rubric_version_create(data=data, user=request.user)
    except RubricError as exc:
        return _rubric_refused(exc.errors)
    except UnicodeDecodeError:
        return Response({"detail": "the file is not UTF-8 text"}, status=400)
    return Response(RubricVersionSerializer(version).data, status=201 if created else 200)
