"""Judge methods over scripted backends: fusion, escalation routing, pairwise swaps, G-Eval, consistency, cost."""
from __future__ import annotations

import asyncio
import math
import re
import statistics

import pytest

from judges.backends.base import JudgeResponse
from judges.backends.errors import PermanentBackendError
from judges.cache import MemoryCache
from judges.methods import (
    DEFAULT_RULES, MethodSettings, Pricing, Stage, Target, all_in_one, all_pairs, classify, escalation, fuse,
    geval, modular, pairwise, per_criterion, position_bias, risk_flags, self_consistency, targets_for,
)
from tests.judges.scripted import ScriptedBackend

RUBRIC = {
    "slug": "t", "name": "T",
    "criteria": [
        {"key": "helpful", "name": "Helpfulness", "kind": "likert", "min": 1, "max": 5},
        {"key": "fluent", "name": "Fluency", "kind": "likert", "min": 1, "max": 5},
        {"key": "ok", "name": "Acceptable", "kind": "binary", "choices": [{"value": "ACCEPT"}, {"value": "REJECT"}]},
    ],
}
AQUA = {"slug": "aqua", "name": "AQUA", "judge": {"style": "aqua_003"},
        "criteria": [{"key": "label", "name": "Edit label", "kind": "choice",
                      "choices": [{"value": v} for v in ("TP", "FP3", "FP2", "FP1")]}]}


def run(coro):
    return asyncio.run(coro)


# ------------------------------------------------------------------ fusion (seed 003 modular)

FUSION_TABLE = [
    # meaning, reward, source_correct, target_correct -> label (seed's rules in order)
    ((3, 3, False, True), "FP1"),
    ((4, -3, True, True), "FP1"),
    ((1, 0, True, False), "FP2"),
    ((2, -2, False, False), "FP2"),
    ((0, 1, True, True), "FP3"),   # both correct, small change, reward 1: FP3 comes before TP
    ((0, 0, True, True), "FP3"),
    ((0, 2, True, True), "TP"),    # reward outside {0,1}: the TP rule
    ((1, 2, False, True), "TP"),
    ((1, 1, False, True), "TP"),
    ((2, 2, False, True), "FP3"),  # meaning 2 is neither FP1 nor small: the fallback
    ((0, 1, False, False), "FP3"),  # target wrong but reward positive: not FP2, fallback
]


@pytest.mark.parametrize("signals,label", FUSION_TABLE)
def test_seed_fusion_rules(signals, label):
    m, r, s, t = signals
    assert fuse({"meaning": m, "reward": r, "source_correct": s, "target_correct": t})[0] == label


def test_fusion_with_missing_signals_is_undecided_unless_an_earlier_rule_settles_it():
    assert fuse({"meaning": 3}) == ("FP1", 0)
    assert fuse({"meaning": 1, "reward": 0, "source_correct": True}) == (None, None)
    assert fuse({}) == (None, None)


def test_fusion_rules_are_data():
    rules = [{"if": {"reward": {">=": 2}}, "label": "TP"}, {"if": {"reward": {"in": [0, 1]}}, "label": "FP3"},
             {"if": {}, "label": "FP2"}]
    assert [fuse({"reward": x}, rules)[0] for x in (3, 1, -1)] == ["TP", "FP3", "FP2"]
    assert DEFAULT_RULES[-1] == {"if": {}, "label": "FP3"}


def subjudges(meaning: str, reward: str, pair: str):
    def answer(prompt: str) -> str:
        if '"meaning"' in prompt:
            return meaning
        if '"reward"' in prompt:
            return reward
        return pair
    return answer


def aqua_item(i: str, source: str, target: str) -> dict:
    return {"id": i, "context": source, "outputs": [{"content": target}]}


