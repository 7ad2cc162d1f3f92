"""The study report page and its downloads (standalone HTML, CSV, JSON).

Readers only (admins and the study's researchers): anyone else gets 404.
"""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest
from django.shortcuts import render
from django.views.decorators.http import require_GET

from annotation.access import get_study_for_reader
from annotation.reports.downloads import DOWNLOADS, page_context, report_bytes, report_filename, report_with_sections
from annotation.reports.study import DEFAULT_ICC_THRESHOLD


def _threshold(request: HttpRequest) -> tuple[float, str | None]:
    raw = request.GET.get("icc_threshold", "").strip()
    if not raw:
        return DEFAULT_ICC_THRESHOLD, None
    try:
        value = float(raw)
    except ValueError:
        return DEFAULT_ICC_THRESHOLD, f"icc_threshold: {raw!r} is not a number"
    if not 0.0 <= value <= 1.0:
        return DEFAULT_ICC_THRESHOLD, f"icc_threshold: {value:g} is outside 0..1"
    return value, None


@login_required
@require_GET
def study_report(request: HttpRequest, slug: str) -> HttpResponse:
    study = get_study_for_reader(request.user, slug)
    threshold, error = _threshold(request)
    download = request.GET.get("download")
    if download and (download not in DOWNLOADS or error):
        return HttpResponseBadRequest(error or f"download must be one of {sorted(DOWNLOADS)}")
    report, sections = report_with_sections(study, threshold)
    if download:
        body = report_bytes(study, download, threshold=threshold, report=report, sections=sections)
        response = HttpResponse(body, content_type=DOWNLOADS[download].content_type)
        response["Content-Disposition"] = f'attachment; filename="{report_filename(study, download)}"'
        return response
    context = {**page_context(study, report, sections, threshold), "threshold_error": error}
    return render(request, "annotation/report.html", context)
