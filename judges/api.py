"""REST API of the judges: configurations (admins), runs and their scores (admins; a study's
researchers read). Annotators and outsiders see no run: 404, as on the pages."""

from __future__ import annotations

from django.http import Http404, HttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import mixins, permissions, serializers, status, viewsets
from rest_framework.decorators import action, api_view, permission_classes
from rest_framework.response import Response

from annotation.access import Can, get_study_for_reader, is_admin, studies_where
from annotation.models import Study
from config.parsers import ApiNumberField
from judges.config import JudgeConfigError, validate_judge
from judges.masking import mask_judge
from judges.models import JudgeConfig, JudgeRun, JudgeScore
from judges.selectors import run_progress
from judges.services.budget import BudgetError, judge_run_set_cap
from judges.services.runs import JudgeRunError, judge_run_cancel, judge_run_resume, judge_run_start


class IsSiteAdmin(permissions.BasePermission):
    def has_permission(self, request, view) -> bool:
        return is_admin(request.user)


class JudgeConfigSerializer(serializers.ModelSerializer):
    class Meta:
        model = JudgeConfig
        exclude = ["id"]

    def to_representation(self, judge: JudgeConfig) -> dict:
        return mask_judge(super().to_representation(judge))  # admins too: keys never leave the workers


class JudgeRunSerializer(serializers.ModelSerializer):
    study = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    # Null once the judge configuration is deleted; the run keeps its config snapshot.
    judge = serializers.SlugRelatedField(slug_field="name", read_only=True, allow_null=True)
    progress = serializers.SerializerMethodField()
    config = serializers.SerializerMethodField(help_text="The judge's settings when the run started, secrets masked.")
    error = serializers.CharField(source="error_shown", read_only=True)
    status_label = serializers.CharField(source="get_status_display", read_only=True,
                                         help_text="The status in words, as the run list shows it.")

    class Meta:
        model = JudgeRun
        fields = ["id", "study", "judge", "status", "status_label", "criteria", "n_outputs", "n_expected", "n_scored", "n_unparsed",
                  "n_refusal", "n_error", "n_truncated", "tokens_in", "tokens_out", "cost_usd", "error", "created_at",
                  "started_at", "finished_at", "config", "progress", "cost_cap_usd", "pause_reason",
                  "n_rate_limited", "estimate", "reused_from", "n_reused"]

    def get_progress(self, run: JudgeRun) -> dict:
        return run_progress(run).as_dict()

    def get_config(self, run: JudgeRun) -> dict:
        return mask_judge(run.config)


class RunStartSerializer(serializers.Serializer):
    study = serializers.SlugField()
    judge = serializers.CharField()
    max_cost_usd = ApiNumberField(required=False, allow_null=True, min_value=0.000001)


class RunCapSerializer(serializers.Serializer):
    max_cost_usd = ApiNumberField(allow_null=True, min_value=0.000001,
                                          help_text="The run's new cap in USD (null: no cap); a paused run resumes.")


class JudgeScoreSerializer(serializers.ModelSerializer):
    item = serializers.CharField(source="item.external_id")
    output = serializers.IntegerField(source="output.position", allow_null=True, default=None)
    system = serializers.CharField(source="output.system", allow_null=True, default=None)

    class Meta:
        model = JudgeScore
        fields = ["item", "output", "system", "criterion", "value", "score", "status", "raw_text", "reasoning",
                  "tokens_in", "tokens_out", "cost_usd", "doubt", "detail"]


class JudgeConfigViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, mixins.CreateModelMixin,
                         viewsets.GenericViewSet):
    """Judge configurations. POST the same fields as a YAML file (validated whole); a name that exists is updated."""

    serializer_class = JudgeConfigSerializer
    permission_classes = [permissions.IsAuthenticated & IsSiteAdmin]
    queryset = JudgeConfig.objects.all()
    lookup_field = "name"

    @extend_schema(request={"application/json": {"type": "object"}}, responses=JudgeConfigSerializer)
    def create(self, request, *args, **kwargs):
        if not isinstance(request.data, dict):
            return Response({"detail": "send the judge as a JSON object"}, status=400)
        try:
            clean = validate_judge(dict(request.data))
        except JudgeConfigError as exc:
            return Response({"detail": "invalid judge", "errors": [{"field": p, "message": m} for p, m in exc.errors]},
                            status=400)
        name = clean.pop("name")
        judge, created = JudgeConfig.objects.update_or_create(name=name, defaults=clean)
        return Response(JudgeConfigSerializer(judge).data, status=201 if created else 200)


class JudgeRunViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    """Judge runs with live progress. Filter by `?study=SLUG`. POST {study, judge} starts a run (admins)."""

    serializer_class = JudgeRunSerializer
    queryset = JudgeRun.objects.all()  # for the schema; get_queryset narrows it per user

    def get_queryset(self):
        qs = JudgeRun.objects.select_related("study", "judge").order_by("-created_at")
        user = self.request.user
        if not is_admin(user):  # the runs of the studies the user reads (annotation.access)
            qs = qs.filter(study__in=studies_where(user, Can.READ))
        if self.request.query_params.get("study"):
            qs = qs.filter(study__slug=self.request.query_params["study"])
        return qs

    def _writable(self, request, run: JudgeRun) -> None:
        if not is_admin(request.user):
            raise Http404

    @extend_schema(request=RunStartSerializer, responses={201: JudgeRunSerializer})
    def create(self, request, *args, **kwargs):
        if not is_admin(request.user):
            return Response({"detail": "Not found."}, status=404)
        ser = RunStartSerializer(data=request.data)
        ser.is_valid(raise_exception=True)
        study = Study.objects.select_related("rubric_version").filter(slug=ser.validated_data["study"]).first()
        judge = JudgeConfig.objects.filter(name=ser.validated_data["judge"]).first()
        if study is None or judge is None:
            return Response({"detail": "no such study" if study is None else "no such judge"}, status=400)
        try:
            run = judge_run_start(study=study, judge=judge, user=request.user,
                                  max_cost_usd=ser.validated_data.get("max_cost_usd"))
        except JudgeRunError as exc:
            return Response({"detail": str(exc)}, status=409)
        return Response(JudgeRunSerializer(run).data, status=status.HTTP_201_CREATED)

    @extend_schema(request=RunCapSerializer, responses=JudgeRunSerializer)
    @action(detail=True, methods=["post"])
    def cap(self, request, pk=None, **kwargs):
        run = self.get_object()
        self._writable(request, run)
        ser = RunCapSerializer(data=request.data)
        ser.is_valid(raise_exception=True)
        try:
            run = judge_run_set_cap(run=run, max_cost_usd=ser.validated_data["max_cost_usd"])
        except BudgetError as exc:
            return Response({"detail": str(exc)}, status=400)
        return Response(JudgeRunSerializer(run).data)

    @extend_schema(request=None, responses=JudgeRunSerializer)
    @action(detail=True, methods=["post"])
    def cancel(self, request, pk=None, **kwargs):
        run = self.get_object()
        self._writable(request, run)
        return Response(JudgeRunSerializer(judge_run_cancel(run=run)).data)

    @extend_schema(request=None, responses=JudgeRunSerializer)
    @action(detail=True, methods=["post"])
    def resume(self, request, pk=None, **kwargs):
        run = self.get_object()
        self._writable(request, run)
        try:
            run = judge_run_resume(run=run)
        except JudgeRunError as exc:
            return Response({"detail": str(exc)}, status=409)
        return Response(JudgeRunSerializer(run).data)

    @extend_schema(responses=JudgeScoreSerializer(many=True))
    @action(detail=True, methods=["get"])
    def scores(self, request, pk=None, **kwargs):
        run = self.get_object()
        qs = (JudgeScore.objects.filter(run=run).select_related("item", "output")
              .order_by("item_id", "output__position", "criterion"))
        if request.query_params.get("status"):
            qs = qs.filter(status=request.query_params["status"])
        page = self.paginate_queryset(qs)
        return self.get_paginated_response(JudgeScoreSerializer(page, many=True).data)


@extend_schema(responses={(200, "application/vnd.apache.parquet"): OpenApiTypes.BINARY})
@api_view(["GET"])
@permission_classes([permissions.IsAuthenticated])
def study_scores(request, slug: str) -> HttpResponse:
    """Every judge score of the study's runs as Parquet (typed columns); readers of the study only."""
    from judges.score_table import study_scores_parquet  # here: pyarrow, which the URL conf does without

    study = get_study_for_reader(request.user, slug)
    response = HttpResponse(study_scores_parquet(study), content_type="application/vnd.apache.parquet")
    response["Content-Disposition"] = f'attachment; filename="{study.slug}-judge-scores.parquet"'
    return response
