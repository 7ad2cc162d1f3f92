"""Methods end to end over HTTP: presets and demo items, the fake server's formats, garbage and truncation."""
from __future__ import annotations

import asyncio
import json
from pathlib import Path

import yaml

from judges.backends.openai_compat import OpenAICompatBackend, build_body, OpenAICompatConfig
from judges.backends.base import JudgeRequest
from judges.cache import MemoryCache
from judges.fakeserver import running_fake_server
from judges.methods import MethodSettings, Pricing, all_in_one, classify, modular, per_criterion, targets_for

REPO = Path(__file__).resolve().parents[2]


def preset(slug: str) -> tuple[dict, list[dict]]:
    rubric = yaml.safe_load((REPO / "rubrics" / "presets" / f"{slug}.yaml").read_text())
    items = [json.loads(x) for x in (REPO / "annotation" / "demo" / f"{slug}.jsonl").read_text().splitlines()]
    return rubric, items


def backend(url: str) -> OpenAICompatBackend:
    return OpenAICompatBackend({"base_url": url, "model": "fake", "backoff_base_s": 0.01})


def test_seed_000_all_criteria_over_http_parse_and_cost():
    rubric, items = preset("feedback-000")
    targets = targets_for(items[:2])
    pricing = Pricing(input_per_million=0.15, output_per_million=0.60)
    with running_fake_server() as srv:
        out = asyncio.run(all_in_one(backend(srv.base_url), rubric, targets, MethodSettings(pricing=pricing)))
        st = srv.stats()
    keys = [c["key"] for c in rubric["criteria"] if c["kind"] in ("likert", "numeric")]
    assert st.completion_requests == len(targets)
    assert len(out) == len(targets) * len(keys)
    assert all(r.status == "ok" and 1 <= r.value <= 5 for r in out)
    assert sum(r.input_tokens for r in out) == st.prompt_tokens
    assert sum(r.output_tokens for r in out) == st.completion_tokens
    total = sum(r.cost_usd for r in out)
    assert abs(total - (st.prompt_tokens * 0.15 + st.completion_tokens * 0.60) / 1e6) < 1e-12


def test_seed_004_and_003_over_http():
    rubric, items = preset("fulltext-004")
    with running_fake_server() as srv:
        b = backend(srv.base_url)
        n_out = len(items[0]["outputs"])
        out = asyncio.run(per_criterion(b, rubric, targets_for(items[:1]), MethodSettings()))
        assert len(out) == 5 * n_out
        assert {r.criterion for r in out} == {"structure", "logic", "argument", "evidence", "language"}
        assert all(r.ok and 0 <= r.value <= 10 for r in out)
        assert next(r for r in out if r.criterion == "evidence").detail["parse"] == "JSON field 'score'"
        rubric, items = preset("aqua-003")
        labels = asyncio.run(classify(b, rubric, targets_for(items), MethodSettings()))
        assert all(r.ok and r.value in {"TP", "FP3", "FP2", "FP1"} for r in labels)
        fused = asyncio.run(modular(b, rubric, targets_for(items), MethodSettings()))
        assert all(r.ok for r in fused) and srv.stats().completion_requests == 5 * n_out + len(items) * (1 + 3)


def test_garbage_is_unparsed_with_raw_kept_never_zero():
    rubric, items = preset("rrgen-001")
    with running_fake_server(garbage=True) as srv:
        out = asyncio.run(all_in_one(backend(srv.base_url), rubric, targets_for(items[:1]), MethodSettings()))
    assert out and all(r.value is None and r.status == "unparsed" and "lorem ipsum" in r.raw[0] for r in out)


def test_truncated_answers_are_flagged_as_doubtful():
    rubric, items = preset("fulltext-004")
    with running_fake_server(truncate=True) as srv:
        out = asyncio.run(per_criterion(backend(srv.base_url), rubric, targets_for(items[:1]),
                                        MethodSettings(criteria=["structure"])))
    assert out[0].doubt.get("truncated") is True


def test_cache_means_a_rerun_sends_nothing():
    rubric, items = preset("aqua-003")
    cache = MemoryCache()
    with running_fake_server() as srv:
        b = backend(srv.base_url)
        first = asyncio.run(classify(b, rubric, targets_for(items), MethodSettings(cache=cache)))
        n = srv.stats().completion_requests
        again = asyncio.run(classify(b, rubric, targets_for(items), MethodSettings(cache=cache)))
        assert srv.stats().completion_requests == n == len(items)
    assert [r.value for r in first] == [r.value for r in again]


def test_default_sampling_fields_are_left_out_of_the_body():
    _, body = build_body(JudgeRequest(prompt="x"), OpenAICompatConfig(base_url="u", model="m"))
    assert "n" not in body and "top_p" not in body and "seed" not in body
    _, body = build_body(JudgeRequest(prompt="x", n=3, top_p=0.9), OpenAICompatConfig(base_url="u", model="m"))
    assert body["n"] == 3 and body["top_p"] == 0.9 and body["prompt"] == "x"
