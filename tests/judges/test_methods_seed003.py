"""Seed 003 methods over real HTTP (the loopback fake server): legacy, the LLM router with its
two-call fallback, escalation on "Error", the weighted ensemble, and cached calls priced."""
from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
import yaml

from judges.backends.openai_compat import OpenAICompatBackend
from judges.cache import MemoryCache
from judges.fakeserver import answer_for, running_fake_server
from judges.methods import (
    Member, MethodSettings, Pricing, Stage, classify, escalation, learn_weights, legacy, modular, targets_for,
    weighted_ensemble, weighted_vote,
)
from judges.prompts.aqua_003 import LABEL_HEADER, LEGACY_HEADER, build_combined_route, build_label, build_legacy, build_route

REPO = Path(__file__).resolve().parents[2]
RUBRIC = yaml.safe_load((REPO / "rubrics" / "presets" / "aqua-003.yaml").read_text())
CRIT = RUBRIC["criteria"][0]
LABELS = ["TP", "FP3", "FP2", "FP1"]
SUBJECTS = ["She", "He", "My sister", "The teacher", "Our neighbour", "This student"]
VERBS = [("go", "goes"), ("have", "has"), ("walk", "walks"), ("like", "likes"), ("want", "wants")]


def items(n: int = 30) -> list[dict]:
    out = []
    for k in range(n):
        subj, (v0, v1) = SUBJECTS[k % len(SUBJECTS)], VERBS[k % len(VERBS)]
        src = f"{subj} {v0} to the market on day {k}."
        out.append({"id": f"e{k:02d}", "context": src, "outputs": [{"content": src.replace(f" {v0} ", f" {v1} ")}],
                    "metadata": {"lang": "en"}})
    return out


def backend(url: str) -> OpenAICompatBackend:
    return OpenAICompatBackend({"base_url": url, "model": "fake", "backoff_base_s": 0.01, "max_retries": 0})


def label_of(prompt_text: str) -> str:
    return json.loads(answer_for(prompt_text)[0])["label"]


def run(coro):
    return asyncio.run(coro)


# ------------------------------------------------------------------ legacy (baseline-v0)

def test_legacy_is_its_own_prompt_and_method_over_http():
    its = items(12)
    with running_fake_server() as srv:
        out = run(legacy(backend(srv.base_url), RUBRIC, targets_for(its), MethodSettings(), key="label"))
        assert srv.stats().completion_requests == len(its)
    sent = [build_legacy(RUBRIC, CRIT, it, 0).text for it in its]
    assert all("You are a grammar expert" in p and "RELATIVE" not in p for p in sent)
    assert build_label(RUBRIC, CRIT, its[0], 0).text != sent[0]
    # the server answers from the prompt it got: the labels prove the legacy prompt was sent
    assert [r.value for r in out] == [label_of(p) for p in sent]
    assert all(r.ok and r.criterion == "label" for r in out)
    assert LEGACY_HEADER != LABEL_HEADER


# ------------------------------------------------------------------ escalation on "Error"

def test_failed_small_answers_escalate_only_when_error_is_an_escalate_label():
    its = items(6)
    with running_fake_server(garbage=True) as small, running_fake_server() as expert:
        stages = [Stage(backend(small.base_url)), Stage(backend(expert.base_url))]
        out = run(escalation(stages, RUBRIC, targets_for(its), MethodSettings(), escalate_labels=["FP1", "Error"],
                             escalate_flags=[], key="label"))
        assert expert.stats().completion_requests == len(its)
        assert all(r.ok and r.detail["escalation_reasons"] == ["label:Error (unparsed)"] for r in out)
        assert [r.value for r in out] == [label_of(build_label(RUBRIC, CRIT, it, 0).text) for it in its]
        expert.reset()
        out = run(escalation(stages, RUBRIC, targets_for(its), MethodSettings(), escalate_labels=["FP1", "FP2"],
                             escalate_flags=[], key="label"))
        assert expert.stats().completion_requests == 0
        assert all(r.status == "unparsed" and r.value is None for r in out)  # kept failed, never a label


# ------------------------------------------------------------------ the LLM router

