"""Judges through strict loopback servers, one per provider: nothing refused, answers read back,
cut-off answers reported as truncated. The servers refuse what each provider documents it refuses."""
from __future__ import annotations

import asyncio
import json
from pathlib import Path

import httpx
import pytest
import yaml

from judges.config import validate_judge
from judges.services.engine import item_slots, judge_items, output_criteria
from tests.doubles.strict_provider_server import running_strict_server

REPO = Path(__file__).resolve().parents[2]
KEYS = {"OPENAI_API_KEY": "sk-test-openai-0000", "ANTHROPIC_API_KEY": "sk-ant-test-0000",
        "GEMINI_API_KEY": "gm-test-0000"}


@pytest.fixture(autouse=True)
def keys(monkeypatch):
    for k, v in KEYS.items():
        monkeypatch.setenv(k, v)


def preset(slug: str, items_of: str | None = None) -> tuple[dict, list[dict]]:
    rubric = yaml.safe_load((REPO / "rubrics" / "presets" / f"{slug}.yaml").read_text())
    lines = (REPO / "annotation" / "demo" / f"{items_of or slug}.jsonl").read_text().splitlines()
    return rubric, [json.loads(x) for x in lines[:2]]


def run(config: dict, rubric: dict, items: list[dict]):
    crits = output_criteria(config, rubric)
    pending: dict = {}
    for it in items:
        n = len(it["outputs"])
        for i in range(n if crits else 0):
            pending[(str(it["id"]), i)] = crits
        slots = item_slots(config, n, rubric, str(it["id"]))
        if slots:
            pending[(str(it["id"]), None)] = slots
    return asyncio.run(judge_items(config, rubric, items, pending))


def judge(server, provider: str, **kw) -> dict:
    data = {"name": "j", "provider": provider, "model": "m", "sampling": {"max_tokens": 400},
            "backend_options": {"max_retries": 0}, **kw}
    data["endpoint"] = server.base_url
    return validate_judge(data)


CASES = [  # (rubric, items, method, method_options)
    ("feedback-000", None, "all_in_one", {}),
    ("fulltext-004", None, "per_criterion", {}),
    ("rrgen-001", None, "per_criterion", {}),
    ("aqua-003", None, "label", {}),
    ("compare-pairwise", "rrgen-001", "pairwise", {"key": "preference"}),
    ("compare-ranking", "rrgen-001", "ranking", {}),
    ("compare-ranking", "rrgen-001", "best_worst", {}),
]
PROVIDERS = [("openai", "gpt-5-mini", {}), ("openai", "gpt-4.1-mini", {}), ("anthropic", "claude-sonnet-4-5", {}),
             ("google", "gemini-2.5-flash", {}), ("vllm", "m", {}), ("sglang", "m", {}), ("llamacpp", "m", {}),
             ("ollama", "m", {}), ("tgi", "m", {}), ("openai-compatible", "m", {})]


@pytest.mark.parametrize("provider,model,extra", PROVIDERS, ids=[f"{p}-{m}" for p, m, _ in PROVIDERS])
@pytest.mark.parametrize("structured", [False, True], ids=["native", "structured"])
def test_every_preset_method_through_each_strict_server(provider, model, extra, structured):
    with running_strict_server(provider) as server:
        for slug, items_of, method, mo in CASES:
            rubric, items = preset(slug, items_of)
            if slug == "compare-pairwise":
                mo = {"key": next(c["key"] for c in rubric["criteria"] if c["kind"] == "pairwise")}
            config = judge(server, provider, model=model, method=method, method_options=mo,
                           structured_output=structured, **extra)
            out = run(config, rubric, items[:1])
            assert out, (slug, method)
            # a pairwise verdict that flips with the order is the method's own result, not a failed read
            bad = [(j.criterion, j.status, j.detail, j.raw_text[:200]) for j in out
                   if j.status != "scored" and j.detail.get("method_status") != "inconsistent"]
            assert not bad, (slug, method, bad[:3])
        assert server.refusals == []
        assert len(server.requests) > 0
        if structured and provider != "anthropic":
            bodies = [b for _, _, b in server.requests]
            assert all(("response_format" in b) or ("structured_outputs" in b) for b in bodies), provider


def test_geval_logprobs_where_the_server_gives_them():
    rubric, items = preset("feedback-000")
    for provider in ("vllm", "llamacpp", "tgi"):
        with running_strict_server(provider) as server:
            config = judge(server, provider, method="geval",
                           method_options={"top_logprobs": 5} if provider == "tgi" else {})
            out = run(config, rubric, items[:1])
            assert server.refusals == [] and out and all(j.status == "scored" for j in out), provider


def test_reasoning_model_cap_spent_on_hidden_reasoning_is_truncated_not_unparsed():
    rubric, items = preset("fulltext-004")
    with running_strict_server("openai", hidden_reasoning=600) as server:
        starved = judge(server, "openai", model="gpt-5-mini", method="per_criterion",
                        sampling={"max_tokens": 400, "reasoning_tokens": 100})
        out = run(starved, rubric, items[:1])
        assert out and all(j.status == "truncated" for j in out)
        assert "hidden reasoning" in out[0].detail["parse"] and "reasoning_tokens" in out[0].detail["parse"]
        assert out[0].tokens_out == 500  # the whole cap was billed
        roomy = judge(server, "openai", model="gpt-5-mini", method="per_criterion", sampling={"max_tokens": 400})
        assert all(j.status == "scored" for j in run(roomy, rubric, items[:1]))
        assert server.refusals == []