def test_modular_fuses_sub_judges_and_sums_cost():
    b = ScriptedBackend(subjudges('{"meaning": 0, "reason": "same"}', '{"reward": 2}',
                                  '{"source_correct": false, "target_correct": true}'), output_tokens=10)
    s = MethodSettings(pricing=Pricing(input_per_million=1_000_000, output_per_million=2_000_000))
    (res,) = run(modular(b, AQUA, [Target(aqua_item("a", "She go home.", "She goes home."), 0)], s))
    assert (res.value, res.status, res.detail["rule"]) == ("TP", "ok", 3)
    assert len(b.prompts) == 3
    assert res.input_tokens == sum(len(p.split()) for p in b.prompts) and res.output_tokens == 30
    assert res.cost_usd == pytest.approx(res.input_tokens * 1.0 + 30 * 2.0)


def test_modular_unparsed_sub_judge_gives_no_label():
    b = ScriptedBackend(subjudges("no idea", '{"reward": 0}', '{"source_correct": true, "target_correct": true}'))
    (res,) = run(modular(b, AQUA, [Target(aqua_item("a", "x y", "x z"), 0)], MethodSettings()))
    assert res.value is None and res.status == "unparsed" and "meaning" in res.detail["unparsed_signals"]


# ------------------------------------------------------------------ escalation (seed 003)

@pytest.mark.parametrize("source,target,flags", [
    ("She go to school.", "She goes to school.", set()),
    ("I have 3 cats.", "I have 4 cats.", {"number_change"}),
    ("We met Anna in Paris.", "We met Anna in Berlin.", {"proper_noun_change"}),
    ("The results were very good, so we continued.", "Outcomes turned out to be truly excellent, so we continued.",
     {"long_rewrite_risk"}),
    ("It costs 5 euros in Rome.", "It costs 50 euros in Milan.", {"number_change", "proper_noun_change"}),
    ("the cat sat.", "The cat sat.", set()),  # sentence-initial capital is no proper noun
])
def test_risk_flags(source, target, flags):
    assert risk_flags(source, target) == flags


def label_by_item(labels: dict[str, str]):
    def answer(prompt: str) -> str:
        source = re.search(r"Source: (.*)", prompt).group(1)
        lab = labels[source]
        return lab if lab.startswith("?") else f'{{"label": "{lab}", "reason": "r"}}'
    return answer


def test_escalation_routes_only_risky_or_flagged_and_finalises_only_on_disagreement():
    items = [aqua_item("A", "She go home.", "She goes home."),            # small TP, no flag: accepted
             aqua_item("B", "He have a car.", "He has the car."),          # small FP2 -> expert agrees
             aqua_item("C", "I have 3 cats.", "I have 4 cats."),           # flag -> expert disagrees -> finaliser
             aqua_item("D", "They is here.", "They are here.")]            # small unparsed -> escalated
    small = ScriptedBackend(label_by_item({"She go home.": "TP", "He have a car.": "FP2", "I have 3 cats.": "TP",
                                           "They is here.": "? hmm"}), model="small")
    expert = ScriptedBackend(label_by_item({"He have a car.": "FP2", "I have 3 cats.": "FP1",
                                            "They is here.": "TP"}), model="expert")
    final = ScriptedBackend(label_by_item({"I have 3 cats.": "FP1", "They is here.": "TP"}), model="final")
    stages = [Stage(small, Pricing(1e6, 0)), Stage(expert, Pricing(2e6, 0)), Stage(final, Pricing(3e6, 0))]
    out = run(escalation(stages, AQUA, targets_for(items), MethodSettings()))
    assert [r.value for r in out] == ["TP", "FP2", "FP1", "TP"]
    assert len(small.prompts) == 4 and len(expert.prompts) == 3 and len(final.prompts) == 2
    assert "Source: She go home." not in "".join(expert.prompts)
    assert [len(r.detail["path"]) for r in out] == [1, 2, 3, 3]
    assert out[2].detail["flags"] == ["number_change"]
    assert out[3].detail["escalation_reasons"][0] == "label:Error (unparsed)"
    assert out[0].doubt["escalated"] is False and out[2].doubt["finalised"] is True
    # cost: each stage's tokens at its own price
    c = out[2]
    toks = [len(p.split()) for b in (small, expert, final) for p in b.prompts if "I have 3 cats." in p]
    assert c.cost_usd == pytest.approx(toks[0] * 1 + toks[1] * 2 + toks[2] * 3)


