from django.urls import include, path
from rest_framework.routers import DefaultRouter

from annotation import api_data
from annotation.api import RubricViewSet, StudyViewSet
from annotation.traces.api import otlp_traces
from annotation.views import tokens

router = DefaultRouter()
router.register("rubrics", RubricViewSet, basename="rubric")
router.register("studies", StudyViewSet, basename="study")

urlpatterns = [
    path("tokens/", tokens.api_tokens, name="api-tokens"),
    path("tokens/<str:prefix>/", tokens.api_token_revoke_view, name="api-token-revoke"),
    # before the router, whose rubrics/<pk>/ would take "file"
    path("rubrics/file/", api_data.rubric_file, name="api-rubric-file"),
    path("studies/<slug:slug>/export/", api_data.study_export, name="api-study-export"),
    path("studies/<slug:slug>/report/", api_data.study_report_json, name="api-study-report"),
    path("studies/<slug:slug>/comparisons/", api_data.study_comparisons, name="api-study-comparisons"),
    path("studies/<slug:slug>/releases/", api_data.study_releases_view, name="api-study-releases"),
    path("studies/<slug:slug>/releases/<int:pk>/file/", api_data.release_file, name="api-release-file"),
    path("studies/<slug:slug>/otlp/v1/traces", otlp_traces, name="api-study-otlp-traces"),
    path("", include(router.urls)),
    path("", include("annotation.participants_api")),
]
