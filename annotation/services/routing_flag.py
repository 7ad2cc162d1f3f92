"""Whether a study routes (judges.services.routing), as a cache flag, and asking for a refresh.

In annotation so that the submit path can ask without importing the judges app. The flag is read
from the cache at most once per FLAG_MEMO_S per process and study (every submit asks; a Redis round
trip each was a sixtieth of the rating loop's CPU), so a flag set in another process is seen within
that time; the process that sets it sees it at once. The task is sent by name, at most once per
`delay_s` per study.
"""

from __future__ import annotations

import time

from django.core.cache import cache
from django.db import transaction

from annotation.background_requests import background_requests_allowed

FLAG = "routing-on:{}"
FLAG_MEMO_S = 2.0
_memo: dict[int, tuple[bool, float]] = {}  # study id -> (flag, monotonic time read)


def routing_flag_set(study_id: int, on: bool) -> None:
    if on:
        cache.set(FLAG.format(study_id), 1, timeout=None)
    else:
        cache.delete(FLAG.format(study_id))
    _memo[study_id] = (on, time.monotonic())


def _routing_on(study_id: int) -> bool:
    now = time.monotonic()
    on, read_at = _memo.get(study_id, (False, float("-inf")))
    if now - read_at >= FLAG_MEMO_S:
        on = bool(cache.get(FLAG.format(study_id)))
        _memo[study_id] = (on, now)
    return on


def routing_refresh_request(study_id: int, delay_s: float = 3.0) -> None:
    if background_requests_allowed() and _routing_on(study_id) and cache.add(f"routing-due:{study_id}", 1, timeout=delay_s):
        from celery import current_app

        transaction.on_commit(lambda: current_app.send_task("judges.tasks.routing_refresh", args=[study_id],
                                                            countdown=delay_s))