def test_escalation_labels_and_flags_are_configurable():
    items = [aqua_item("B", "He have a car.", "He has the car.")]
    small = ScriptedBackend(label_by_item({"He have a car.": "FP2"}))
    expert = ScriptedBackend(label_by_item({"He have a car.": "TP"}))
    out = run(escalation([Stage(small), Stage(expert)], AQUA, targets_for(items), MethodSettings(),
                         escalate_labels=(), escalate_flags=()))
    assert out[0].value == "FP2" and expert.prompts == []
    out = run(escalation([Stage(small), Stage(expert)], AQUA, targets_for(items), MethodSettings()))
    assert out[0].value == "TP" and out[0].doubt["small_expert_disagree"] is True  # two stages: expert decides


# ------------------------------------------------------------------ pairwise

ITEMS = [{"id": f"i{k}", "context": "Q", "outputs": [{"content": "good answer"}, {"content": "bad"},
                                                      {"content": "meh"}]} for k in range(2)]


def test_pairwise_always_first_flips_on_every_pair():
    b = ScriptedBackend(lambda p: "Response A is better. [[A]]")
    out = run(pairwise(b, RUBRIC, all_pairs(ITEMS), MethodSettings(), key="helpful"))
    assert len(out) == 6 and len(b.prompts) == 12
    assert all(r.status == "inconsistent" and r.value is None and r.doubt["swap_disagreement"] for r in out)
    bias = position_bias(out)
    assert bias["flips"] == 6 and bias["flip_rate"] == 1.0 and bias["first_position_win_rate"] == 1.0


def test_pairwise_consistent_judge_has_no_flips():
    def prefer_good(prompt: str) -> str:
        a = prompt.split("## Response A\n")[1].split("\n")[0]
        return "[[A]]" if a == "good answer" else ("[[B]]" if "## Response B\ngood answer" in prompt else "[[C]]")
    out = run(pairwise(ScriptedBackend(prefer_good), RUBRIC, all_pairs(ITEMS), MethodSettings()))
    assert [r.value for r in out[:3]] == [0, 0, "tie"]  # (0,1) (0,2) (1,2)
    assert position_bias(out)["flips"] == 0 and position_bias(out)["first_position_win_rate"] == 0.5


def test_pairwise_unparsed_is_not_a_tie():
    out = run(pairwise(ScriptedBackend(lambda p: "hard to say"), RUBRIC, all_pairs(ITEMS[:1]), MethodSettings()))
    assert all(r.value is None and r.status == "unparsed" for r in out)


# ------------------------------------------------------------------ G-Eval

def logprob_backend(probs: dict[str, float] | None):
    def answer(prompt: str):
        lp = None if probs is None else [[{t: math.log(p) for t, p in probs.items()}]]
        return JudgeResponse(texts=["4"], input_tokens=5, output_tokens=1, logprobs=lp,
                             chosen_tokens=[["4"]] if probs else None, finish_reasons=["length"])
    return ScriptedBackend(answer)


def test_geval_expected_score_and_doubt():
    probs = {"1": 0.1, "2": 0.1, "3": 0.1, "4": 0.5, "5": 0.1, "I": 0.1}
    out = run(geval(logprob_backend(probs), RUBRIC, [Target(ITEMS[0], 0)], MethodSettings()))
    assert [r.criterion for r in out] == ["helpful", "fluent"]  # label criteria are not G-Eval scored
    assert out[0].value == pytest.approx((0.1 + 0.2 + 0.3 + 2.0 + 0.5) / 0.9)
    assert out[0].doubt["top_prob"] == pytest.approx(0.5 / 0.9) and "truncated" not in out[0].doubt


def test_geval_without_logprobs_reports_it():
    out = run(geval(logprob_backend(None), RUBRIC, [Target(ITEMS[0], 0)], MethodSettings()))
    assert all(r.status == "logprobs_unavailable" and r.value is None for r in out)


# ------------------------------------------------------------------ self-consistency

