"""Versioned dataset releases: create (queued), build (in a Celery task), download.

A release is one file of one format for one semantic version of a study's dataset; a
version may hold several formats. Releases are immutable: creating an existing
(study, version, format) fails, the file is linked into place only if its name is free,
and a database trigger refuses updates of a ready release.
"""

from __future__ import annotations

import re
import threading
from datetime import timedelta
from pathlib import Path
from typing import Iterable

from django.conf import settings
from django.db import IntegrityError, connection, transaction
from django.db.models import Q
from django.utils import timezone

from annotation.exports import FORMATS, export_filename, export_to_file
from annotation.exports.datasets import ITEMS_PER_CHUNK
from annotation.exports.formatters import DEFAULT_DELTA
from annotation.models import DatasetRelease, Study
from annotation.selectors_ratings import count_rating_rows

# semver.org's own pattern
SEMVER = re.compile(
    r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)"
    r"(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?"
    r"(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?$"
)
STALE_BUILD = timedelta(hours=2)  # a build this old was lost with its worker: it may be claimed again
PROGRESS_EVERY_S = 0.5


class ReleaseError(ValueError):
    """A release request that cannot be honoured; the message names the field."""


def releases_dir() -> Path:
    return Path(settings.MEDIA_ROOT) / "releases"


def release_path(release: DatasetRelease) -> Path:
    return releases_dir() / release.file_path


def next_version(study: Study) -> str:
    """The next patch version after the study's highest release (1.0.0 for the first)."""
    best = None
    for v in study.releases.values_list("version", flat=True):
        m = SEMVER.match(v)
        if m:
            key = tuple(int(m.group(i)) for i in (1, 2, 3))
            best = key if best is None or key > best else best
    return "1.0.0" if best is None else f"{best[0]}.{best[1]}.{best[2] + 1}"


@transaction.atomic
def releases_create(*, study: Study, version: str, formats: Iterable[str], changelog: str = "",
                    delta: float | None = None, user=None) -> list[DatasetRelease]:
    """Queue one release per format (all or none); each is built by a Celery task after commit."""
    version = version.strip()
    formats = list(dict.fromkeys(formats))
    if not SEMVER.match(version):
        raise ReleaseError(f"version: {version!r} is not a semantic version (MAJOR.MINOR.PATCH, e.g. 1.0.0)")
    if not formats:
        raise ReleaseError("formats: choose at least one format")
    unknown = [f for f in formats if f not in FORMATS]
    if unknown:
        raise ReleaseError(f"formats: unknown {', '.join(unknown)}; choose from {', '.join(FORMATS)}")
    if delta is not None and not delta > 0:
        raise ReleaseError("delta: must be positive (ties are never pairs)")
    taken = set(study.releases.filter(version=version, format__in=formats).values_list("format", flat=True))
    if taken:
        raise ReleaseError(f"version: {version} already has {', '.join(sorted(taken))}; releases are immutable, "
                           "choose a new version")
    made = []
    try:
        with transaction.atomic():
            for fmt in formats:
                made.append(DatasetRelease.objects.create(
                    study=study, version=version, format=fmt, changelog=changelog.strip(), created_by=user,
                    delta=(delta or DEFAULT_DELTA) if fmt == "pairs" else None,
                    file_path=f"{study.slug}/{export_filename(study, fmt, version)}"))
    except IntegrityError as exc:  # a concurrent request took the same version first
        raise ReleaseError(f"version: {version} already exists; releases are immutable") from exc
    from annotation.tasks import release_build  # tasks import this module

    ids = [r.pk for r in made]
    transaction.on_commit(lambda: [release_build.delay(pk) for pk in ids])
    return made


def _claim(release_id: int) -> DatasetRelease | None:
    """Mark the release as building, unless it is ready or another worker builds it now."""
    now = timezone.now()
    claimable = Q(status__in=[DatasetRelease.Status.PENDING, DatasetRelease.Status.FAILED]) | Q(
        status=DatasetRelease.Status.BUILDING, started_at__lt=now - STALE_BUILD)
    claimed = DatasetRelease.objects.filter(claimable, pk=release_id).update(
        status=DatasetRelease.Status.BUILDING, started_at=now, progress=0.0, error="")
    return DatasetRelease.objects.select_related("study__rubric_version").get(pk=release_id) if claimed else None


class _ProgressReporter:
    """Writes a build's progress from its own thread, hence its own database connection:
    the build's connection is busy streaming a COPY, which admits no other statement."""

    def __init__(self, release_id: int, total: int):
        self.release_id, self.total = release_id, total
        self.done = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"release-{release_id}-progress", daemon=True)

    def add(self, n: int) -> None:
        self.done += n

    def __enter__(self) -> "_ProgressReporter":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        written = -1
        try:
            while not self._stop.wait(PROGRESS_EVERY_S):
                if self.done != written:
                    written = self.done
                    DatasetRelease.objects.filter(pk=self.release_id, status=DatasetRelease.Status.BUILDING).update(
                        progress=min(written / self.total, 0.99))
        finally:
            connection.close()


def release_build(*, release_id: int) -> DatasetRelease:
    """Write the release's file and record its checksum and size. Idempotent: a ready release
    or one being built elsewhere is returned as it is."""
    release = _claim(release_id)
    if release is None:
        return DatasetRelease.objects.get(pk=release_id)
    fmt = FORMATS[release.format]
    if fmt.unit == "rows":
        total = max(count_rating_rows(release.study), 1)
    else:
        total = max(-(-release.study.items.count() // ITEMS_PER_CHUNK), 1)
    reporter = _ProgressReporter(release.pk, total)
    path = release_path(release)
    if path.exists():
        path.unlink()  # left by a build that died before it was recorded: never published
    try:
        with reporter:
            written = export_to_file(release.study, release.format, path, overwrite=False, progress=reporter.add,
                                     delta=release.delta or DEFAULT_DELTA, dataset_version=release.version)
    except Exception as exc:
        DatasetRelease.objects.filter(pk=release.pk).update(
            status=DatasetRelease.Status.FAILED, error=f"{type(exc).__name__}: {exc}", finished_at=timezone.now())
        raise
    DatasetRelease.objects.filter(pk=release.pk, status=DatasetRelease.Status.BUILDING).update(
        status=DatasetRelease.Status.READY, progress=1.0, sha256=written.sha256, size=written.size,
        finished_at=timezone.now())
    release.refresh_from_db()
    return release


def study_releases(study: Study) -> list[DatasetRelease]:
    return list(study.releases.select_related("created_by").order_by("-created_at", "format"))
