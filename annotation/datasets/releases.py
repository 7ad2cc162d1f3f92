"""Versioned dataset releases: create (queued), build (in a Celery task), download.

A release is one file of one format for one semantic version of a study's dataset; a
version may hold several formats. Releases are immutable: creating an existing
(study, version, format) fails, the file is linked into place only if its name is free,
and a database trigger refuses updates of a ready release.
"""

from __future__ import annotations

import contextlib
import logging
import re
import threading
import time
from datetime import timedelta
from pathlib import Path
from typing import Callable, Iterable

from celery.exceptions import SoftTimeLimitExceeded
from django.conf import settings
from django.db import DatabaseError, IntegrityError, connection, transaction
from django.db.models import Q
from django.utils import timezone

from annotation.datasets import DEFAULT_DELTA, FORMATS, export_filename, export_to_file
from annotation.datasets.card import LICENSES
from annotation.datasets.quotas import build_quota_check
from annotation.datasets.writers import temporaries
from annotation.models import DatasetRelease, Study
from config.celery import registered_task, time_limits, took_too_long
from config.limits import clip, text_problem

# semver.org's own pattern
SEMVER = re.compile(
    r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)"
    r"(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?"
    r"(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?$"
)
log = logging.getLogger(__name__)
PROGRESS_EVERY_S = 0.5
BUILD_TASK = "annotation.tasks.release_build"  # queued by name: annotation.tasks imports this module
# PostgreSQL advisory-lock keys of release builds: this base plus the release id ("RELS" << 32).
BUILD_LOCK_BASE = 0x52454C53 << 32


class ReleaseError(ValueError):
    """A release request that cannot be honoured; the message names the field."""


def releases_dir() -> Path:
    return Path(settings.MEDIA_ROOT) / "releases"


def release_path(release: DatasetRelease) -> Path:
    return releases_dir() / release.file_path


FIRST_VERSION = "0.1.0"


def next_version(study: Study) -> str:
    """The version the release form suggests: the next patch after the study's highest
    release, or 0.1.0 for the first (semver: 1.0.0 is for a dataset declared stable)."""
    best = None
    for v in study.releases.values_list("version", flat=True):
        m = SEMVER.match(v)
        if m:
            key = tuple(int(m.group(i)) for i in (1, 2, 3))
            best = key if best is None or key > best else best
    return FIRST_VERSION if best is None else f"{best[0]}.{best[1]}.{best[2] + 1}"


@transaction.atomic
def releases_create(*, study: Study, version: str, formats: Iterable[str], changelog: str = "",
                    delta: float | None = None, user=None, license: str = "") -> list[DatasetRelease]:
    """Queue one release per format (all or none); each is built by a Celery task after commit.
    `license` (a Hugging Face license id) is required with the `hf` format, whose card states it."""
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
    if license and license not in LICENSES:
        raise ReleaseError(f"license: unknown {license!r}; choose from {', '.join(LICENSES)}")
    if {"hf", "hf-full"} & set(formats) and not license:
        raise ReleaseError("license: a Hugging Face release states its license; choose one")
    if problem := text_problem("release.changelog", changelog.strip()):
        raise ReleaseError(problem)
    build_quota_check(study, len(formats))
    taken = set(study.releases.filter(version=version, format__in=formats).values_list("format", flat=True))
    if taken:
        raise ReleaseError(f"version: {version} already has {', '.join(sorted(taken))}; releases are immutable, "
                           "choose a new version")
    made = []
    try:
        with transaction.atomic():
            for fmt in formats:
                made.append(DatasetRelease.objects.create(
                    study=study, version=version, format=fmt, changelog=changelog.strip(), created_by=user, license=license,
                    delta=(delta or DEFAULT_DELTA) if fmt == "pairs" else None,
                    file_path=f"{study.slug}/{export_filename(study, fmt, version)}"))
    except IntegrityError as exc:  # a concurrent request took the same version first
        raise ReleaseError(f"version: {version} already exists; releases are immutable") from exc
    from annotation.audit import Action, audit_record

    audit_record(actor=user, action=Action.RELEASE, study=study, target=version,
                 detail={"formats": formats, "changelog": changelog.strip()[:500]})
    ids = [r.pk for r in made]
    task = registered_task(BUILD_TASK)
    transaction.on_commit(lambda: [task.delay(pk) for pk in ids])
    return made


