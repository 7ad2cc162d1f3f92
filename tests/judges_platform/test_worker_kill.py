"""A real `celery -A config worker` process is SIGKILLed mid-run; a second one finishes the run.

acks_late + the broker's visibility timeout redeliver the killed worker's chunks; the
unique (run, output, criterion) and ON CONFLICT DO NOTHING make the redelivered chunks
score nothing twice.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import redis
from django.conf import settings
from django.db.models import Count

from judges.models import JudgeScore
from judges.services.runs import judge_run_start

from tests.conftest import current_database_url

from .conftest import wait_for, wait_run_ends

pytestmark = pytest.mark.django_db(transaction=True)

QUEUE = "judges-kill-test"
VISIBILITY_S = 2
REPO = Path(__file__).resolve().parents[2]


def worker_env() -> dict[str, str]:
    env = dict(os.environ)
    env.update(DATABASE_URL=current_database_url(),
               REDIS_URL=settings.REDIS_URL, CONCORD_TESTING="1", MEDIA_ROOT=str(settings.MEDIA_ROOT),
               CELERY_VISIBILITY_TIMEOUT=str(VISIBILITY_S))  # redeliver a dead worker's unacked chunks quickly
    return env


def start_worker(log: Path) -> subprocess.Popen:
    cmd = [str(Path(sys.executable).with_name("celery")), "-A", "config", "worker", "-Q", QUEUE, "-P", "threads",
           "-c", "2", "--without-gossip", "--without-mingle", "--without-heartbeat", "-l", "info",
           "-n", f"killtest-{time.monotonic_ns()}@%h"]
    # its own session, so the kill reaches the whole process group of this worker and nothing else
    return subprocess.Popen(cmd, cwd=REPO, env=worker_env(), stdout=log.open("ab"), stderr=subprocess.STDOUT,
                            start_new_session=True)


def items(n: int) -> str:
    return "\n".join(json.dumps({"id": f"k-{i:03d}", "context": f"Review {i}: slow lifts, kind staff.",
                                 "outputs": [{"system": "s", "content": f"Thanks for review {i}."}]})
                     for i in range(n)) + "\n"


def test_sigkill_mid_run_then_a_new_worker_leaves_exactly_one_score_per_slot(make_study, make_judge, tmp_path):
    from judges.fakeserver import running_fake_server

    redis.Redis.from_url(settings.REDIS_URL).delete(QUEUE)  # nothing left from an earlier session
    study = make_study("rrgen-001", items_text=items(30))
    log = tmp_path / "workers.log"
    first = second = None
    with running_fake_server(latency_s=0.1) as server:
        judge = make_judge(endpoint=server.base_url, queue=QUEUE, concurrency=2, method_options={"chunk_size": 2})
        try:
            first = start_worker(log)
            run = judge_run_start(study=study, judge=judge)
            assert run.n_expected == 150
            wait_for(lambda: JudgeScore.objects.filter(run=run).count() >= 10, 60, what="the first worker to score")
            os.killpg(first.pid, signal.SIGKILL)
            first.wait(10)
            partial = JudgeScore.objects.filter(run=run).count()
            assert partial < 150, "the run ended before the kill; make it slower"
            # A starting worker restores unacked messages older than the visibility timeout (then only
            # every ~100 s): let the dead worker's deliveries age past it first.
            time.sleep(VISIBILITY_S + 1)

            second = start_worker(log)
            try:
                wait_run_ends(run, timeout=120)
            except AssertionError as exc:
                counts = JudgeScore.objects.filter(run=run).count()
                raise AssertionError(f"{exc}; partial at kill {partial}, now {counts}\n{log.read_text()[-6000:]}")
        finally:
            for proc in (first, second):
                if proc is not None and proc.poll() is None:
                    os.killpg(proc.pid, signal.SIGTERM)
                    try:
                        proc.wait(15)
                    except subprocess.TimeoutExpired:
                        os.killpg(proc.pid, signal.SIGKILL)
    assert run.status == "done", log.read_text()[-3000:]
    assert JudgeScore.objects.filter(run=run).count() == 150
    dupes = JudgeScore.objects.filter(run=run).values("output_id", "criterion").annotate(n=Count("id")).filter(n__gt=1)
    assert not dupes.exists()
    assert run.n_scored == 150
    # the scenario really happened: some chunk was delivered to the killed worker and again to the new one
    received = re.findall(r"judge_chunk\[([0-9a-f-]+)\] received", log.read_text())
    assert len(received) > len(set(received))
