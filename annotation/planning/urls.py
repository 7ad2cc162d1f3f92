"""The study planner page: readers of a study (admins and its researchers)."""

from django.urls import path

from annotation.planning import views

urlpatterns = [
    path("studies/<slug:slug>/plan/", views.study_plan_page, name="plan"),
]