def test_anthropic_max_tokens_stop_is_truncated():
    """stop_reason max_tokens: a verdict read before the cut stands (doubt truncated); one the cut
    took is "truncated" with the reason, never unparsed."""
    rubric, items = preset("feedback-000")
    with running_strict_server("anthropic") as server:
        out = run(judge(server, "anthropic", model="claude-sonnet-4-5", method="all_in_one",
                        sampling={"max_tokens": 8}), rubric, items[:1])
    assert out and {j.status for j in out} <= {"scored", "truncated"}
    cut = [j for j in out if j.status == "truncated"]
    assert cut and all("cut off by the token cap after 8 output tokens" in j.detail["parse"] for j in cut)
    assert all(j.doubt.get("truncated") for j in out if j.status == "scored")


def _post(url: str, body: dict, headers: dict | None = None) -> httpx.Response:
    return httpx.post(url, json=body, headers=headers or {}, timeout=5)


def test_the_strict_servers_refuse_what_the_providers_refuse():
    msg = [{"role": "user", "content": "hi"}]
    with running_strict_server("openai") as s:
        auth = {"Authorization": "Bearer sk-x"}
        r = _post(s.base_url + "/chat/completions", {"model": "gpt-5-mini", "messages": msg, "max_tokens": 5}, auth)
        assert r.status_code == 400 and "max_completion_tokens" in r.json()["error"]["message"]
        r = _post(s.base_url + "/chat/completions", {"model": "o3", "messages": msg, "temperature": 0}, auth)
        assert r.status_code == 400 and r.json()["error"]["param"] == "temperature"
        r = _post(s.base_url + "/chat/completions", {"model": "gpt-5", "messages": msg, "logprobs": True}, auth)
        assert r.status_code == 400
        assert _post(s.base_url + "/chat/completions", {"model": "gpt-4o", "messages": msg}).status_code == 401
        lax = {"type": "json_schema", "json_schema": {"name": "x", "strict": True,
                                                      "schema": {"type": "object", "properties": {"a": {}}}}}
        r = _post(s.base_url + "/chat/completions", {"model": "gpt-4o", "messages": msg, "response_format": lax}, auth)
        assert r.status_code == 400 and "additionalProperties" in r.json()["error"]["message"]
    with running_strict_server("anthropic") as s:
        head = {"x-api-key": "k", "anthropic-version": "2023-06-01"}
        r = _post(s.base_url + "/messages", {"model": "claude-sonnet-4-5", "messages": msg}, head)
        assert r.status_code == 400 and r.json()["error"]["message"] == "max_tokens: Field required"
        sysmsg = [{"role": "system", "content": "x"}] + msg
        r = _post(s.base_url + "/messages", {"model": "c", "max_tokens": 5, "messages": sysmsg}, head)
        assert r.status_code == 400 and "top-level `system`" in r.json()["error"]["message"]
        r = _post(s.base_url + "/messages", {"model": "c", "max_tokens": 5, "messages": msg, "seed": 1}, head)
        assert r.status_code == 400 and "Extra inputs" in r.json()["error"]["message"]
        r = _post(s.base_url + "/messages", {"model": "c", "max_tokens": 5, "messages": msg},
                  {"anthropic-version": "2023-06-01"})
        assert r.status_code == 401
    with running_strict_server("vllm") as s:
        r = _post(s.base_url + "/chat/completions", {"model": "m", "messages": msg, "guided_json": {}})
        assert r.status_code == 400 and "structured_outputs" in r.json()["error"]["message"]
    with running_strict_server("tgi") as s:
        r = _post(s.base_url + "/chat/completions", {"model": "m", "messages": msg, "logprobs": True,
                                                     "top_logprobs": 20})
        assert r.status_code == 422
    with running_strict_server("google") as s:
        r = _post(s.base_url + "/chat/completions", {"model": "gemini-2.5-flash", "messages": msg, "logprobs": True},
                  {"Authorization": "Bearer g"})
        assert r.status_code == 400


def test_a_refusal_reaches_the_score_as_a_permanent_error_with_the_providers_message():
    """What load-time validation cannot see (here: a model name the rule does not know as a reasoning
    model) is refused by the provider once, not retried, and its message is kept."""
    rubric, items = preset("fulltext-004")
    with running_strict_server("openai") as server:
        config = judge(server, "openai", model="gpt-5-mini", backend_options={"reasoning_model": False,
                                                                              "max_retries": 3})
        out = run({**config, "method": "per_criterion"}, rubric, items[:1])
        assert all(j.status == "error" and not j.retryable for j in out)
        assert "OpenAI refused the request (400)" in out[0].detail["parse"]
        assert "Only the default (1) value is supported" in out[0].detail["parse"]
        assert len(server.requests) == len(out)  # no retries of a 400