def _lock_build(release_id: int) -> bool:
    """Take the release's build lock on this connection's session, if no live build holds it.

    PostgreSQL drops a session's advisory locks the moment its connection goes, so a build
    whose worker was killed holds nothing: its release, left `building`, can be claimed
    again by the redelivered task at once (it used to wait two hours for a staleness
    timeout, and as that task was then acknowledged, nothing ever built it)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_try_advisory_lock(%s)", [BUILD_LOCK_BASE + release_id])
        return bool(cursor.fetchone()[0])


def _unlock_build(release_id: int) -> None:
    with contextlib.suppress(DatabaseError):  # a lost connection has released it already
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_unlock(%s)", [BUILD_LOCK_BASE + release_id])


def _claim(release_id: int) -> DatasetRelease | None:
    """Mark the release as building, unless it is ready or a live build holds its lock.
    The caller holds the lock (taken here) until the build is recorded."""
    if not _lock_build(release_id):
        return None  # another worker builds it now
    # with the lock ours, a release still marked building lost its builder: claim it again
    claimable = Q(status__in=[DatasetRelease.Status.PENDING, DatasetRelease.Status.FAILED,
                              DatasetRelease.Status.BUILDING])
    claimed = DatasetRelease.objects.filter(claimable, pk=release_id).update(
        status=DatasetRelease.Status.BUILDING, started_at=timezone.now(), progress=0.0, error="")
    if not claimed:
        _unlock_build(release_id)
        return None
    return DatasetRelease.objects.select_related("study__rubric_version").get(pk=release_id)


def _remove_leftovers(path: Path) -> None:
    """Files a killed build left for this release (we hold its lock: no live build writes them):
    its temporary, and the final name when it died between linking it and recording it."""
    for temp in temporaries(path):
        temp.unlink(missing_ok=True)
    path.unlink(missing_ok=True)  # never published: the release is not ready


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
    # here, not at the top: the release pages import this module, and the counts' modules import pandas
    from annotation.datasets.tables import ITEMS_PER_CHUNK
    from annotation.reports.ratings import count_rating_rows

    release = _claim(release_id)
    if release is None:
        return DatasetRelease.objects.get(pk=release_id)
    try:
        fmt = FORMATS[release.format]
        if fmt.unit == "rows":
            total = max(count_rating_rows(release.study), 1)
        elif fmt.unit == "items":
            total = max(release.study.items.count(), 1)
        else:
            total = max(-(-release.study.items.count() // ITEMS_PER_CHUNK), 1)
        reporter = _ProgressReporter(release.pk, total)
        path = release_path(release)
        _remove_leftovers(path)
        soft_s, _ = time_limits("builds")
        try:
            with reporter:
                written = export_to_file(release.study, release.format, path, overwrite=False,
                                         progress=_within(soft_s, reporter.add), delta=release.delta or DEFAULT_DELTA,
                                         dataset_version=release.version, license=release.license,
                                         changelog=release.changelog)
        except SoftTimeLimitExceeded:
            _fail(release.pk, took_too_long("builds"))
            return DatasetRelease.objects.get(pk=release.pk)  # failed for good: no retry would be faster
        except Exception as exc:
            _fail(release.pk, f"{type(exc).__name__}: {exc}")
            raise
        DatasetRelease.objects.filter(pk=release.pk, status=DatasetRelease.Status.BUILDING).update(
            status=DatasetRelease.Status.READY, progress=1.0, sha256=written.sha256, size=written.size,
            finished_at=timezone.now())
    finally:
        _unlock_build(release.pk)
    release.refresh_from_db()
    return release


def _fail(release_id: int, error: str) -> None:
    DatasetRelease.objects.filter(pk=release_id).update(status=DatasetRelease.Status.FAILED,
                                                        error=clip("error.text", error), finished_at=timezone.now())


_clock = time.monotonic  # the builds' time limit's clock (a test moves it)


def _within(seconds: int, progress: Callable[[int], None]) -> Callable[[int], None]:
    """`progress`, raising SoftTimeLimitExceeded once the build has run `seconds`: Celery's own soft limit
    needs a prefork worker; this one holds in any pool, between two chunks of the export."""
    deadline = _clock() + seconds

    def report(n: int) -> None:
        progress(n)
        if _clock() > deadline:
            raise SoftTimeLimitExceeded(seconds)
    return report


def releases_requeue_lost(*, held: Callable[[], set[int]], settle_s: float = 5.0) -> list[int]:
    """Send again the build of each release still pending or building that no release_build
    message in the broker covers any more (`held()`: the release ids of those messages) and
    that no live build holds: its message was lost (a Redis restart while it was handed out).
    Two looks `settle_s` apart, so a message in transit is not taken for lost; a build sent
    twice anyway builds once (the lock, then the claim). Returns the release ids sent."""

    def uncovered() -> set[int]:
        waiting = set(DatasetRelease.objects.filter(status__in=[DatasetRelease.Status.PENDING,
                                                                DatasetRelease.Status.BUILDING])
                      .values_list("pk", flat=True))
        return waiting - held() if waiting else set()

    first = uncovered()
    if not first:
        return []
    time.sleep(settle_s)
    sent = []
    _, hard_s = time_limits("builds")
    for release_id in sorted(uncovered() & first):
        if not _lock_build(release_id):
            continue  # a live build holds it
        _unlock_build(release_id)
        # A build killed at its hard time limit leaves its release building with no message: sent
        # again, it would be killed again. It failed; the page says why.
        if DatasetRelease.objects.filter(pk=release_id, status=DatasetRelease.Status.BUILDING,
                                         started_at__lt=timezone.now() - timedelta(seconds=hard_s)).exists():
            _fail(release_id, took_too_long("builds", hard=True))
            log.warning("release %s: its build ran past the hard time limit (%s s); marked failed", release_id, hard_s)
            continue
        log.warning("release %s: its build message was lost by the broker; sent again", release_id)
        registered_task(BUILD_TASK).delay(release_id)
        sent.append(release_id)
    return sent


def study_releases(study: Study) -> list[DatasetRelease]:
    return list(study.releases.select_related("created_by").order_by("-created_at", "format"))
