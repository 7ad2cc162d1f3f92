"""The sections other apps add to the study report (settings.REPORT_SECTIONS), kept in the cache by
what they read.

Each section reads the study's ratings again (judges against humans, the trust in the judges, the
split by participants' answers): at ten million ratings that is a read of tens of seconds per
section, which the report page paid on every view. A section function says what else it reads with
an `inputs(study) -> str` attribute (the judges' finished runs, the participants' answers); the
sections are kept under a key of the ratings' change count, the study's settings and every
section's inputs, so a new rating, a finished judge run or a new answer computes them again, and
nothing else does: a section that names its inputs reads the study, not the report it is given (whose
acceptance flags depend on the reader's threshold). A section without `inputs` cannot be kept: then
every view computes them all, with the report as the reader sees it.
"""

from __future__ import annotations

import hashlib
from typing import Any, Callable, Mapping

from django.conf import settings
from django.core.cache import cache
from django.utils.module_loading import import_string

from annotation.models import Study
from annotation.reports.ratings import frames_kept, ratings_fingerprint

CACHE_SECONDS = 24 * 3600

Section = Callable[[Study, Mapping[str, Any]], dict[str, Any] | None]


def _sections() -> list[Section]:
    return [import_string(entry) if isinstance(entry, str) else entry
            for entry in getattr(settings, "REPORT_SECTIONS", [])]


def extra_sections(study: Study, report: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Sections other apps add to the report (settings.REPORT_SECTIONS: callables or dotted paths
    taking (study, report) and returning None or {"title", "template", "context"})."""
    found = []
    with frames_kept():  # (each section reads the study's ratings)
        for fn in _sections():
            section = fn(study, report)
            if section:
                found.append(section)
    return found


def sections_cache_key(study: Study) -> str | None:
    """The key of the study's sections as their inputs stand now; None when a section does not
    name its inputs."""
    parts = [ratings_fingerprint(study), str(study.rubric_version_id), str(study.consensus_min_raters)]
    for fn in _sections():
        inputs = getattr(fn, "inputs", None)
        if inputs is None:
            return None
        parts.append(f"{fn.__module__}.{fn.__qualname__}={inputs(study)}")
    return "concord:report-sections:v1:" + hashlib.sha256("\n".join(parts).encode()).hexdigest()


def cached_extra_sections(study: Study, report: Mapping[str, Any]) -> list[dict[str, Any]]:
    """extra_sections, computed again only when what they read changes."""
    key = sections_cache_key(study)
    if key is None:
        return extra_sections(study, report)
    found = cache.get(key)
    if found is None:
        found = extra_sections(study, report)
        cache.set(key, found, CACHE_SECONDS)
    return found
