"""Reports and datasets: readers of a study (admins and its researchers)."""

from django.urls import path

from annotation.views import datasets, reports

urlpatterns = [
    path("studies/<slug:slug>/report/", reports.study_report, name="report"),
    path("studies/<slug:slug>/datasets/", datasets.study_datasets, name="datasets"),
    path("studies/<slug:slug>/datasets/export/<str:fmt>/", datasets.study_export, name="dataset-export"),
    path("studies/<slug:slug>/datasets/releases/", datasets.release_create, name="release-create"),
    path("studies/<slug:slug>/datasets/releases/<int:pk>/", datasets.release_download, name="release-download"),
]
