from django.urls import include, path

from annotation.views import crowd, items, manage, manage_phases, progress, studies

urlpatterns = [
    path("", studies.home, name="home"),
    path("studies/new/", studies.study_create_view, name="study-create"),
    path("studies/<slug:slug>/manage/", manage.study_manage, name="study-manage"),
    path("studies/<slug:slug>/upload/", manage.study_upload_items, name="manage-upload"),
    path("studies/<slug:slug>/members/", manage.study_add_members, name="manage-members"),
    path("studies/<slug:slug>/members/status/", manage.study_member_status, name="manage-member-status"),
    path("studies/<slug:slug>/status/", manage.study_status, name="manage-status"),
    path("studies/<slug:slug>/settings/", manage.study_settings, name="manage-settings"),
    path("studies/<slug:slug>/invitations/", manage.study_invitations, name="manage-invitations"),
    path("studies/<slug:slug>/invitations/revoke/", manage.study_invitation_revoke, name="manage-invitation-revoke"),
    path("invite/<str:token>/", manage.invitation_accept, name="invitation"),
    path("studies/<slug:slug>/crowd-links/", manage.study_crowd_links, name="manage-crowd"),
    path("studies/<slug:slug>/crowd-links/revoke/", manage.study_crowd_link_revoke, name="manage-crowd-revoke"),
    path("studies/<slug:slug>/crowd-links/payments.csv", manage.study_crowd_payments, name="manage-crowd-payments"),
    path("studies/<slug:slug>/phases/", manage_phases.study_phases, name="manage-phases"),
    path("studies/<slug:slug>/phases/answers.csv", manage_phases.study_phase_answers, name="manage-phase-answers"),
    path("crowd/<str:token>/", crowd.crowd_entry, name="crowd-entry"),
    path("studies/<slug:slug>/crowd/return/", crowd.crowd_return_view, name="crowd-return"),
    path("studies/<slug:slug>/items/", items.study_items, name="items-page"),
    path("studies/<slug:slug>/items/<int:pk>/preview/", items.item_preview, name="item-preview"),
    path("studies/<slug:slug>/items/<int:pk>/delete/", items.item_delete_view, name="item-delete"),
    path("studies/<slug:slug>/items/<int:pk>/replace/", items.item_replace_view, name="item-replace"),
    path("studies/<slug:slug>/progress/", progress.study_progress_view, name="progress-page"),
    path("", include("annotation.workspace_urls")),
    path("", include("annotation.reports.urls")),
    path("", include("annotation.planning.urls")),
    path("", include("annotation.datasets.urls")),
]
