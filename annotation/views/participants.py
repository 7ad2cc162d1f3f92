"""A participant's data, for site admins: download it (JSON or CSV) and erase it; the audit log page.

Everyone else gets 404 (annotation.access.get_study_for_participants), as with the admin API: a study's
participants are not to be guessed at.
"""

from __future__ import annotations

import csv
import json

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods

from annotation.access import get_study_for_admin, get_study_for_participants, is_admin
from annotation.audit import Action, audit_detail_text, audit_entries, audit_record
from annotation.datasets.spreadsheet import spreadsheet_safe
from annotation.models import AuditEntry, ParticipantErasure, Study
from annotation.services.participant_data import (CSV_COLUMNS, ParticipantError, participant_csv_rows,
                                                  participant_erase, participant_export)


def participant_download(*, study: Study, user_id, fmt: str, actor) -> HttpResponse:
    """The participant's data as a file, recorded in the audit log (the page and the API share it)."""
    if fmt not in {"json", "csv"}:
        raise Http404("No such format")
    try:
        export = participant_export(study=study, user_id=user_id)
    except ParticipantError as exc:
        raise Http404(exc.message) from exc
    name = f"{study.slug}-{export['participant']['username']}.{fmt}"
    audit_record(actor=actor, action=Action.PARTICIPANT_DOWNLOAD, study=study,
                 target=export["participant"]["username"], detail={"format": fmt})
    if fmt == "json":
        response = HttpResponse(json.dumps(export, indent=1), content_type="application/json")
    else:
        response = HttpResponse(content_type="text/csv; charset=utf-8")
        writer = csv.DictWriter(response, fieldnames=CSV_COLUMNS, lineterminator="\n")
        writer.writeheader()
        for row in participant_csv_rows(export):
            writer.writerow({k: spreadsheet_safe(v) for k, v in row.items()})
    response["Content-Disposition"] = f'attachment; filename="{name}"'
    response["Cache-Control"] = "no-store"
    return response


@login_required
@require_GET
def participant_data_view(request: HttpRequest, slug: str, user_id: int, fmt: str) -> HttpResponse:
    study = get_study_for_participants(request.user, slug)
    return participant_download(study=study, user_id=user_id, fmt=fmt, actor=request.user)


@login_required
@require_http_methods(["GET", "POST"])
def participant_erase_view(request: HttpRequest, slug: str, user_id: int) -> HttpResponse:
    """GET: what erasing will do, and the choice; POST: erase, then back to the Manage page."""
    study = get_study_for_participants(request.user, slug)
    try:
        export = participant_export(study=study, user_id=user_id)
    except ParticipantError as exc:
        raise Http404(exc.message) from exc
    error = None
    if request.method == "POST":
        try:
            erasure = participant_erase(study=study, user_id=user_id, mode=request.POST.get("mode", ""),
                                        by=request.user)
        except ParticipantError as exc:
            error = exc.message
        else:
            messages.success(request, f"Erased: {erasure.get_mode_display().lower()} ({erasure.ratings} ratings); "
                                      f"the participant is now {erasure.pseudonym} in the logs.")
            return redirect("study-manage", slug=study.slug)
    n_ratings = sum(len(a["ratings"]) for a in export["assignments"])
    return render(request, "annotation/participant_erase.html", {
        "study": study, "export": export, "user_id": user_id, "n_ratings": n_ratings, "error": error,
        "modes": ParticipantErasure.Mode.choices}, status=400 if error else 200)


@login_required
@require_GET
def audit_log_view(request: HttpRequest) -> HttpResponse:
    """The audit log of admin actions, newest first; ?study=SLUG and ?action=... narrow it."""
    if not is_admin(request.user):
        raise Http404("No such page")
    study = None
    if request.GET.get("study"):
        study = get_study_for_admin(request.user, request.GET["study"])
    action = request.GET.get("action", "")
    if action and action not in Action.values:
        action = ""
    entries = list(audit_entries(study=study, action=action))
    for entry in entries:
        entry.detail_text = audit_detail_text(entry.detail)
    return render(request, "annotation/audit.html", {
        "entries": entries, "study": study, "action": action,
        "actions": AuditEntry.Action.choices,
        "erasures": (study.erasures.all() if study else ParticipantErasure.objects.select_related("study"))[:50]})
