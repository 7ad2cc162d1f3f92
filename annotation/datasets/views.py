"""The datasets page: live exports in every format, and versioned releases.

Readers only (admins and the study's researchers); anyone else gets 404.
"""

from __future__ import annotations

import base64

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import (
    FileResponse, Http404, HttpRequest, HttpResponse, HttpResponseBadRequest, StreamingHttpResponse,
)
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_POST

from annotation.access import get_study_for_reader
from annotation.audit import Action, audit_record
from annotation.datasets import DEFAULT_DELTA, FORMATS, export_chunks, export_filename
from annotation.datasets.card import LICENSES
from annotation.models import DatasetRelease
from annotation.datasets.quotas import export_quota_check
from annotation.datasets.releases import ReleaseError, next_version, release_path, releases_create, study_releases
from config.parsers import BadNumber, NumberField, parse_number
from config.limits import QuotaExceeded


class ReleaseForm(forms.Form):
    version = forms.CharField(max_length=64, help_text="Semantic version, e.g. 0.1.0")
    formats = forms.MultipleChoiceField(choices=[(f.key, f.label) for f in FORMATS.values()],
                                        widget=forms.CheckboxSelectMultiple)
    delta = NumberField(initial=DEFAULT_DELTA, min_value=0.01, required=False,
                             help_text="Preference pairs: minimum overall difference")
    license = forms.ChoiceField(choices=[("", "—")] + list(LICENSES.items()), required=False,
                                help_text="The dataset's license (required for the Hugging Face format)")
    changelog = forms.CharField(widget=forms.Textarea(attrs={"rows": 3}), required=False)


def _delta(request: HttpRequest) -> float:
    raw = request.GET.get("delta", "").strip()
    if not raw:
        return DEFAULT_DELTA
    return parse_number(raw, "delta", positive=True)  # BadNumber (a ValueError) answered by the caller


def _page(request: HttpRequest, study, form: ReleaseForm | None = None, status: int = 200) -> HttpResponse:
    releases = study_releases(study)
    context = {
        "study": study, "formats": FORMATS.values(), "delta": DEFAULT_DELTA, "releases": releases,
        "building": any(r.status in {DatasetRelease.Status.PENDING, DatasetRelease.Status.BUILDING} for r in releases),
        "form": form or ReleaseForm(initial={"version": next_version(study), "formats": ["jsonl", "parquet"],
                                             "delta": DEFAULT_DELTA}),
    }
    if request.htmx and request.GET.get("fragment") == "releases":
        return render(request, "annotation/datasets.html#releases", context)
    return render(request, "annotation/datasets.html", context, status=status)


@login_required
@require_GET
def study_datasets(request: HttpRequest, slug: str) -> HttpResponse:
    return _page(request, get_study_for_reader(request.user, slug))


@login_required
@require_GET
def study_export(request: HttpRequest, slug: str, fmt: str) -> HttpResponse:
    """A live export, streamed as it is made (flat memory, first bytes at once)."""
    study = get_study_for_reader(request.user, slug)
    if fmt not in FORMATS:
        raise Http404("No such format")
    try:
        delta = _delta(request)
    except BadNumber as exc:
        return HttpResponseBadRequest(str(exc), content_type="text/plain; charset=utf-8")
    try:
        export_quota_check(study)
    except QuotaExceeded as exc:
        return HttpResponse(str(exc), status=429, content_type="text/plain; charset=utf-8")
    audit_record(actor=request.user, action=Action.DATA_DOWNLOAD, study=study, target=export_filename(study, fmt),
                 detail={"format": fmt, "live": True})
    response = StreamingHttpResponse(export_chunks(study, fmt, delta=delta), content_type=FORMATS[fmt].content_type)
    response["Content-Disposition"] = f'attachment; filename="{export_filename(study, fmt)}"'
    response["Cache-Control"] = "no-store"
    return response


@login_required
@require_POST
def release_create(request: HttpRequest, slug: str) -> HttpResponse:
    study = get_study_for_reader(request.user, slug)
    form = ReleaseForm(request.POST)
    if form.is_valid():
        data = form.cleaned_data
        try:
            made = releases_create(study=study, version=data["version"], formats=data["formats"],
                                   changelog=data["changelog"], delta=data["delta"], user=request.user,
                                   license=data["license"])
        except ReleaseError as exc:
            field, _, message = str(exc).partition(": ")
            form.add_error(field if field in form.fields else None, message or str(exc))
        except QuotaExceeded as exc:
            form.add_error(None, str(exc))
            return _page(request, study, form, status=429)
        else:
            messages.success(request, f"Release {made[0].version} queued: {', '.join(r.format for r in made)}.")
            return redirect("datasets", slug=study.slug)
    return _page(request, study, form, status=400)


@login_required
@require_GET
def release_download(request: HttpRequest, slug: str, pk: int) -> HttpResponse:
    return release_file_response(get_study_for_reader(request.user, slug), pk, actor=request.user)


def release_file_response(study, pk: int, *, actor) -> FileResponse:
    """A ready release's file with its SHA-256 (`X-Checksum-SHA256`, `Digest`); 404 otherwise.
    The download is recorded in the audit log under `actor`."""
    release = get_object_or_404(DatasetRelease, pk=pk, study=study, status=DatasetRelease.Status.READY)
    path = release_path(release)
    if not path.exists():
        raise Http404("The release file is missing")
    audit_record(actor=actor, action=Action.DATA_DOWNLOAD, study=study, target=path.name,
                 detail={"format": release.format, "release": release.version})
    response = FileResponse(path.open("rb"), as_attachment=True, filename=path.name,
                            content_type=FORMATS[release.format].content_type)
    response["Digest"] = "sha-256=" + base64.b64encode(bytes.fromhex(release.sha256)).decode()
    response["X-Checksum-SHA256"] = release.sha256
    return response
