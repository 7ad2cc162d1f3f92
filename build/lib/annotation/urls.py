from django.urls import include, path

from annotation.views import studies

urlpatterns = [
    path("", studies.home, name="home"),
    path("studies/new/", studies.study_create_view, name="study-create"),
    path("studies/<slug:slug>/manage/", studies.study_manage, name="study-manage"),
    path("studies/<slug:slug>/upload/", studies.study_upload_items, name="study-upload"),
    path("studies/<slug:slug>/members/", studies.study_add_members, name="study-members"),
    path("studies/<slug:slug>/status/", studies.study_status, name="study-status"),
    path("", include("annotation.workspace_urls")),
    path("", include("annotation.reports.urls")),
    path("", include("annotation.datasets.urls")),
]
