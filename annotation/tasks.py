"""Celery tasks of the annotation app: each takes ids, re-fetches, and calls a service."""

from __future__ import annotations

from celery import shared_task

# Services are imported inside each task: the release builder pulls in pandas, SciPy and pyarrow (about
# 1.5 s of CPU), which a worker that never builds a release need not pay at every start.


@shared_task(name="annotation.tasks.release_build", acks_late=True, reject_on_worker_lost=True,
             ignore_result=True)
def release_build(release_id: int) -> str:
    """Build one dataset release. Idempotent: a ready release is left as it is, so a
    redelivered task (acks_late) costs one query."""
    from annotation.datasets.releases import release_build as build

    return build(release_id=release_id).status


def broker_held_builds() -> set[int]:
    """Release ids of the release_build messages the broker holds (queued, or delivered and unacked)."""
    from celery import current_app as app

    from config.broker import broker_task_args
    from config.celery import kind_queue

    held = set()
    for args in broker_task_args(release_build.name, [kind_queue(release_build.name), app.conf.task_default_queue]):
        try:
            held.add(int(args[0]))
        except (ValueError, TypeError, IndexError):
            continue
    return held


@shared_task(name="annotation.tasks.requeue_lost_builds", ignore_result=True)
def requeue_lost_builds(settle_s: float = 5.0) -> list[int]:
    """Send again the builds whose messages the broker lost (config/celery.py RequeueLostWork)."""
    from annotation.datasets.releases import releases_requeue_lost

    return releases_requeue_lost(held=broker_held_builds, settle_s=settle_s)


@shared_task(name="annotation.tasks.participant_ids_purge", ignore_result=True)
def participant_ids_purge() -> int:
    """Purge the panel and session ids whose study's retention period ran out (Celery beat, hourly).
    No arguments: it finds its work; idempotent: a purged participant is never touched again."""
    from annotation.services.participant_data import participant_ids_purge as purge

    return purge()


@shared_task(name="annotation.tasks.studies_close_past_deadline", ignore_result=True)
def studies_close_past_deadline() -> int:
    """Close every open or paused study whose deadline has passed (Celery beat, every minute).
    No arguments; idempotent: a closed study is left as it is."""
    from annotation.services.phases import studies_close_past_deadline as close

    return close()


@shared_task(name="annotation.tasks.report_compute", ignore_result=True)
def report_compute(study_id: int) -> None:
    """Compute and cache a large study's report for its readers (annotation.reports.background)."""
    from annotation.reports.background import report_compute as compute

    compute(study_id)


@shared_task(name="annotation.tasks.report_sections_compute", ignore_result=True)
def report_sections_compute(study_id: int) -> None:
    """Compute and cache a large study's report sections from other apps (annotation.reports.background)."""
    from annotation.reports.background import sections_compute

    sections_compute(study_id)
