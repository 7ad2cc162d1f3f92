"""A study's progress dashboard (admins and the study's researchers), refreshed by htmx polling; audited."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from annotation.access import get_study_for_reader
from annotation.audit import audit_page
from annotation.progress import study_dashboard

TEMPLATE = "annotation/study_progress.html"


@login_required
@require_GET
def study_progress_view(request: HttpRequest, slug: str) -> HttpResponse:
    study = get_study_for_reader(request.user, slug)
    context = {"study": study, "d": study_dashboard(study)}
    audit_page(request=request, study=study, target="progress page")  # crowd panel ids with times and payments
    if request.htmx:
        return render(request, f"{TEMPLATE}#live", context)
    return render(request, TEMPLATE, context)
