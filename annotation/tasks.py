"""Celery tasks of the annotation app: each takes ids, re-fetches, and calls a service."""

from __future__ import annotations

from celery import shared_task

from annotation.releases import release_build as release_build_service


@shared_task(name="annotation.tasks.release_build", acks_late=True, reject_on_worker_lost=True,
             ignore_result=True)
def release_build(release_id: int) -> str:
    """Build one dataset release. Idempotent: a ready release is left as it is, so a
    redelivered task (acks_late) costs one query."""
    return release_build_service(release_id=release_id).status
