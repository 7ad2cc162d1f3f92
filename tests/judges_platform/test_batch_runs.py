"""Batch runs through loopback servers that follow OpenAI's Batch API and Anthropic's Message Batches
(tests/doubles/batch_api_server.py), with the real Celery worker (thread) on Redis: expiry, partial failure and
a batch that fails validation are sent again; each slot is scored once; cost at batch prices."""

from __future__ import annotations

import pytest

from tests.doubles.batch_api_server import running_batch_server
from judges.models import JudgeBatch, JudgeBatchRequest, JudgeScore
from judges.services.batches import batch_run_advance
from judges.services.runs import judge_run_start

from .conftest import wait_run_ends
from .test_runs_worker import assert_each_slot_once, one_output_items

pytestmark = pytest.mark.django_db(transaction=True)

KEY_ENV = "CONCORD_TEST_BATCH_API_KEY"


def batch_judge(make_judge, server, api: str, name: str, **extra):
    """An OpenAI-style judge (the generic provider) or an Anthropic one, pointed at the loopback server."""
    provider = {"provider": "anthropic", "model": "claude-sonnet-4-5"} if api == "anthropic" else {}
    return make_judge(name, endpoint=server.base_url, api_key_env=KEY_ENV, price_in_per_m=2.0, price_out_per_m=8.0,
                      method_options={"batch": True, "batch_poll_s": 0.2, **extra}, **provider)


@pytest.mark.parametrize("api", ["openai", "anthropic"])
def test_a_batch_run_survives_expiry_and_partial_failure_and_scores_each_slot_once(
        api, celery_worker_session, make_study, make_judge, monkeypatch):
    with running_batch_server(api, process_s=0.3, expire_after=6, error_every=5) as server:
        monkeypatch.setenv(KEY_ENV, server.api_key)
        study = make_study("rrgen-001", items_text=one_output_items(4))
        run = judge_run_start(study=study, judge=batch_judge(make_judge, server, api, f"batch-{api}"))
        assert run.n_expected == 20
        wait_run_ends(run, timeout=90)
        state = server.state()

    assert run.status == "done", run.error
    assert_each_slot_once(run)
    assert run.n_scored == 20 and run.n_error == 0
    assert state.refusals == []  # every body and header was as the provider's documentation asks
    batches = list(JudgeBatch.objects.filter(run=run))
    assert len(batches) >= 2 and all(b.ended for b in batches)
    first = batches[0]
    assert first.status == ("expired" if api == "openai" else "ended")
    # the expired and failed requests were sent again, and each request was answered exactly once
    assert max(state.seen.values()) >= 2
    assert set(state.answered.values()) == {1}
    assert JudgeBatchRequest.objects.filter(run=run, status="succeeded").count() == len(state.answered)
    # cost at batch prices: half of $2 / $8 per million tokens, on the server's own usage counts
    expected = (state.prompt_tokens * 1.0 + state.completion_tokens * 4.0) / 1e6
    assert run.tokens_in == state.prompt_tokens and run.tokens_out == state.completion_tokens
    assert run.cost_usd == pytest.approx(expected)


def test_a_batch_that_fails_validation_is_sent_again(celery_worker_session, make_study, make_judge, monkeypatch):
    with running_batch_server("openai", process_s=0.3, fail_validation=True) as server:
        monkeypatch.setenv(KEY_ENV, server.api_key)
        study = make_study("rrgen-001", items_text=one_output_items(2))
        run = judge_run_start(study=study, judge=batch_judge(make_judge, server, "openai", "batch-invalid"))
        wait_run_ends(run, timeout=60)
    assert run.status == "done", run.error
    assert_each_slot_once(run)
    failed = JudgeBatch.objects.filter(run=run, status="failed").get()
    assert "scripted validation failure" in failed.error
    assert JudgeBatchRequest.objects.filter(run=run, attempts=1, status="succeeded").count() == 10


def test_reading_a_batch_result_twice_changes_nothing(celery_worker_session, make_study, make_judge, monkeypatch):
    with running_batch_server("anthropic", process_s=0.2) as server:
        monkeypatch.setenv(KEY_ENV, server.api_key)
        study = make_study("rrgen-001", items_text=one_output_items(2))
        run = judge_run_start(study=study, judge=batch_judge(make_judge, server, "anthropic", "batch-twice"))
        wait_run_ends(run, timeout=60)
        assert run.status == "done", run.error
        before = list(JudgeBatchRequest.objects.filter(run=run).order_by("id").values_list("status", "response"))
        scores = list(JudgeScore.objects.filter(run=run).order_by("id").values_list("id", "value"))
        # as if a poller died after the provider said "ended" and before it marked the batch read
        JudgeBatch.objects.filter(run=run).update(ended=False)
        run.status = "running"
        run.save(update_fields=["status"])
        report = batch_run_advance(run_id=run.pk)
    assert report["ended"] >= 1 and report["ingested"] == 0
    assert list(JudgeBatchRequest.objects.filter(run=run).order_by("id").values_list("status", "response")) == before
    assert list(JudgeScore.objects.filter(run=run).order_by("id").values_list("id", "value")) == scores


def test_a_batch_judge_must_match_its_provider():
    from judges.config import JudgeConfigError, validate_judge

    base = {"name": "b", "model": "m", "endpoint": "http://127.0.0.1:9/v1", "method_options": {"batch": True}}
    with pytest.raises(JudgeConfigError, match="anthropic's batch API takes anthropic's requests"):
        validate_judge({**base, "backend": "openai", "method_options": {"batch": True, "batch_api": "anthropic"}})
    with pytest.raises(JudgeConfigError, match="batch APIs are for hosted providers"):
        validate_judge({**base, "backend": "transformers", "endpoint": ""})
    assert validate_judge({**base, "provider": "anthropic", "sampling": {"max_tokens": 64}})["method_options"]["batch"]
