"""A large study's report is computed by a Celery worker, not in the web request that asks for it.

    report_for_request(study) -> (report, out_of_date)               # raises ReportPending or ReportFailed
    sections_for_request(study, report) -> (sections, out_of_date)   # the other apps' sections, likewise
    report_compute(study_id), sections_compute(study_id)             # the tasks' bodies

At millions of ratings the report takes tens of seconds (bench report_x10): longer than a reverse
proxy waits for a response, and the web worker would fork for its agreement section (Beside). A
request that finds no current report for a study of REPORT_BACKGROUND_RATINGS ratings or more
queues `annotation.tasks.report_compute`, one per study at a time (a cache lock: polls and other
readers queue nothing more, and a study whose raters keep submitting is not computed twice at
once). Meanwhile readers get the latest report computed before, marked out of date, or, when there
is none, ReportPending with the expected time: the page shows a progress bar and polls until the
worker has cached one. A failure is kept for a while and not queued again on every poll; readers see
it only when there is no earlier report to serve.
The size is the database triggers' change count (annotation.reports.rating_changes): a few rows,
not a count of the ratings.

The other apps' sections (annotation.reports.sections: judges against humans, trust in the judges,
answers' facets) each read the ratings again, so a large study's are computed by a worker too: with
the report by the same task, or alone (`annotation.tasks.report_sections_compute`) when only what
they read has changed (a judge run finished). Until then the sections computed before are shown.
"""

from __future__ import annotations

import time
from typing import Any, Callable

from celery import current_app
from celery.exceptions import SoftTimeLimitExceeded
from django.conf import settings
from django.core.cache import cache
from django.db import transaction

from annotation.models import Study
from annotation.reports.pending import ReportFailed, ReportPending
from annotation.reports.rating_changes import study_changes
from annotation.reports.sections import extra_sections, sections_cache_key
from annotation.reports.study import CACHE_SECONDS, cached_study_report, report_cache_key, study_report
from config.celery import took_too_long

QUEUED_SECONDS = 10 * 60  # at least; a lock whose worker died expires, and the next reader queues again
FAILED_SECONDS = 10 * 60  # a failure is shown this long before a reader may try again
# Expected time per million ratings (bench report_x10 on 2 cores: 4.6 s at 1M, 43.6 s at 10M), for
# the progress bar only.
SECONDS_PER_MILLION = 4.5


REPORT, SECTIONS = "report", "sections"
TASKS = {REPORT: "annotation.tasks.report_compute", SECTIONS: "annotation.tasks.report_sections_compute"}


def _keys(study: Study, kind: str = REPORT) -> tuple[str, str, str]:
    """Per study and kind: the lock of a queued computation, the last failure, the key of the latest result."""
    base = f"concord:report-background:v1:{study.pk}:{study.created_at.timestamp()}"
    if kind != REPORT:
        base += f":{kind}"
    return base + ":queued", base + ":failed", base + ":latest"


def expected_seconds(ratings: int) -> float:
    return 2.0 + SECONDS_PER_MILLION * ratings / 1e6


def report_for_request(study: Study) -> tuple[dict[str, Any], bool]:
    """The study's report and whether it is out of date: the current one from the cache, or
    computed now for a small study. For a large one a computation is queued (one per study at a
    time, none while the last one's failure is shown) and the latest report computed before is
    returned, out of date; with none: ReportFailed if the last computation failed, else
    ReportPending."""
    return _for_request(study, REPORT, report_cache_key(study), lambda: study_report(study))


def sections_for_request(study: Study, report: dict[str, Any]) -> tuple[list[dict[str, Any]], bool]:
    """The other apps' sections of the current `report` as report_for_request gives the report
    (sections that do not name their inputs are computed in the request, whatever the size)."""
    key = sections_cache_key(study)
    if key is None:
        return extra_sections(study, report), False
    return _for_request(study, SECTIONS, key, lambda: extra_sections(study, report))


def latest_sections(study: Study) -> list[dict[str, Any]]:
    """The sections a worker computed last for the study (none yet: no sections)."""
    return cache.get(cache.get(_keys(study, SECTIONS)[2]) or "-") or []


def _for_request(study: Study, kind: str, key: str, compute: Callable[[], Any]) -> tuple[Any, bool]:
    found = cache.get(key)
    if found is not None:
        return found, False
    size = study_changes(study)
    if size < settings.REPORT_BACKGROUND_RATINGS:
        found = compute()
        cache.set(key, found, CACHE_SECONDS)
        return found, False
    queued, failed, latest = _keys(study, kind)
    message = cache.get(failed)
    now, expected = time.time(), expected_seconds(size)
    # A worker killed mid-way (out of memory) records nothing: its lock expires and a reader queues again.
    if message is None and cache.add(queued, now, max(QUEUED_SECONDS, 4 * expected)):
        transaction.on_commit(lambda: current_app.send_task(TASKS[kind], args=[study.pk]))
    older = cache.get(cache.get(latest) or "-")
    if older is not None:
        return older, True
    if message is not None:
        raise ReportFailed(message)
    raise ReportPending(cache.get(queued) or now, expected)


def report_compute(study_id: int) -> None:
    """Compute and cache the study's current report, then its sections unless another task is on them
    (the task's body); a failure is kept for the page."""
    study = _study(study_id)
    if study is None:
        return
    _compute(study, REPORT, report_cache_key, study_report)
    queued = _keys(study, SECTIONS)[0]
    if cache.add(queued, time.time(), QUEUED_SECONDS):  # (a reader finding them missing queues nothing more)
        _compute(study, SECTIONS, sections_cache_key, _sections_of_current_report)


def sections_compute(study_id: int) -> None:
    """Compute and cache the study's current report sections (the task's body)."""
    study = _study(study_id)
    if study is not None:
        _compute(study, SECTIONS, sections_cache_key, _sections_of_current_report)


def _sections_of_current_report(study: Study) -> list[dict[str, Any]]:
    return extra_sections(study, cached_study_report(study))


def _study(study_id: int) -> Study | None:
    return Study.objects.filter(pk=study_id).select_related("rubric_version").first()


def _compute(study: Study, kind: str, key_of: Callable[[Study], str | None], compute: Callable[[Study], Any]) -> None:
    queued, failed, latest = _keys(study, kind)
    try:
        key = key_of(study)  # before the read: a change during it makes a new key
        if key is None:
            return
        if cache.get(key) is None:
            cache.set(key, compute(study), CACHE_SECONDS)
        cache.set(latest, key, CACHE_SECONDS)
    except SoftTimeLimitExceeded:
        cache.set(failed, took_too_long("builds"), FAILED_SECONDS)
        raise
    except Exception as exc:
        cache.set(failed, f"{type(exc).__name__}: {exc}"[:500], FAILED_SECONDS)
        raise
    finally:
        cache.delete(queued)
