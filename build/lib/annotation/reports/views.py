"""The study report page and its downloads (standalone HTML, CSV, JSON).

Readers only (admins and the study's researchers): anyone else gets 404.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest, StreamingHttpResponse
from django.shortcuts import render
from django.template.loader import render_to_string
from django.views.decorators.http import require_GET

from annotation.access import get_study_for_reader
from annotation.reports.plots import report_plots
from annotation.reports.study import (
    DEFAULT_ICC_THRESHOLD, cached_study_report, extra_sections, report_csv_rows, with_threshold,
)

DOWNLOADS = {"html", "csv", "json"}


class _Echo:
    def write(self, value: str) -> str:
        return value


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
    report = with_threshold(cached_study_report(study), threshold)
    sections = extra_sections(study, report)
    stem = f"{study.slug}-report"
    if download == "json":
        report = {**report, "sections": {s["title"]: s.get("data") for s in sections if s.get("data") is not None}}
        response = HttpResponse(json.dumps(report, indent=1), content_type="application/json")
        response["Content-Disposition"] = f'attachment; filename="{stem}.json"'
        return response
    if download == "csv":
        writer = csv.writer(_Echo())
        response = StreamingHttpResponse((writer.writerow(r) for r in report_csv_rows(report)),
                                         content_type="text/csv; charset=utf-8")
        response["Content-Disposition"] = f'attachment; filename="{stem}.csv"'
        return response
    context = {"study": study, "report": report, "plots": report_plots(report), "view": report_view(report),
               "threshold": threshold, "threshold_error": error, "sections": sections}
    if download == "html":
        css = (Path(settings.BASE_DIR) / "static" / "css" / "concord.css").read_text()
        html = render_to_string("annotation/report_standalone.html", {**context, "css": css, "standalone": True}, request=request)
        response = HttpResponse(html, content_type="text/html; charset=utf-8")
        response["Content-Disposition"] = f'attachment; filename="{stem}.html"'
        return response
    return render(request, "annotation/report.html", context)


def report_view(report: dict[str, Any]) -> dict[str, Any]:
    """Tables for the template, which cannot index dicts by a variable key."""
    names = {c["key"]: c["name"] for c in report.get("criteria", [])}
    agreement = []
    for key, a in report.get("agreement", {}).items():
        details = []
        for name, value in _flat(a["details"], skip={"reasons", "icc_ci", "judges"}):
            details.append({"name": name, "value": value, "reason": a["details"]["reasons"].get(name)})
        agreement.append({"key": key, "name": names.get(key, key), **a, "detail_rows": details})
    consensus = report.get("consensus", {})
    numeric = [c for c in report.get("criteria", []) if c["key"] in {k for r in consensus.get("rows", [])
                                                                     for k in r["criteria"]}]
    cons_rows = []
    for r in consensus.get("rows", []):
        cells = [_with_half(r["criteria"].get(c["key"])) for c in numeric]
        cons_rows.append({**r, "cells": cells, "group_values": [(r.get("groups") or {}).get(g)
                                                                 for g in consensus.get("groups", [])]})
    systems = []
    order = ["combined"] + [c["key"] for c in report.get("criteria", [])]
    comparisons = report.get("systems", {}).get("criteria", {})
    for key, comp in sorted(comparisons.items(), key=lambda kv: order.index(kv[0]) if kv[0] in order else 99):
        rows = [{"system": s, "rank": i + 1, **comp["systems"][s]} for i, s in enumerate(comp["ranking"])]
        systems.append({"key": key, "name": names.get(key, "Combined (rubric weights)" if key == "combined" else key),
                        "rows": rows, "pairs": comp["pairs"]})
    accept = [{"key": k, "name": names.get(k, k), **v,
               "rows": sorted(v["systems"].items(), key=lambda kv: -kv[1])}
              for k, v in report.get("systems", {}).get("accept_rate", {}).items()]
    raters = [{"name": r, **info} for r, info in report.get("raters", {}).items()]
    return {"agreement": agreement, "consensus_criteria": numeric, "consensus_rows": cons_rows,
            "systems": systems, "accept": accept, "raters": raters,
            "groups": consensus.get("groups", [])}


def _with_half(cell: dict[str, Any] | None) -> dict[str, Any] | None:
    if cell and cell.get("ci"):
        return {**cell, "half": (cell["ci"][1] - cell["ci"][0]) / 2}
    return cell


def _flat(tree: dict[str, Any], prefix: str = "", skip: set[str] = frozenset()):
    for k, v in tree.items():
        if k in skip:
            continue
        if isinstance(v, dict):
            yield from _flat(v, f"{prefix}{k}.")
        elif not isinstance(v, list):
            yield f"{prefix}{k}", v
