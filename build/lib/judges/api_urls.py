from django.urls import include, path
from rest_framework.routers import DefaultRouter

from judges.api import JudgeConfigViewSet, JudgeRunViewSet

router = DefaultRouter()
router.register("configs", JudgeConfigViewSet, basename="judge-config")
router.register("runs", JudgeRunViewSet, basename="judge-run")

urlpatterns = [path("", include(router.urls))]
