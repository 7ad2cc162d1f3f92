from django.urls import path

from judges import views

app_name = "judges"

urlpatterns = [
    path("", views.judge_list, name="list"),
    path("load/", views.judge_load, name="load"),
    path("studies/<slug:slug>/", views.study_judges, name="study"),
    path("studies/<slug:slug>/run/", views.run_start, name="run-start"),
    path("studies/<slug:slug>/estimate/", views.run_estimate_view, name="run-estimate"),
    path("studies/<slug:slug>/jury/", views.jury_start, name="jury"),
    path("studies/<slug:slug>/routing/", views.routing_view, name="routing"),
    path("studies/<slug:slug>/gold/", views.gold_view, name="gold"),
    path("studies/<slug:slug>/doubt/", views.doubt_view, name="doubt"),
    path("runs/<int:pk>/progress/", views.run_progress_view, name="run-progress"),
    path("runs/<int:pk>/cancel/", views.run_cancel, name="run-cancel"),
    path("runs/<int:pk>/resume/", views.run_resume, name="run-resume"),
    path("runs/<int:pk>/cap/", views.run_cap, name="run-cap"),
    path("runs/<int:pk>/files/<str:name>", views.run_file_view, name="run-file"),
]