def test_llm_router_one_combined_call_routes_by_the_models_say():
    its = items(30)
    with running_fake_server() as small, running_fake_server() as expert:
        stages = [Stage(backend(small.base_url)), Stage(backend(expert.base_url))]
        out = run(escalation(stages, RUBRIC, targets_for(its), MethodSettings(), router="llm",
                             escalate_labels=["Error"], key="label"))
        assert small.stats().completion_requests == len(its)  # one combined call each, no fallback
        answers = [json.loads(answer_for(build_combined_route(RUBRIC, CRIT, it, 0).text)[0]) for it in its]
        want_escalated = [a["escalate"] == "yes" for a in answers]
        assert 0 < sum(want_escalated) < len(its)  # the fake model says both
        assert [r.doubt["escalated"] for r in out] == want_escalated
        assert expert.stats().completion_requests == sum(want_escalated)
        for r, a, esc in zip(out, answers, want_escalated):
            assert r.detail["router"] == "llm" and r.detail["router_calls"] == ["combined"]
            if not esc:
                assert r.value == a["label"] and r.detail["escalation_reasons"] == []
            else:
                assert r.detail["escalation_reasons"] == ["router:escalate"]


def test_llm_router_two_call_fallback_when_the_combined_answer_lacks_the_route():
    its = items(5)
    # a small model that only ever gives a label: the route is asked for separately, and
    # since that answer has no route either, the output is escalated as low-trust
    with running_fake_server(fixed_text='{"label": "TP", "reason": "fine"}') as small, \
            running_fake_server() as expert:
        stages = [Stage(backend(small.base_url), Pricing(1e6, 0)), Stage(backend(expert.base_url))]
        out = run(escalation(stages, RUBRIC, targets_for(its), MethodSettings(), router="llm",
                             escalate_labels=["Error"], key="label"))
        st = small.stats()
        assert st.completion_requests == 2 * len(its)
        assert all(r.detail["router_calls"] == ["combined", "route"] for r in out)
        assert all(r.detail["escalation_reasons"] == ["router_unparsed"] for r in out)
        assert expert.stats().completion_requests == len(its)
        # both calls are paid for by the small stage (1 USD per input token here)
        assert sum(r.cost_usd for r in out) >= st.prompt_tokens


def test_llm_router_fallback_asks_for_the_label_too_when_the_combined_answer_is_garbage():
    its = items(4)
    with running_fake_server(garbage=True) as small, running_fake_server() as expert:
        stages = [Stage(backend(small.base_url)), Stage(backend(expert.base_url))]
        out = run(escalation(stages, RUBRIC, targets_for(its), MethodSettings(), router="llm", key="label"))
        assert small.stats().completion_requests == 3 * len(its)  # combined, label, route
        assert all(r.detail["router_calls"] == ["combined", "label", "route"] for r in out)
        assert all("router_unparsed" in r.detail["escalation_reasons"] for r in out)
        assert all(r.ok for r in out)  # the expert's label stands


def test_llm_router_forced_two_calls_sends_the_small_label_to_the_route_call():
    its = items(8)
    with running_fake_server() as small, running_fake_server() as expert:
        stages = [Stage(backend(small.base_url)), Stage(backend(expert.base_url))]
        out = run(escalation(stages, RUBRIC, targets_for(its), MethodSettings(), router="llm",
                             router_two_calls=True, escalate_labels=[], key="label"))
        assert small.stats().completion_requests == 2 * len(its)
        for r, it in zip(out, its):
            small_label = label_of(build_label(RUBRIC, CRIT, it, 0).text)
            route = json.loads(answer_for(build_route(RUBRIC, CRIT, it, 0, small_label).text)[0])["escalate"]
            assert r.detail["router_calls"] == ["label", "route"]
            assert r.doubt["escalated"] is (route == "yes")
            if route == "no":
                assert r.value == small_label


def test_router_must_be_known():
    with pytest.raises(ValueError, match="router must be one of deterministic, llm"):
        run(escalation([Stage(None), Stage(None)], RUBRIC, [], MethodSettings(), router="random"))


# ------------------------------------------------------------------ weighted ensemble

