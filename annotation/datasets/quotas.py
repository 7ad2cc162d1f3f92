"""A study's quotas on the work its readers can ask of the workers and the database: release builds
an hour and at once, live exports an hour (config/limits.py). Past one: QuotaExceeded, answered 429.

Counted from what is stored anyway (the releases, the audit log's download entries): no counter
to keep in step.
"""

from __future__ import annotations

from datetime import timedelta

from django.utils import timezone

from annotation.models import AuditEntry, DatasetRelease, Study
from config.limits import QuotaExceeded, limit


def _hour_ago():
    return timezone.now() - timedelta(hours=1)


def build_quota_check(study: Study, adding: int) -> None:
    """QuotaExceeded when `adding` more release builds would pass the study's hourly or concurrent
    limit. Call inside the transaction that creates them: the study's row is locked until it ends,
    so two requests cannot both pass on the same count."""
    Study.objects.select_for_update().filter(pk=study.pk).exists()
    per_hour, at_once = limit("releases.per_study_per_hour"), limit("builds.per_study_at_once")
    recent = DatasetRelease.objects.filter(study=study, created_at__gte=_hour_ago()).count()
    if recent + adding > per_hour:
        raise QuotaExceeded("releases.per_study_per_hour",
                            f"releases: at most {per_hour} release builds per study an hour ({recent} in the last "
                            f"hour, {adding} more asked); try again later")
    waiting = DatasetRelease.objects.filter(study=study, status__in=[DatasetRelease.Status.PENDING,
                                                                     DatasetRelease.Status.BUILDING]).count()
    if waiting + adding > at_once:
        raise QuotaExceeded("builds.per_study_at_once",
                            f"releases: at most {at_once} builds of a study at once ({waiting} waiting or building, "
                            f"{adding} more asked); try again when they are done")


def export_quota_check(study: Study) -> None:
    """QuotaExceeded when the study's live exports of the last hour reached their limit (each is
    audited as a live data download)."""
    per_hour = limit("exports.per_study_per_hour")
    recent = AuditEntry.objects.filter(study=study, action=AuditEntry.Action.DATA_DOWNLOAD, detail__live=True,
                                       at__gte=_hour_ago()).count()
    if recent >= per_hour:
        raise QuotaExceeded("exports.per_study_per_hour",
                            f"exports: at most {per_hour} live exports per study an hour; try again later, "
                            "or publish a release and download its file")
