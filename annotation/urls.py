from django.urls import include, path

from annotation.views import items, progress, studies

urlpatterns = [
    path("", studies.home, name="home"),
    path("studies/new/", studies.study_create_view, name="study-create"),
    path("studies/<slug:slug>/manage/", studies.study_manage, name="study-manage"),
    path("studies/<slug:slug>/upload/", studies.study_upload_items, name="study-upload"),
    path("studies/<slug:slug>/members/", studies.study_add_members, name="study-members"),
    path("studies/<slug:slug>/status/", studies.study_status, name="study-status"),
    path("studies/<slug:slug>/items/", items.study_items, name="items-page"),
    path("studies/<slug:slug>/items/<int:pk>/preview/", items.item_preview, name="item-preview"),
    path("studies/<slug:slug>/items/<int:pk>/delete/", items.item_delete_view, name="item-delete"),
    path("studies/<slug:slug>/items/<int:pk>/replace/", items.item_replace_view, name="item-replace"),
    path("studies/<slug:slug>/progress/", progress.study_progress_view, name="progress-page"),
    path("", include("annotation.workspace_urls")),
    path("", include("annotation.reports.urls")),
    path("", include("annotation.datasets.urls")),
]
