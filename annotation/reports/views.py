"""The study report page and its downloads (standalone HTML, CSV, JSON; a comparative question's
answers as the long CSV of `manage.py comparisons`).

Readers only (admins and the study's researchers): anyone else gets 404.
"""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
import csv

from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest
from django.shortcuts import render
from django.views.decorators.http import require_GET

from annotation.access import get_study_for_reader
from annotation.audit import audit_download, audit_page
from annotation.datasets.spreadsheet import spreadsheet_safe
from annotation.models import Study
from annotation.reports.pending import ReportFailed, ReportPending
from config.parsers import BadNumber, parse_number

# The report's modules (pandas, scipy, matplotlib) are imported by the views that compute, not with the
# URL conf: every web worker, Celery worker and manage.py command would pay for them at start.


def _threshold(request: HttpRequest) -> tuple[float, str | None]:
    from annotation.reports.study import DEFAULT_ICC_THRESHOLD

    raw = request.GET.get("icc_threshold", "").strip()
    if not raw:
        return DEFAULT_ICC_THRESHOLD, None
    try:
        return parse_number(raw, "icc_threshold", minimum=0.0, maximum=1.0), None
    except BadNumber as exc:
        return DEFAULT_ICC_THRESHOLD, str(exc)


@login_required
@require_GET
def study_report(request: HttpRequest, slug: str) -> HttpResponse:
    from annotation.reports.downloads import DOWNLOADS, page_context, report_bytes, report_filename, report_with_sections

    study = get_study_for_reader(request.user, slug)
    threshold, error = _threshold(request)
    download = request.GET.get("download")
    if download == "comparisons":
        return _comparisons_csv(request, study, request.GET.get("criterion", ""))
    if download == "steps":
        return _steps_csv(request, study)
    if download and (download not in DOWNLOADS or error):
        return HttpResponseBadRequest(error or f"download must be one of {sorted(DOWNLOADS)}")
    fragment = request.GET.get("fragment")
    polled = fragment == "pending"
    try:
        report, sections = report_with_sections(study, threshold, web=True)
    except (ReportPending, ReportFailed) as exc:
        if download:
            return report_not_ready(exc)
        if fragment == "plots":  # the report went from under the page: show the page as it now is
            return _refresh()
        if isinstance(exc, ReportPending) or not polled:
            return _pending_page(request, study, exc, polled)
        return _refresh()  # polled, and the report failed: the page shows the failure
    if fragment == "plots":
        return _plots_fragment(request, study, report)
    if polled:
        return _refresh()  # the report is there: show the whole page
    if download:
        body = report_bytes(study, download, threshold=threshold, report=report, sections=sections)
        # per-rater statistics name the raters
        audit_download(actor=request.user, study=study, target=report_filename(study, download), query=request.GET,
                       format=download)
        response = HttpResponse(body, content_type=DOWNLOADS[download].content_type)
        response["Content-Disposition"] = f'attachment; filename="{report_filename(study, download)}"'
        return response
    context = {**page_context(study, report, sections, threshold, lazy_plots=True), "threshold_error": error}
    audit_page(request=request, study=study, target="report page")  # raters named with their statistics
    return render(request, "annotation/report.html", context)


def _refresh() -> HttpResponse:
    """htmx reloads the whole page (it swaps no error status)."""
    response = HttpResponse(status=204)
    response["HX-Refresh"] = "true"
    return response


def _plots_fragment(request: HttpRequest, study: Study, report: dict) -> HttpResponse:
    """The page's plots, each in place of its placeholder (report_plots.html). They name raters as the page
    does, so they are audited as the page is (an htmx request within the page's window adds no entry)."""
    from annotation.reports.downloads import plot_slots

    audit_page(request=request, study=study, target="report page")
    return render(request, "annotation/report_plots.html", {"slots": plot_slots(report)})


def report_not_ready(exc: ReportPending | ReportFailed) -> HttpResponse:
    """A download or API answer while a worker computes the report (202, Retry-After) or after it
    failed (500), saying which in plain text."""
    if isinstance(exc, ReportFailed):
        return HttpResponse(f"the report could not be computed: {exc}", status=500,
                            content_type="text/plain; charset=utf-8")
    response = HttpResponse(f"{exc}, {exc.elapsed_s:.0f} s so far; ask again in {exc.retry_after_s} s",
                            status=202, content_type="text/plain; charset=utf-8")
    response["Retry-After"] = str(exc.retry_after_s)
    return response


def _pending_page(request: HttpRequest, study: Study, exc: ReportPending | ReportFailed,
                  polled: bool) -> HttpResponse:
    failed = str(exc) if isinstance(exc, ReportFailed) else ""
    context = {"study": study, "failed": failed}
    if isinstance(exc, ReportPending):
        context.update(expected_s=exc.expected_s, elapsed_s=exc.elapsed_s, share=exc.share)
    template = "annotation/report_pending.html" + ("#pending" if polled else "")
    return render(request, template, context, status=500 if failed else 200)


def _comparisons_csv(request: HttpRequest, study: Study, key: str) -> HttpResponse:
    """One comparative question's answers as the long CSV `manage.py comparisons` reads."""
    from annotation.reports.comparisons import comparative_answers, comparative_criteria, long_rows

    keys = [c["key"] for c in comparative_criteria(study.rubric)]
    if key not in keys:
        return HttpResponseBadRequest(f"criterion must be one of the study's comparative questions: {keys}")
    header, rows = long_rows(comparative_answers(study, [key]), key)
    audit_download(actor=request.user, study=study, target=f"{study.slug}-{key}-comparisons.csv", query=request.GET,
                   format="csv")
    response = HttpResponse(content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{study.slug}-{key}-comparisons.csv"'
    writer = csv.writer(response, lineterminator="\n")
    writer.writerow(header)
    writer.writerows([spreadsheet_safe(v) for v in row] for row in rows)
    return response


STEP_COLUMNS = ("item", "output", "system", "step", "kind", "number", "tool", "tool_call_id", "span_id", "trace_id")


def _steps_csv(request: HttpRequest, study: Study) -> HttpResponse:
    """The step map of the study's trajectories: what each per-step rating's step key (`<criterion>@<step>`
    in the ratings export) stands for, with the source's tool call, span and trace ids."""
    from annotation.reports.steps import step_map

    filename = f"{study.slug}-steps.csv"
    audit_download(actor=request.user, study=study, target=filename, query=request.GET, format="csv")
    response = HttpResponse(content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    writer = csv.writer(response, lineterminator="\n")
    writer.writerow(STEP_COLUMNS)
    writer.writerows([spreadsheet_safe(row[c]) for c in STEP_COLUMNS] for row in step_map(study))
    return response
