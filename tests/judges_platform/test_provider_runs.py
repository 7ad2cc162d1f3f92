"""Judge runs end to end through a real Celery worker and the strict per-provider servers: scores
stored from the provider's own answer shape, answers cut off by the cap counted as truncated."""
from __future__ import annotations

import pytest
from django.urls import reverse

from judges.models import JudgeScore
from judges.services.configs import judge_config_save
from judges.services.runs import judge_run_start
from tests.doubles.strict_provider_server import running_strict_server

from .conftest import wait_run_ends

pytestmark = pytest.mark.django_db(transaction=True)

FAST = {"max_retries": 1, "backoff_base_s": 0.01, "backoff_max_s": 0.05, "timeout_s": 10}


def test_anthropic_structured_run_and_a_starved_reasoning_model(celery_worker_session, make_study, monkeypatch,
                                                                 client_for, admin_user):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-0000")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-0000")
    study = make_study("fulltext-004")
    n_outputs = sum(len(i.outputs.all()) for i in study.items.all())
    with running_strict_server("anthropic") as claude_srv, running_strict_server("openai") as openai_srv:
        claude, _ = judge_config_save(data={
            "name": "claude", "provider": "anthropic", "model": "claude-sonnet-4-5", "endpoint": claude_srv.base_url,
            "method": "per_criterion", "structured_output": True, "sampling": {"max_tokens": 200, "temperature": 0},
            "price_in_per_m": 3.0, "price_out_per_m": 15.0, "backend_options": FAST,
            "method_options": {"chunk_size": 8, "use_cache": False}})
        starved, _ = judge_config_save(data={
            "name": "gpt5", "provider": "openai", "model": "gpt-5-mini", "endpoint": openai_srv.base_url,
            "method": "per_criterion", "sampling": {"max_tokens": 200, "reasoning_tokens": 100},
            "backend_options": FAST, "method_options": {"chunk_size": 8, "use_cache": False}})
        run = wait_run_ends(judge_run_start(study=study, judge=claude))
        cut = wait_run_ends(judge_run_start(study=study, judge=starved))
        assert claude_srv.refusals == [] and openai_srv.refusals == []
        bodies = [b for _, _, b in claude_srv.requests]
    assert run.status == "done", run.error
    assert run.n_scored == run.n_expected == 5 * n_outputs
    assert all(b["tool_choice"]["name"] == "record_judgement" for b in bodies)
    assert all(m["role"] == "user" for b in bodies for m in b["messages"])
    scores = JudgeScore.objects.filter(run=run)
    assert all(0 <= s.value <= 10 and s.raw_text.startswith("{") for s in scores)  # the tool's JSON, kept raw
    assert run.tokens_in > 0 and run.cost_usd == pytest.approx((run.tokens_in * 3 + run.tokens_out * 15) / 1e6)
    assert cut.status == "done" and cut.n_truncated == cut.n_expected and cut.n_unparsed == 0
    reason = JudgeScore.objects.filter(run=cut).first().detail["parse"]
    assert "hidden reasoning" in reason and "raise sampling.reasoning_tokens" in reason
    page = client_for(admin_user).get(reverse("judges:study", args=[study.slug])).content.decode()
    assert f"cut off by the token cap {cut.n_truncated}" in page
