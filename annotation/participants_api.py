"""REST API for a participant's data (site admins only): download, erase; and the audit log.

    GET  /api/studies/<slug>/participants/<user_id>/data/      JSON (data.csv: CSV)
    POST /api/studies/<slug>/participants/<user_id>/erase/     {"mode": "delete" | "pseudonymise"}
    GET  /api/audit/?study=<slug>&action=<action>              newest first, at most 200
"""

from __future__ import annotations

from django.shortcuts import get_object_or_404
from django.urls import path
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import permissions, serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation.access import get_study_for_participants
from annotation.api import PARSERS, IsSiteAdmin
from annotation.audit import audit_entries
from annotation.models import AuditEntry, ParticipantErasure, Study
from annotation.services.participant_data import ParticipantError, participant_erase
from annotation.views.participants import participant_download

ADMINS = [permissions.IsAuthenticated & IsSiteAdmin]  # then the study: annotation.access.get_study_for_participants


class EraseSerializer(serializers.Serializer):
    mode = serializers.ChoiceField(choices=ParticipantErasure.Mode.choices)


class ErasureSerializer(serializers.ModelSerializer):
    class Meta:
        model = ParticipantErasure
        fields = ["pseudonym", "mode", "by_name", "at", "assignments", "ratings", "releases"]


class AuditEntrySerializer(serializers.ModelSerializer):
    study = serializers.SlugRelatedField(slug_field="slug", read_only=True, allow_null=True)  # null: site-wide

    class Meta:
        model = AuditEntry
        fields = ["at", "actor_name", "action", "study", "target", "detail"]


class ParticipantDataView(APIView):
    """Everything the participant gave the study (ratings, times, training, phases, crowd entries)."""

    permission_classes = ADMINS
    fmt = "json"

    @extend_schema(responses={200: {"type": "object"}})
    def get(self, request, slug: str, user_id: int):
        study = get_study_for_participants(request.user, slug)
        return participant_download(study=study, user_id=user_id, fmt=self.fmt, actor=request.user)


class ParticipantDataCsvView(ParticipantDataView):
    """The same, one row per rating."""

    fmt = "csv"

    @extend_schema(responses={(200, "text/csv"): OpenApiTypes.STR})
    def get(self, request, slug: str, user_id: int):
        return super().get(request, slug, user_id)


class ParticipantEraseView(APIView):
    """Erase the participant's data from the study: delete their ratings, or keep them under a random id."""

    permission_classes = ADMINS
    parser_classes = PARSERS  # a form body too: CSRF's check reads request.POST before the view runs

    @extend_schema(request=EraseSerializer, responses=ErasureSerializer)
    def post(self, request, slug: str, user_id: int):
        study = get_study_for_participants(request.user, slug)
        body = EraseSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        try:
            erasure = participant_erase(study=study, user_id=user_id, mode=body.validated_data["mode"],
                                        by=request.user)
        except ParticipantError as exc:
            return Response({"detail": str(exc)}, status=404 if exc.field == "user" else 400)
        return Response(ErasureSerializer(erasure).data)


class AuditLogView(APIView):
    permission_classes = ADMINS

    @extend_schema(parameters=[OpenApiParameter("study", str), OpenApiParameter("action", str)],
                   responses=AuditEntrySerializer(many=True))
    def get(self, request):
        study = get_object_or_404(Study, slug=request.query_params["study"]) if request.query_params.get("study") \
            else None
        entries = audit_entries(study=study, action=request.query_params.get("action", ""))
        return Response(AuditEntrySerializer(entries, many=True).data)


urlpatterns = [
    path("studies/<slug:slug>/participants/<int:user_id>/data/", ParticipantDataView.as_view(),
         name="api-participant-data"),
    path("studies/<slug:slug>/participants/<int:user_id>/data.csv", ParticipantDataCsvView.as_view(),
         name="api-participant-data-csv"),
    path("studies/<slug:slug>/participants/<int:user_id>/erase/", ParticipantEraseView.as_view(),
         name="api-participant-erase"),
    path("audit/", AuditLogView.as_view(), name="api-audit-log"),
]
