"""Downloads of the paper kit: the whole zip, or one file of it (a table's .tex or .md, a figure's
.svg, .pdf or .png, methods.md or methods.tex). Readers of the study only; anyone else gets 404."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.views.decorators.http import require_GET

from annotation.access import get_study_for_reader
from annotation.audit import audit_download
from annotation.reports.pending import ReportFailed, ReportPending
from annotation.reports.views import report_not_ready

# annotation.reports.paper (matplotlib, pandas) is imported by the views, not with the URL conf.

CONTENT_TYPES = {"tex": "application/x-tex; charset=utf-8", "md": "text/markdown; charset=utf-8",
                 "svg": "image/svg+xml", "pdf": "application/pdf", "png": "image/png"}


def _attachment(body: bytes, content_type: str, filename: str) -> HttpResponse:
    response = HttpResponse(body, content_type=content_type)
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


@login_required
@require_GET
def paper_kit(request: HttpRequest, slug: str) -> HttpResponse:
    from annotation.reports.paper import paper_zip, study_paper_files

    study = get_study_for_reader(request.user, slug)
    try:
        files = study_paper_files(study, web=True)
    except (ReportPending, ReportFailed) as exc:
        return report_not_ready(exc)
    # its raters table names the raters
    audit_download(actor=request.user, study=study, target=f"{study.slug}-paper.zip", query=request.GET)
    return _attachment(paper_zip(files), "application/zip", f"{study.slug}-paper.zip")


@login_required
@require_GET
def paper_file(request: HttpRequest, slug: str, name: str) -> HttpResponse:
    from annotation.reports.paper import study_paper_files

    study = get_study_for_reader(request.user, slug)
    try:
        files = study_paper_files(study, web=True, only=name)
    except (ReportPending, ReportFailed) as exc:
        return report_not_ready(exc)
    if name not in files:
        raise Http404("No such file in this study's paper kit")
    audit_download(actor=request.user, study=study, target=f"{study.slug}-{name.replace('/', '-')}", query=request.GET,
                   file=name)
    return _attachment(files[name], CONTENT_TYPES[name.rsplit(".", 1)[1]], f"{study.slug}-{name.replace('/', '-')}")
