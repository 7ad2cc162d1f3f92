"""Study reports: readers of a study (admins and its researchers)."""

from django.urls import path

from annotation.reports import paper_views, views

urlpatterns = [
    path("studies/<slug:slug>/report/", views.study_report, name="report"),
    path("studies/<slug:slug>/report/paper.zip", paper_views.paper_kit, name="report-paper"),
    path("studies/<slug:slug>/report/paper/<path:name>", paper_views.paper_file, name="report-paper-file"),
]
