from django.urls import include, path
from rest_framework.routers import DefaultRouter

from judges.api import JudgeConfigViewSet, JudgeRunViewSet, study_scores

router = DefaultRouter()
router.register("configs", JudgeConfigViewSet, basename="judge-config")
router.register("runs", JudgeRunViewSet, basename="judge-run")

urlpatterns = [
    path("studies/<slug:slug>/scores/", study_scores, name="api-judge-scores"),
    path("", include(router.urls)),
]
