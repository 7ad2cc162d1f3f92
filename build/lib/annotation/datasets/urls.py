"""Datasets: exports and versioned releases of a study's ratings (admins and its researchers)."""

from django.urls import path

from annotation.datasets import views

urlpatterns = [
    path("studies/<slug:slug>/datasets/", views.study_datasets, name="datasets"),
    path("studies/<slug:slug>/datasets/export/<str:fmt>/", views.study_export, name="dataset-export"),
    path("studies/<slug:slug>/datasets/releases/", views.release_create, name="release-create"),
    path("studies/<slug:slug>/datasets/releases/<int:pk>/", views.release_download, name="release-download"),
]