def test_weighted_vote_by_hand():
    assert weighted_vote(["TP", "FP3", "FP3"], [3, 1, 1]) == ("TP", 0.6)
    assert weighted_vote(["TP", "FP3", "FP3"], [1, 1, 1]) == ("FP3", pytest.approx(2 / 3))
    assert weighted_vote([None, "FP2", "TP"], [5, 1, 1])[0] == "FP2"  # a tie: first supporter wins
    assert weighted_vote([None, None], [1, 1]) == (None, 0.0)


def test_learn_weights_is_gold_accuracy():
    gold = {"a": "TP", "b": "FP3", "c": "FP1", "d": "TP"}
    preds = [{"a": "TP", "b": "FP3", "c": "FP1", "d": "TP"}, {"a": "TP", "b": None, "c": "TP"}]
    assert learn_weights(preds, gold) == [1.0, 0.25]


def test_weighted_ensemble_votes_over_members_over_http():
    its = items(30)
    ts = targets_for(its)
    with running_fake_server() as a, running_fake_server() as b, running_fake_server() as c, \
            running_fake_server(garbage=True) as broken:
        members = [Member(backend(a.base_url), classify, Pricing(1e6, 0), "baseline"),
                   Member(backend(b.base_url), legacy, Pricing(2e6, 0), "legacy"),
                   Member(backend(c.base_url), modular, Pricing(1e6, 0), "modular"),
                   Member(backend(broken.base_url), classify, Pricing(1e6, 0), "broken")]
        alone = [run(m.method(m.backend, RUBRIC, ts, MethodSettings(pricing=m.pricing), key="label"))
                 for m in members]
        weights = [0.5, 0.3, 0.9, 2.0]
        out = run(weighted_ensemble(members, RUBRIC, ts, MethodSettings(), weights=weights, key="label"))
    assert all(r.value is None for r in alone[3])  # the broken member never votes
    for n, r in enumerate(out):
        votes = [res[n].value if res[n].ok else None for res in alone]
        tally = {}
        for v, w in zip(votes, weights):
            if v is not None:
                tally[v] = tally.get(v, 0) + w
        assert r.value == max(tally, key=tally.get) and r.ok
        assert r.cost_usd == pytest.approx(sum(res[n].cost_usd for res in alone))
        assert [v["label"] for v in r.detail["votes"]] == votes
        assert r.doubt["agreement"] == pytest.approx(tally[r.value] / sum(tally.values()))
    # the members disagree somewhere, so the weights matter
    assert any(len({res[n].value for res in alone[:3]}) > 1 for n in range(len(ts)))


def test_weighted_ensemble_checks_its_weights():
    with pytest.raises(ValueError, match="one per member"):
        run(weighted_ensemble([Member(None, classify)], RUBRIC, [], MethodSettings(), weights=[1, 2]))


# ------------------------------------------------------------------ cached calls at their price

def test_cached_calls_are_free_now_but_priced_at_what_they_would_have_cost():
    its = items(6)
    cache = MemoryCache()
    pricing = Pricing(0.15, 0.60)
    with running_fake_server() as srv:
        first = run(classify(backend(srv.base_url), RUBRIC, targets_for(its), MethodSettings(cache=cache,
                                                                                             pricing=pricing)))
        again = run(classify(backend(srv.base_url), RUBRIC, targets_for(its), MethodSettings(cache=cache,
                                                                                             pricing=pricing)))
        mod1 = run(modular(backend(srv.base_url), RUBRIC, targets_for(its), MethodSettings(cache=cache,
                                                                                          pricing=pricing)))
        mod2 = run(modular(backend(srv.base_url), RUBRIC, targets_for(its), MethodSettings(cache=cache,
                                                                                          pricing=pricing)))
    assert all(r.cost_usd > 0 and "cached_cost_usd" not in r.detail for r in first)
    assert all(r.cost_usd == 0 for r in again)
    assert [r.detail["cached_cost_usd"] for r in again] == pytest.approx([r.cost_usd for r in first])
    assert [r.detail["cached_cost_usd"] for r in mod2] == pytest.approx([r.cost_usd for r in mod1])
