"""A batch run survives its worker: a real `celery -A config worker` is SIGKILLed while the run's
batch is at the provider (the loopback OpenAI Batch API server), a new worker is started, and the
run ends with each slot scored once and each request sent and answered once.

Everything a batch run knows is in the database (judges.services.batches): the new worker's
lost-work sweep enqueues the run's unscored items, whose chunks find their requests submitted,
and the poll (redelivered, or scheduled again) reads the batch when it ends."""

from __future__ import annotations

import re
import time

import pytest
import redis
from django.conf import settings

from tests.doubles.batch_api_server import running_batch_server
from judges.models import JudgeBatch, JudgeBatchRequest
from judges.services.runs import judge_run_start

from tests.workers import kill_worker, start_worker, stop_worker

from .conftest import wait_for, wait_run_ends
from .test_runs_worker import assert_each_slot_once, one_output_items

pytestmark = pytest.mark.django_db(transaction=True)

QUEUE = "judges-batch-kill-test"
VISIBILITY_S = 2
WORKER = {"queues": QUEUE, "redis_url": settings.REDIS_URL, "visibility_s": VISIBILITY_S, "name": "batchkill",
          "pool": "threads"}
KEY_ENV = "CONCORD_TEST_BATCH_API_KEY"


def test_sigkill_while_the_batch_is_at_the_provider_then_a_new_worker_finishes_the_run(
        make_study, make_judge, tmp_path, monkeypatch):
    redis.Redis.from_url(settings.REDIS_URL).delete(QUEUE)
    log = tmp_path / "workers.log"
    first = second = None
    with running_batch_server("openai", process_s=6.0, error_every=7) as server:
        monkeypatch.setenv(KEY_ENV, server.api_key)
        study = make_study("rrgen-001", items_text=one_output_items(6))
        judge = make_judge("batch-kill", endpoint=server.base_url, api_key_env=KEY_ENV, queue=QUEUE,
                           method_options={"batch": True, "batch_poll_s": 0.5})
        try:
            first = start_worker(log, **WORKER)
            run = judge_run_start(study=study, judge=judge)
            wait_for(lambda: JudgeBatch.objects.filter(run=run).exclude(provider_id="").exists(), 60,
                     what="the first worker to submit a batch")
            kill_worker(first)
            at_kill = server.state().batches_made
            assert not JudgeBatch.objects.filter(run=run, ended=True).exists(), "the batch ended before the kill"
            time.sleep(VISIBILITY_S + 1)  # let the dead worker's deliveries age past the visibility timeout
            second = start_worker(log, **WORKER)
            try:
                wait_run_ends(run, timeout=120)
            except AssertionError as exc:
                raise AssertionError(f"{exc}\n{log.read_text()[-6000:]}")
        finally:
            stop_worker(first)
            stop_worker(second)
        state = server.state()
    text = log.read_text()
    print(f"killed with {at_kill} batch(es) at the provider; batches made {state.batches_made}; "
          f"requests answered {sum(state.answered.values())} for {len(state.answered)} custom_ids; "
          f"run {run.status}: {run.n_scored} scored of {run.n_expected}, ${run.cost_usd:.6f}")
    assert run.status == "done", text[-3000:]
    assert_each_slot_once(run)
    assert run.n_scored == 30
    assert set(state.answered.values()) == {1}  # no request was answered twice
    assert JudgeBatchRequest.objects.filter(run=run).exclude(status="succeeded").count() == 0
    assert state.refusals == []
    # the scenario happened: two worker processes did this run's work, the second after the kill
    pids = set(re.findall(r"batchkill-\d+@", text))
    assert len(pids) == 2
    assert re.search(r"batch_poll\[[0-9a-f-]+\] succeeded", text)
