"""Whether a study routes (judges.services.routing), as a cache flag, and asking for a refresh.

In annotation so that the submit path can ask without importing the judges app: one cache read
per submit, and the task is sent by name, at most once per `delay_s` per study.
"""

from __future__ import annotations

from django.core.cache import cache
from django.db import transaction

FLAG = "routing-on:{}"


def routing_flag_set(study_id: int, on: bool) -> None:
    if on:
        cache.set(FLAG.format(study_id), 1, timeout=None)
    else:
        cache.delete(FLAG.format(study_id))


def routing_refresh_request(study_id: int, delay_s: float = 3.0) -> None:
    if cache.get(FLAG.format(study_id)) and cache.add(f"routing-due:{study_id}", 1, timeout=delay_s):
        from celery import current_app

        transaction.on_commit(lambda: current_app.send_task("judges.tasks.routing_refresh", args=[study_id],
                                                            countdown=delay_s))