def test_self_consistency_mean_spread_and_majority():
    b = ScriptedBackend(lambda p: ["4", "5", "3", "garbage"] if "Helpfulness" in p or "Fluency" in p
                        else ['{"label": "ACCEPT"}', '{"label": "REJECT"}', '{"label": "ACCEPT"}', "?"])
    out = {r.criterion: r for r in run(self_consistency(b, RUBRIC, [Target(ITEMS[0], 0)], MethodSettings(), samples=4))}
    h = out["helpful"]
    assert h.value == 4.0 and h.doubt["spread"] == pytest.approx(statistics.pstdev([4, 5, 3]))
    assert h.doubt["n_parsed"] == 3 and len(h.raw) == 4
    assert out["ok"].value == "ACCEPT" and out["ok"].doubt["agreement"] == pytest.approx(2 / 3)


def test_self_consistency_label_tie_is_inconsistent_and_separate_requests_use_seeds():
    b = ScriptedBackend(lambda p: '{"label": "ACCEPT"}' if len(b.prompts) % 2 else '{"label": "REJECT"}')
    s = MethodSettings(criteria=["ok"], seed=10)
    (r,) = run(self_consistency(b, RUBRIC, [Target(ITEMS[0], 0)], s, samples=4, separate_requests=True))
    assert len(b.prompts) == 4 and r.status == "inconsistent" and r.value is None


# ------------------------------------------------------------------ direct methods, errors, cost, cache

def test_all_in_one_one_call_per_output_split_usage():
    b = ScriptedBackend(lambda p: '{"helpful": 4, "fluent": 9, "ok": "REJECT", "reasoning": "r"}', output_tokens=7)
    s = MethodSettings(pricing=Pricing(input_per_million=3.0, output_per_million=15.0))
    out = run(all_in_one(b, RUBRIC, targets_for(ITEMS[:1]), s))
    assert len(b.prompts) == 3 and len(out) == 9
    first = out[:3]
    assert [(r.value, r.status) for r in first] == [(4, "ok"), (None, "unparsed"), ("REJECT", "ok")]
    assert sum(r.input_tokens for r in first) == len(b.prompts[0].split())
    assert sum(r.output_tokens for r in first) == 7
    assert sum(r.cost_usd for r in first) == pytest.approx((len(b.prompts[0].split()) * 3.0 + 7 * 15.0) / 1e6)


def test_backend_errors_become_error_results():
    b = ScriptedBackend(lambda p: PermanentBackendError("bad request", status=400))
    out = run(per_criterion(b, RUBRIC, targets_for(ITEMS[:1]), MethodSettings()))
    assert len(out) == 9 and all(r.status == "error" and r.value is None and r.cost_usd == 0 for r in out)
    assert "bad request" in out[0].detail["parse"]


def test_per_criterion_groups_requests_by_criterion():
    b = ScriptedBackend(lambda p: "3\nfine" if "Acceptable" not in p else '{"label": "ACCEPT"}')
    out = run(per_criterion(b, RUBRIC, targets_for(ITEMS[:1]), MethodSettings()))
    assert [r.criterion for r in out] == ["helpful"] * 3 + ["fluent"] * 3 + ["ok"] * 3
    assert [r.value for r in out] == [3] * 6 + ["ACCEPT"] * 3


def test_cache_serves_repeats_and_seed_changes_the_key():
    b = ScriptedBackend(lambda p: '{"label": "TP"}')
    cache = MemoryCache()
    targets = [Target(aqua_item("a", "x y", "x z"), 0)]
    first = run(classify(b, AQUA, targets, MethodSettings(cache=cache, seed=1, pricing=Pricing(1e6, 0))))
    again = run(classify(b, AQUA, targets, MethodSettings(cache=cache, seed=1, pricing=Pricing(1e6, 0))))
    assert len(b.prompts) == 1 and first[0].value == again[0].value == "TP"
    assert first[0].cost_usd > 0 and again[0].cost_usd == 0 and again[0].detail.get("cached") is True
    run(classify(b, AQUA, targets, MethodSettings(cache=cache, seed=2)))
    assert len(b.prompts) == 2
