from django.urls import include, path
from rest_framework.routers import DefaultRouter

from annotation.api import RubricViewSet, StudyViewSet

router = DefaultRouter()
router.register("rubrics", RubricViewSet, basename="rubric")
router.register("studies", StudyViewSet, basename="study")

urlpatterns = [
    path("", include(router.urls)),
    path("", include("annotation.workspace_api_urls")),
    path("", include("annotation.participants_api")),
]
