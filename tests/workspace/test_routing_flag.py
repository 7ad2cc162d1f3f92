"""The submit path reads the routing flag from a per-process memo of the cache (annotation.services.routing_flag)."""

from __future__ import annotations

import pytest
from django.core.cache import cache

from annotation.services import routing_flag


@pytest.fixture
def study_id():
    sid = 987_654_321  # no such study: only the flag's keys are touched
    cache.delete(routing_flag.FLAG.format(sid))
    routing_flag._memo.pop(sid, None)
    yield sid
    cache.delete(routing_flag.FLAG.format(sid))
    routing_flag._memo.pop(sid, None)


def test_the_process_that_sets_the_flag_sees_it_at_once(study_id):
    assert routing_flag._routing_on(study_id) is False
    routing_flag.routing_flag_set(study_id, True)
    assert routing_flag._routing_on(study_id) is True
    routing_flag.routing_flag_set(study_id, False)
    assert routing_flag._routing_on(study_id) is False


def test_a_flag_set_by_another_process_is_seen_once_the_memo_is_old(study_id, monkeypatch):
    clock = [1000.0]
    monkeypatch.setattr(routing_flag.time, "monotonic", lambda: clock[0])
    assert routing_flag._routing_on(study_id) is False
    cache.set(routing_flag.FLAG.format(study_id), 1, timeout=None)  # another web process switched it on
    clock[0] += routing_flag.FLAG_MEMO_S / 2
    assert routing_flag._routing_on(study_id) is False  # within the memo's time: the cache is not asked
    clock[0] += routing_flag.FLAG_MEMO_S
    assert routing_flag._routing_on(study_id) is True
