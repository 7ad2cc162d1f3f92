"""A real `celery -A config worker` process is SIGKILLed mid-run; a second one finishes the run.

acks_late + the broker's visibility timeout redeliver the killed worker's chunks; the
unique (run, output, criterion) and ON CONFLICT DO NOTHING make the redelivered chunks
score nothing twice.
"""

from __future__ import annotations

import json
import re
import time

import pytest
import redis
from django.conf import settings
from django.db.models import Count

from judges.models import JudgeScore
from judges.services.runs import judge_run_start

from tests.workers import kill_worker, start_worker, stop_worker

from .conftest import wait_for, wait_run_ends

pytestmark = pytest.mark.django_db(transaction=True)

QUEUE = "judges-kill-test"
VISIBILITY_S = 2
# the machine's Redis, a queue no other worker reads; redeliver a dead worker's unacked chunks quickly
WORKER = {"queues": QUEUE, "redis_url": settings.REDIS_URL, "visibility_s": VISIBILITY_S, "name": "killtest",
          "pool": "threads"}


def items(n: int) -> str:
    return "\n".join(json.dumps({"id": f"k-{i:03d}", "context": f"Review {i}: slow lifts, kind staff.",
                                 "outputs": [{"system": "s", "content": f"Thanks for review {i}."}]})
                     for i in range(n)) + "\n"


def held(log: str) -> set[str]:
    """The judge_chunk tasks a worker's log shows received and not yet finished."""
    received = set(re.findall(r"judge_chunk\[([0-9a-f-]+)\] received", log))
    return received - set(re.findall(r"judge_chunk\[([0-9a-f-]+)\] (?:succeeded|raised|retry)", log))


def test_sigkill_mid_run_then_a_new_worker_leaves_exactly_one_score_per_slot(make_study, make_judge, tmp_path):
    from judges.fakeserver import running_fake_server

    redis.Redis.from_url(settings.REDIS_URL).delete(QUEUE)  # nothing left from an earlier session
    study = make_study("rrgen-001", items_text=items(30))
    log = tmp_path / "workers.log"
    first = second = None
    with running_fake_server(latency_s=0.1) as server:
        judge = make_judge(endpoint=server.base_url, queue=QUEUE, concurrency=2, method_options={"chunk_size": 2})
        try:
            first = start_worker(log, **WORKER)
            run = judge_run_start(study=study, judge=judge)
            assert run.n_expected == 150
            # killed while it holds a chunk: one it has received and not finished (a CI run killed it in the gap
            # between two, and nothing was delivered again)
            wait_for(lambda: JudgeScore.objects.filter(run=run).count() >= 10 and held(log.read_text()), 60,
                     what="the first worker to score and hold a chunk")
            kill_worker(first)
            partial = JudgeScore.objects.filter(run=run).count()
            assert partial < 150, "the run ended before the kill; make it slower"
            # A starting worker restores unacked messages older than the visibility timeout (then only
            # every ~100 s): let the dead worker's deliveries age past it first.
            time.sleep(VISIBILITY_S + 1)

            second = start_worker(log, **WORKER)
            try:
                wait_run_ends(run, timeout=120)
            except AssertionError as exc:
                counts = JudgeScore.objects.filter(run=run).count()
                raise AssertionError(f"{exc}; partial at kill {partial}, now {counts}\n{log.read_text()[-6000:]}")
        finally:
            stop_worker(first)
            stop_worker(second)
    assert run.status == "done", log.read_text()[-3000:]
    assert JudgeScore.objects.filter(run=run).count() == 150
    dupes = JudgeScore.objects.filter(run=run).values("output_id", "criterion").annotate(n=Count("id")).filter(n__gt=1)
    assert not dupes.exists()
    assert run.n_scored == 150
    # the scenario really happened: some chunk was delivered to the killed worker and again to the new one
    received = re.findall(r"judge_chunk\[([0-9a-f-]+)\] received", log.read_text())
    assert len(received) > len(set(received))
