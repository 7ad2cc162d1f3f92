"""The Manage page's participant phases: the settings as YAML/JSON, and the answers as a table."""

from __future__ import annotations

import csv

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from annotation.access import get_study_for_manager, get_study_for_participants
from annotation.audit import audit_download
from annotation.datasets.spreadsheet import spreadsheet_safe
from annotation.questionnaires import PhasesError
from annotation.services.phases import phase_answers_table, study_phases_update
from annotation.views.manage import PAGE, manage_context, manager_view


@manager_view
@require_POST
def study_phases(request: HttpRequest, slug: str) -> HttpResponse:
    from django.shortcuts import render

    study = get_study_for_manager(request.user, slug)
    text = request.POST.get("phases", "")
    try:
        changed = study_phases_update(study=study, user=request.user, text=text)
    except PhasesError as exc:
        return render(request, PAGE, manage_context(request, study, phases_text=text, phases_errors=exc.errors), status=400)
    messages.success(request, "Participant phases saved." if changed else "Nothing changed.")
    return redirect(reverse("study-manage", args=[study.slug]) + "#phases")


@manager_view
@require_GET
def study_phase_answers(request: HttpRequest, slug: str) -> HttpResponse:
    """Consent and questionnaire answers, one row per participant (CSV)."""
    study = get_study_for_participants(request.user, slug)
    columns, rows = phase_answers_table(study)
    audit_download(actor=request.user, study=study, target=f"{study.slug}-answers.csv", query=request.GET,
                   participants=len(rows))
    response = HttpResponse(content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{study.slug}-answers.csv"'
    writer = csv.DictWriter(response, fieldnames=columns, lineterminator="\n", extrasaction="ignore")
    writer.writeheader()
    for row in rows:
        writer.writerow({k: spreadsheet_safe(v) for k, v in row.items()})
    return response
