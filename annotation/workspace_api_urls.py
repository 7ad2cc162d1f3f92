"""Annotator API endpoints (see annotation/views/workspace_api.py), mounted under /api/."""

from django.urls import path

from annotation.views import phases_api
from annotation.views import workspace_api as api

urlpatterns = [
    path("studies/<slug:slug>/rate/next/", api.NextView.as_view(), name="api-workspace-next"),
    path("studies/<slug:slug>/rate/<uuid:token>/", api.AssignmentView.as_view(), name="api-workspace-assignment"),
    path("studies/<slug:slug>/rate/<uuid:token>/draft/", api.DraftView.as_view(), name="api-workspace-draft"),
    path("studies/<slug:slug>/rate/<uuid:token>/submit/", api.SubmitView.as_view(), name="api-workspace-submit"),
    path("studies/<slug:slug>/consent/", phases_api.ConsentView.as_view(), name="api-phase-consent"),
    path("studies/<slug:slug>/questionnaire/<str:which>/", phases_api.QuestionnaireView.as_view(),
         name="api-phase-questionnaire"),
    path("studies/<slug:slug>/instructions/", phases_api.InstructionsView.as_view(), name="api-phase-instructions"),
    path("studies/<slug:slug>/training/retry/", phases_api.TrainingRetryView.as_view(), name="api-training-retry"),
]
