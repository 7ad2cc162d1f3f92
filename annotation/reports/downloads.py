"""The study report as a file: standalone HTML (plots inline as SVG, CSS embedded), CSV or
JSON. One function makes the bytes, for the report page's downloads and for
`manage.py study_report` alike, so a scripted report is the one a researcher downloads.
"""

from __future__ import annotations

import csv
import hashlib
import io
import itertools
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.cache import cache
from django.template.loader import render_to_string

from annotation.datasets.spreadsheet import spreadsheet_safe
from annotation.models import Study
from annotation.reports.background import latest_sections, report_for_request, sections_for_request
from annotation.reports.page import pending_plots, report_view
from annotation.reports import plots as plots_module
from annotation.reports.plots import report_plots
from annotation.reports.sections import cached_extra_sections
from annotation.reports.summary import report_summary, summary_csv_rows, summary_parts
from annotation.reports.study import (
    DEFAULT_ICC_THRESHOLD, cached_study_report, report_csv_rows, with_threshold,
)


@dataclass(frozen=True)
class Download:
    content_type: str
    extension: str


DOWNLOADS: dict[str, Download] = {
    "html": Download("text/html; charset=utf-8", ".html"),
    "csv": Download("text/csv; charset=utf-8", ".csv"),
    "json": Download("application/json", ".json"),
}


def report_with_sections(study: Study, threshold: float = DEFAULT_ICC_THRESHOLD, *, web: bool = False
                         ) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The (cached) report with its acceptance flags for `threshold`, and the other apps' sections.
    `web`: for a web request, where a large study's report is computed by a worker
    (annotation.reports.background: may raise ReportPending or ReportFailed; an out-of-date report
    says so in `out_of_date`)."""
    if web:
        report, out_of_date = report_for_request(study)
        report = with_threshold(report, threshold)
        # (an out-of-date report's task computes the sections after it: none are queued apart meanwhile)
        sections, old = sections_for_request(study, report) if not out_of_date else (latest_sections(study), True)
        if out_of_date or old:
            report = {**report, "out_of_date": True}
        return report, sections
    report = with_threshold(cached_study_report(study), threshold)
    return report, cached_extra_sections(study, report)


def summary_with_parts(study: Study, report: dict[str, Any], sections: list[dict[str, Any]]
                       ) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The report's summary and the other apps' parts of it (to render with their own templates)."""
    parts = summary_parts(study, report, sections)
    return report_summary(report, parts), parts


# The plots' code is part of their cache key: a changed plot is drawn again, not served from the cache.
_PLOTS_CODE = hashlib.sha256(Path(plots_module.__file__).read_bytes()).hexdigest()[:16]
PLOTS_CACHE_SECONDS = 24 * 3600


def cached_report_plots(report: dict[str, Any]) -> dict[str, Any]:
    """report_plots, kept by the report's content (the hash of its canonical JSON): drawing the SVGs
    took about a second on every view of a report page."""
    digest = hashlib.sha256(json.dumps(report, sort_keys=True, default=str).encode()).hexdigest()
    key = f"concord:report-plots:{_PLOTS_CODE}:{digest}"
    plots = cache.get(key)
    if plots is None:
        plots = report_plots(report)
        cache.set(key, plots, PLOTS_CACHE_SECONDS)
    return plots


def page_context(study: Study, report: dict[str, Any], sections: list[dict[str, Any]],
                 threshold: float, *, lazy_plots: bool = False) -> dict[str, Any]:
    """What report.html and report_standalone.html render. With lazy_plots (the page) each plot is a
    placeholder that the page's second request fills (plot_slots), so the tables answer before the plots
    are drawn (seconds for a large study); a downloaded report has them inline."""
    if lazy_plots:
        plots = pending_plots(report)
        lazy_plots = any(name != "comparisons" for name in plots) or bool(plots["comparisons"])  # else nothing to ask
    else:
        plots = cached_report_plots(report)
    summary, parts = summary_with_parts(study, report, sections)
    return {"study": study, "report": report, "plots": plots, "lazy_plots": lazy_plots,
            "view": report_view(report, plots), "threshold": threshold, "sections": sections,
            "summary": summary, "summary_parts": parts}


def plot_slots(report: dict[str, Any]) -> list[tuple[str, str | None]]:
    """Each placeholder of the page (pending_plots) by its element id, with its SVG or None where there turned
    out to be nothing to draw."""
    drawn = cached_report_plots(report)
    pending = pending_plots(report)
    slots = [(name, drawn.get(name)) for name in pending if name != "comparisons"]
    for n, key in enumerate(report.get("comparisons") or {}, start=1):  # report_body.html's loop, in its order
        for kind in pending["comparisons"].get(key, ()):
            slots.append((f"comparison-{n}-{kind}", (drawn["comparisons"].get(key) or {}).get(kind)))
    return slots


def _csv_cell(value: Any) -> Any:
    """Booleans as true/false; text neutralised for spreadsheets (names and ids come from uploads)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return spreadsheet_safe(value)


def report_filename(study: Study, fmt: str) -> str:
    return f"{study.slug}-report{DOWNLOADS[fmt].extension}"


def report_bytes(study: Study, fmt: str, *, threshold: float = DEFAULT_ICC_THRESHOLD,
                 report: dict[str, Any] | None = None, sections: list[dict[str, Any]] | None = None,
                 web: bool = False) -> bytes:
    """The report file in `fmt` (html, csv or json); pass report and sections when already made."""
    if fmt not in DOWNLOADS:
        raise ValueError(f"unknown report format {fmt!r}; choose one of {', '.join(DOWNLOADS)}")
    if report is None or sections is None:
        report, sections = report_with_sections(study, threshold, web=web)
    if fmt == "json":
        summary, _ = summary_with_parts(study, report, sections)
        data = {"summary": summary, **report,
                "sections": {s["title"]: s.get("data") for s in sections if s.get("data") is not None}}
        return json.dumps(data, indent=1).encode()
    if fmt == "csv":
        summary, _ = summary_with_parts(study, report, sections)
        buf = io.StringIO()
        writer = csv.writer(buf, lineterminator="\r\n")
        rows = report_csv_rows(report)
        writer.writerow(next(rows))  # the header, then the summary's rows first
        for row in itertools.chain(summary_csv_rows(summary), rows):
            writer.writerow([_csv_cell(v) for v in row])
        return buf.getvalue().encode()
    css = (Path(settings.BASE_DIR) / "static" / "css" / "concord.css").read_text()
    context = {**page_context(study, report, sections, threshold), "css": css, "standalone": True}
    return render_to_string("annotation/report_standalone.html", context).encode()
