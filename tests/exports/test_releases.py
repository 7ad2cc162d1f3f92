"""Releases: versioned, checksummed, immutable, built by Celery with progress on the page."""

from __future__ import annotations

import hashlib
import json
import time

import pyarrow.parquet as pq
import pytest
from django.db import IntegrityError, transaction
from django.urls import reverse

from annotation.datasets import export_chunks
from annotation.datasets.writers import write_file
from annotation.models import DatasetRelease
from annotation.datasets.releases import ReleaseError, next_version, release_build, release_path, releases_create

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def media(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    return settings.MEDIA_ROOT


def build(study, version="1.0.0", formats=("parquet", "pairs"), **kw):
    made = releases_create(study=study, version=version, formats=formats, **kw)
    return [release_build(release_id=r.pk) for r in made]


def test_release_checksum_matches_its_file(codegen_study, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        made = releases_create(study=codegen_study, version="1.0.0", formats=["parquet", "pairs"],
                               changelog="First release")
    assert len(callbacks) == 1  # the build is enqueued only after the commit
    assert {r.status for r in made} == {"pending"}
    for r in made:
        r = release_build(release_id=r.pk)
        assert r.status == "ready" and r.progress == 1.0
        data = release_path(r).read_bytes()
        assert r.sha256 == hashlib.sha256(data).hexdigest() and r.size == len(data)
        assert r.file_path == f"{codegen_study.slug}/{codegen_study.slug}-1.0.0{'.parquet' if r.format == 'parquet' else '.pairs.jsonl'}"
    pairs = DatasetRelease.objects.get(format="pairs")
    lines = [json.loads(x) for x in release_path(pairs).read_text().splitlines()]
    assert lines and {p["metadata"]["dataset_version"] for p in lines} == {"1.0.0"}
    assert release_path(pairs).read_bytes() == b"".join(
        export_chunks(codegen_study, "pairs", dataset_version="1.0.0"))
    table = pq.read_table(release_path(DatasetRelease.objects.get(format="parquet")))
    assert table.num_rows == codegen_study.assignments.count() * 8


def test_a_release_cannot_be_overwritten(codegen_study):
    (ready,) = build(codegen_study, formats=["csv"])
    before = release_path(ready).read_bytes()
    with pytest.raises(ReleaseError, match="immutable"):
        releases_create(study=codegen_study, version="1.0.0", formats=["csv"])
    with pytest.raises(IntegrityError):  # the database refuses to change a ready release
        with transaction.atomic():
            DatasetRelease.objects.filter(pk=ready.pk).update(sha256="0" * 64)
    with pytest.raises(IntegrityError):
        with transaction.atomic():
            DatasetRelease.objects.filter(pk=ready.pk).update(status="pending")
    again = release_build(release_id=ready.pk)  # a redelivered task: nothing happens
    assert again.sha256 == ready.sha256 and release_path(ready).read_bytes() == before
    with pytest.raises(FileExistsError):
        write_file([b"other"], release_path(ready), overwrite=False)
    assert release_path(ready).read_bytes() == before
    # another version is fine, and older versions stay
    build(codegen_study, version="1.0.1", formats=["csv"])
    assert sorted(DatasetRelease.objects.values_list("version", flat=True)) == ["1.0.0", "1.0.1"]
    assert next_version(codegen_study) == "1.0.2"


@pytest.mark.parametrize("version", ["1.0", "v1.0.0", "01.0.0", "1.0.0 beta", ""])
def test_versions_must_be_semver(codegen_study, version):
    with pytest.raises(ReleaseError, match="semantic version"):
        releases_create(study=codegen_study, version=version, formats=["csv"])
    assert not DatasetRelease.objects.exists()


def test_semver_prerelease_and_bad_formats(codegen_study):
    assert releases_create(study=codegen_study, version="2.0.0-rc.1+build.5", formats=["csv"])
    with pytest.raises(ReleaseError, match="unknown"):
        releases_create(study=codegen_study, version="2.0.0", formats=["csv", "xlsx"])
    with pytest.raises(ReleaseError, match="delta"):
        releases_create(study=codegen_study, version="2.0.0", formats=["pairs"], delta=0)
    assert DatasetRelease.objects.count() == 1


def test_release_pages_and_downloads_for_readers_only(codegen_study, researcher, outsider, admin_user,
                                                     client_for):
    annotator = codegen_study.members.filter(role="annotator").first().user
    (ready,) = build(codegen_study, formats=["jsonl"])
    download = reverse("release-download", args=[codegen_study.slug, ready.pk])
    create = reverse("release-create", args=[codegen_study.slug])
    for user in (annotator, outsider):
        c = client_for(user)
        assert c.get(download).status_code == 404
        assert c.post(create, {"version": "9.0.0", "formats": ["csv"]}).status_code == 404
    assert not DatasetRelease.objects.filter(version="9.0.0").exists()
    for user in (researcher, admin_user):
        response = client_for(user).get(download)
        assert response.status_code == 200
        body = b"".join(response.streaming_content)
        assert hashlib.sha256(body).hexdigest() == ready.sha256 == response["X-Checksum-SHA256"]
        assert response["Content-Disposition"] == f'attachment; filename="{codegen_study.slug}-1.0.0.jsonl"'


def test_create_release_over_http(codegen_study, researcher, client_for, django_capture_on_commit_callbacks):
    c = client_for(researcher)
    url = reverse("release-create", args=[codegen_study.slug])
    with django_capture_on_commit_callbacks(execute=False):
        response = c.post(url, {"version": "1.2.0", "formats": ["csv", "pairs"], "delta": "1.0",
                                "changelog": "Adds item 3"})
    assert response.status_code == 302 and response["Location"] == reverse("datasets", args=[codegen_study.slug])
    made = DatasetRelease.objects.filter(version="1.2.0")
    assert {r.format for r in made} == {"csv", "pairs"}
    assert made.get(format="pairs").delta == 1.0 and made.get(format="csv").delta is None
    assert {r.created_by for r in made} == {researcher}
    page = c.get(reverse("datasets", args=[codegen_study.slug])).content.decode()
    assert 'role="progressbar"' in page and 'hx-trigger="every 1s"' in page  # polls while building
    duplicate = c.post(url, {"version": "1.2.0", "formats": ["csv"]})
    assert duplicate.status_code == 400 and "immutable" in duplicate.content.decode()
    bad = c.post(url, {"version": "one", "formats": ["csv"]})
    assert bad.status_code == 400 and "not a semantic version" in bad.content.decode()
    assert DatasetRelease.objects.count() == 2


def test_release_fragment_for_htmx(codegen_study, researcher, client_for):
    (ready,) = build(codegen_study, formats=["csv"])
    c = client_for(researcher)
    fragment = c.get(reverse("datasets", args=[codegen_study.slug]), {"fragment": "releases"},
                     HTTP_HX_REQUEST="true").content.decode()
    assert fragment.lstrip().startswith('<section class="card" id="releases"')
    assert "<html" not in fragment and ready.sha256[:12] in fragment
    assert "hx-trigger" not in fragment  # nothing building: no polling


def test_failed_build_is_recorded(codegen_study, monkeypatch):
    (release,) = releases_create(study=codegen_study, version="1.0.0", formats=["consensus"])

    def boom(*a, **k):
        raise RuntimeError("disk full")

    monkeypatch.setattr("annotation.datasets.releases.export_to_file", boom)
    with pytest.raises(RuntimeError):
        release_build(release_id=release.pk)
    release.refresh_from_db()
    assert release.status == "failed" and "disk full" in release.error and not release.sha256
    monkeypatch.undo()
    assert release_build(release_id=release.pk).status == "ready"  # a failed release may be rebuilt


@pytest.mark.django_db(transaction=True)
def test_celery_builds_the_release(celery_worker_session, codegen_study, researcher, client_for):
    c = client_for(researcher)
    response = c.post(reverse("release-create", args=[codegen_study.slug]),
                      {"version": "3.0.0", "formats": ["parquet", "consensus"]})
    assert response.status_code == 302
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if set(DatasetRelease.objects.values_list("status", flat=True)) == {"ready"}:
            break
        time.sleep(0.2)
    releases = list(DatasetRelease.objects.all())
    assert {r.status for r in releases} == {"ready"}, [(r.status, r.error) for r in releases]
    for r in releases:
        assert hashlib.sha256(release_path(r).read_bytes()).hexdigest() == r.sha256
    fragment = c.get(reverse("datasets", args=[codegen_study.slug]), {"fragment": "releases"},
                     HTTP_HX_REQUEST="true").content.decode()
    assert fragment.count("Download") == 2 and "hx-trigger" not in fragment


@pytest.mark.django_db(transaction=True)
def test_progress_is_visible_while_building(celery_worker_session, codegen_study, researcher, client_for,
                                            monkeypatch):
    """A slow export: the page's fragment shows the bar moving before the release is ready.

    The build pauses halfway on a gate the test opens only after it has seen the bar, so
    the check does not depend on how fast the worker thread runs.
    """
    import dataclasses
    import threading

    from annotation import datasets as exports
    from annotation.datasets import releases

    halfway = threading.Event()

    def slow(study, *, progress=None, **_):
        for i in range(20):
            if i == 10:
                assert halfway.wait(30), "test never saw the progress bar"
            time.sleep(0.06)
            progress(1)  # 20 of ~total rows
            yield b"x\n"

    monkeypatch.setattr(releases, "PROGRESS_EVERY_S", 0.05)
    monkeypatch.setattr("annotation.reports.ratings.count_rating_rows", lambda study: 20)  # release_build's import
    monkeypatch.setitem(exports.FORMATS, "csv", dataclasses.replace(exports.FORMATS["csv"], formatter=slow))
    c = client_for(researcher)
    assert c.post(reverse("release-create", args=[codegen_study.slug]),
                  {"version": "1.0.0", "formats": ["csv"]}).status_code == 302
    seen = set()
    deadline = time.monotonic() + 60
    try:
        while time.monotonic() < deadline:
            r = DatasetRelease.objects.get()
            seen.add(round(r.progress, 2))
            if r.status == "building" and 0 < r.progress < 1 and not halfway.is_set():
                fragment = c.get(reverse("datasets", args=[codegen_study.slug]), {"fragment": "releases"},
                                 HTTP_HX_REQUEST="true").content.decode()
                assert 'role="progressbar"' in fragment and 'hx-trigger="every 1s"' in fragment
                halfway.set()
            if r.status == "ready":
                break
            time.sleep(0.05)
    finally:
        halfway.set()  # never leave the worker thread blocked
    assert r.status == "ready" and r.progress == 1.0
    assert any(0 < p < 1 for p in seen), seen
    assert release_path(r).read_bytes() == b"x\n" * 20


def test_the_first_release_suggests_0_1_0_then_the_next_patch(codegen_study, researcher, client_for):
    assert next_version(codegen_study) == "0.1.0"
    page = client_for(researcher).get(reverse("datasets", args=[codegen_study.slug])).content.decode()
    assert 'name="version" value="0.1.0"' in page
    build(codegen_study, version="0.1.0", formats=["csv"])
    assert next_version(codegen_study) == "0.1.1"
    build(codegen_study, version="0.10.0", formats=["csv"])
    build(codegen_study, version="0.9.3", formats=["csv"])
    assert next_version(codegen_study) == "0.10.1"  # numeric order, not text order
