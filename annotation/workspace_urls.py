"""The annotator workspace pages (see annotation/views/workspace.py)."""

from django.urls import path

from annotation.views import phases, training, workspace

urlpatterns = [
    path("studies/<slug:slug>/rate/", workspace.workspace, name="workspace"),
    path("studies/<slug:slug>/rate/guidelines/", workspace.guidelines, name="workspace-guidelines"),
    path("studies/<slug:slug>/rate/history/", workspace.history, name="workspace-history"),
    path("studies/<slug:slug>/rate/<uuid:token>/", workspace.assignment_detail, name="workspace-assignment"),
    path("studies/<slug:slug>/rate/<uuid:token>/draft/", workspace.assignment_draft, name="workspace-draft"),
    path("studies/<slug:slug>/rate/<uuid:token>/submit/", workspace.assignment_submit_view,
         name="workspace-submit"),
    path("studies/<slug:slug>/rate/<uuid:token>/training/", training.training_feedback, name="training-feedback"),
    path("studies/<slug:slug>/rate/consent/", phases.consent_view, name="phase-consent"),
    path("studies/<slug:slug>/rate/questionnaire/<str:which>/", phases.questionnaire_view, name="phase-questionnaire"),
    path("studies/<slug:slug>/rate/instructions/", phases.instructions_view, name="phase-instructions"),
    path("studies/<slug:slug>/rate/training/retry/", training.training_retry_view, name="training-retry"),
]
