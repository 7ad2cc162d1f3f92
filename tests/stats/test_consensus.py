import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

from annotation.stats.consensus import (
    acceptance, combine, output_scores, preference_pairs, weighted_consensus,
)

RUBRIC = {
    "criteria": [
        {"key": "functional", "group": "technical", "weight": 1.0},
        {"key": "structure", "group": "technical", "weight": 1.0},
        {"key": "visual", "group": "aesthetic", "weight": 1.0},
    ],
    "groups": [{"key": "technical", "weight": 0.5}, {"key": "aesthetic", "weight": 0.5}],
}


def test_seed_formula_normal_ci():
    s = [5, 5, 4]
    out = weighted_consensus(s)
    sd = np.std(s, ddof=1)
    assert out["consensus"] == pytest.approx(14 / 3)
    assert out["ci"] == pytest.approx([14 / 3 - 1.96 * sd / np.sqrt(3), 14 / 3 + 1.96 * sd / np.sqrt(3)], abs=1e-4)
    assert out["n"] == 3


def test_t_ci_matches_scipy_and_is_wider():
    s = np.array([4.0, 3, 5, 4])
    lo, hi = sps.t.interval(0.95, 3, loc=s.mean(), scale=sps.sem(s))
    t = weighted_consensus(s, method="t")
    assert t["ci"] == pytest.approx([lo, hi])
    assert t["ci"][1] - t["ci"][0] > np.diff(weighted_consensus(s)["ci"])[0]


def test_weights_and_single_rating():
    out = weighted_consensus([2, 4], [3, 1])
    assert out["consensus"] == pytest.approx((2 * 3 + 4) / 4)
    one = weighted_consensus([3])
    assert one["consensus"] == 3 and one["ci"] is None and one["reason"]


def test_bootstrap_ci_brackets_mean():
    out = weighted_consensus([1, 2, 3, 4, 5], method="bootstrap", seed=1)
    assert out["ci"][0] < 3 < out["ci"][1]
    assert 1 <= out["ci"][0] and out["ci"][1] <= 5


def test_groups_and_overall():
    combined = combine({"functional": 5, "structure": 4, "visual": 3}, RUBRIC)
    assert combined["technical"] == pytest.approx(4.5)
    assert combined["aesthetic"] == pytest.approx(3.0)
    assert combined["overall"] == pytest.approx((4.5 + 3.0) / 2)  # seed: (technical + aesthetic) / 2


def test_output_scores_and_pairs_follow_seed_schema():
    rows = []
    for rater, (f, s, v) in {"r1": (5, 5, 5), "r2": (5, 4, 4), "r3": (4, 5, 5)}.items():
        rows += [("c1", "o1", rater, "functional", f), ("c1", "o1", rater, "structure", s),
                 ("c1", "o1", rater, "visual", v)]
    for rater in ("r1", "r2", "r3"):
        rows += [("c1", "o2", rater, k, 3) for k in ("functional", "structure", "visual")]
        rows += [("c1", "o3", rater, k, 4.9) for k in ("functional", "structure", "visual")]
    df = pd.DataFrame(rows, columns=["item", "output", "rater", "criterion", "score"])
    scores = output_scores(df, RUBRIC)
    o1 = next(s for s in scores if s["output"] == "o1")
    assert o1["vote_count"] == 3
    per_rater = [(5 + 5) / 2 / 2 + 5 / 2, (5 + 4) / 2 / 2 + 4 / 2, (4 + 5) / 2 / 2 + 5 / 2]
    assert o1["overall"] == pytest.approx(np.mean(per_rater))
    half = 1.96 * np.std(per_rater, ddof=1) / np.sqrt(3)
    assert o1["confidence_interval"] == pytest.approx([np.mean(per_rater) - half, np.mean(per_rater) + half],
                                                      abs=1e-4)
    systems = {"o1": "qwen/qwq-32b", "o2": "deepseek/deepseek-r1", "o3": "other"}
    for s in scores:
        s.update(prompt="Build a chart", system=systems[s["output"]], content=f"code of {s['output']}")
    pairs = preference_pairs(scores, min_delta=0.5, evaluation_date="2025-06-03")
    # o1 (4.67) vs o3 (4.9) is a near-tie (|delta| < 0.5) and is left out
    assert {(p["metadata"]["chosen_model"], p["metadata"]["rejected_model"]) for p in pairs} == {
        ("qwen/qwq-32b", "deepseek/deepseek-r1"), ("other", "deepseek/deepseek-r1")}
    p = next(p for p in pairs if p["metadata"]["chosen_model"] == "qwen/qwq-32b")
    assert set(p) == {"prompt", "chosen", "rejected", "metadata"}
    assert p["chosen"] == "code of o1" and p["rejected"] == "code of o2"
    meta = p["metadata"]
    assert set(meta) == {"challenge", "chosen_model", "rejected_model", "chosen_scores", "rejected_scores",
                         "score_difference", "dataset_version", "evaluation_date"}
    assert set(meta["chosen_scores"]) == {"technical", "aesthetic", "overall", "confidence_interval", "vote_count"}
    assert meta["score_difference"] == pytest.approx(o1["overall"] - 3.0)
    assert meta["challenge"] == "c1" and meta["dataset_version"] == "1.0.0"


def test_ties_excluded_even_with_zero_threshold_is_configurable():
    rows = [{"item": "i", "system": "a", "overall": 3.0}, {"item": "i", "system": "b", "overall": 3.0}]
    assert preference_pairs(rows) == []
    rows[1]["overall"] = 3.2
    assert len(preference_pairs(rows, min_delta=0.1)) == 1


def test_acceptance_flag():
    assert acceptance({"a": 0.71, "b": 0.69, "c": None, "d": 0.70}) == {
        "a": True, "b": False, "c": None, "d": True}
