"""Study reports: readers of a study (admins and its researchers)."""

from django.urls import path

from annotation.reports import views

urlpatterns = [
    path("studies/<slug:slug>/report/", views.study_report, name="report"),
]
