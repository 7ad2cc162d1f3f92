"""The report's vectorised pieces equal annotation.stats on the same data."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from annotation.reports.stats import (
    agreement_bootstrap, consensus_frame, criterion_column, group_column, majority_frame, output_scores_frame,
    slot_matrix,
)
from annotation.stats.consensus import consensus_table, output_scores
from annotation.stats.icc import icc
from annotation.stats.krippendorff import krippendorff_alpha
from annotation.stats.bootstrap import bootstrap_ci
from rubrics.loader import load_preset

CODEGEN = load_preset("codegen-002")


def long_ratings(seed: int = 1, n_items: int = 30, n_out: int = 3, n_raters: int = 5, missing: float = 0.25):
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(n_items):
        for o in range(n_out):
            truth = rng.integers(1, 6)
            for r in range(n_raters):
                if rng.random() < missing:
                    continue
                for c in ("technical_quality", "aesthetic_quality"):
                    rows.append({"item": f"i{i}", "output": o, "rater": f"r{r}", "criterion": c,
                                 "x": float(np.clip(truth + rng.integers(-1, 2), 1, 5))})
    df = pd.DataFrame(rows)
    df["score"] = df["x"]
    return df


@pytest.mark.parametrize("method", ["normal", "t"])
def test_vectorised_consensus_equals_the_per_output_computation(method):
    """consensus_table's column-wise path (uniform weights) against weighted_consensus run output
    by output (explicit unit weights take that path)."""
    df = long_ratings()
    unit_weights = {r: 1.0 for r in df["rater"].unique()}
    fast = consensus_frame(df) if method == "normal" else consensus_table(df, method="t")
    ours = fast.sort_values(["item", "output", "criterion"]).reset_index(drop=True)
    ref = (consensus_table(df, rater_weights=unit_weights, method=method)
           .sort_values(["item", "output", "criterion"]).reset_index(drop=True))
    assert len(ours) == len(ref)
    for col in ("consensus", "ci_low", "ci_high", "sd", "n"):
        np.testing.assert_allclose(ours[col].to_numpy(float), ref[col].to_numpy(float), equal_nan=True)


def test_output_scores_frame_equals_output_scores():
    df = long_ratings(seed=2)
    ours = output_scores_frame(df, CODEGEN).set_index(["item", "output"])
    ref = output_scores(df, CODEGEN)
    assert len(ours) == len(ref)
    for row in ref:
        mine = ours.loc[(row["item"], row["output"])]
        for key in ("technical", "aesthetic"):
            assert mine[group_column(key)] == pytest.approx(row[key])
        assert mine["overall"] == pytest.approx(row["overall"])
        for key, value in row["criteria"].items():
            assert mine[criterion_column(key)] == pytest.approx(value)
        assert int(mine["vote_count"]) == row["vote_count"]
        if row["confidence_interval"] is None:
            assert np.isnan(mine["ci_low"])
        else:
            assert [mine["ci_low"], mine["ci_high"]] == pytest.approx(row["confidence_interval"])


def test_output_scores_frame_keeps_a_criterion_keyed_overall_apart():
    """Seed 000 rates a criterion keyed `overall`; the computed overall leaves it out."""
    rubric = {"criteria": [{"key": "a", "kind": "likert"}, {"key": "b", "kind": "likert"},
                           {"key": "overall", "kind": "likert", "overall": True}],
              "groups": [{"key": "overall", "weight": 1.0}]}
    rubric["criteria"][0]["group"] = rubric["criteria"][1]["group"] = "overall"
    df = pd.DataFrame({"item": "i", "output": 0, "rater": ["r1", "r1", "r1", "r2", "r2", "r2"],
                       "criterion": ["a", "b", "overall"] * 2, "x": [2.0, 4.0, 5.0, 4.0, 4.0, 1.0]})
    row = output_scores_frame(df, rubric).iloc[0]
    assert row[criterion_column("overall")] == pytest.approx(3.0)
    assert row[group_column("overall")] == pytest.approx(3.5)
    assert row["overall"] == pytest.approx(3.5)
    assert row["vote_count"] == 2


def test_majority_frame_counts_votes():
    df = pd.DataFrame({"item": ["a"] * 3 + ["b"] * 2, "output": 0, "criterion": "decision",
                       "label": ["ACCEPT", "REJECT", "ACCEPT", "REJECT", "ACCEPT"]})
    m = majority_frame(df).set_index("item")
    assert m.loc["a", "majority"] == "ACCEPT" and m.loc["a", "share"] == pytest.approx(2 / 3)
    assert m.loc["b", "majority"] == "ACCEPT" and m.loc["b", "n"] == 2  # tie: first label in order


def _codes(df):
    unit = pd.factorize(df["item"] + "#" + df["output"].astype(str))[0]
    item = pd.factorize(df["item"])[0]
    unit_item = np.zeros(unit.max() + 1, dtype=np.int64)
    unit_item[unit] = item
    return unit, unit_item


@pytest.mark.parametrize("seed", [3, 4])
def test_bootstrap_point_values_equal_alpha_and_icc1(seed):
    df = long_ratings(seed=seed)
    df = df[df.criterion == "technical_quality"]
    unit, unit_item = _codes(df)
    x = df["x"].to_numpy(float)
    res = agreement_bootstrap(unit, unit_item, x, measure="numeric", n_boot=200)
    rater = pd.factorize(df["rater"])[0]
    mat = np.full((unit.max() + 1, rater.max() + 1), np.nan)
    mat[unit, rater] = x
    assert res["alpha"]["value"] == pytest.approx(krippendorff_alpha(mat, "interval").value, abs=1e-12)
    slots, _, k = slot_matrix(unit, x)
    assert k == res["k"]
    assert res["icc1"]["value"] == pytest.approx(icc(slots)["ICC1"].value, abs=1e-12)
    lo, hi = res["alpha"]["bootstrap_ci"]
    assert lo < res["alpha"]["value"] < hi


def test_bootstrap_ci_matches_the_generic_bootstrap_of_items():
    """Resampling items and recomputing alpha with stats.krippendorff gives the same CI
    (same seed, same item draws) as the sufficient-statistics shortcut."""
    df = long_ratings(seed=5, n_items=25, n_out=1)
    df = df[df.criterion == "aesthetic_quality"]
    unit, unit_item = _codes(df)
    x = df["x"].to_numpy(float)
    rater = pd.factorize(df["rater"])[0]
    mat = np.full((unit.max() + 1, rater.max() + 1), np.nan)
    mat[unit, rater] = x
    ours = agreement_bootstrap(unit, unit_item, x, measure="numeric", n_boot=300, seed=7)
    # one output per item: units are items, in first-seen order
    ref = bootstrap_ci(lambda m: krippendorff_alpha(m, "interval"), mat, n_boot=300, seed=7, batch=10**9)
    assert ours["alpha"]["bootstrap_ci"] == pytest.approx(list(ref.ci), abs=1e-9)


def test_nominal_alpha_point_value():
    rng = np.random.default_rng(8)
    rows = [(i, r, rng.choice(["TP", "FP1", "FP2"], p=[.6, .2, .2])) for i in range(40) for r in range(3)
            if rng.random() > 0.2]
    df = pd.DataFrame(rows, columns=["item", "rater", "label"])
    codes = pd.Series(df["label"]).map({"TP": 0, "FP1": 1, "FP2": 2}).to_numpy(float)
    unit = df["item"].to_numpy()
    res = agreement_bootstrap(unit, np.arange(40), codes, measure="categorical", n_boot=100)
    mat = np.full((40, 3), np.nan)
    mat[unit, df["rater"].to_numpy()] = codes
    assert res["alpha"]["value"] == pytest.approx(krippendorff_alpha(mat, "nominal").value, abs=1e-12)
    assert res["icc1"]["value"] is None and res["k"] == 0


def test_bootstrap_weighs_several_draw_batches_at_once_with_the_same_results(monkeypatch):
    """At 40,000 items a draw batch is 100 resamples; the product weighs up to 256 at once (fewer reads
    of the item sums). The intervals are those of weighing each batch alone, exactly."""
    from annotation.reports import stats as report_stats

    rng = np.random.default_rng(11)
    n_items, raters = 40_000, 3
    unit = np.repeat(np.arange(n_items), raters)
    truth = rng.normal(4, 1, size=n_items)
    x = np.clip(np.round(truth[unit] + rng.normal(0, 0.8, size=unit.size)), 1, 7)
    x[rng.random(unit.size) < 0.05] = np.nan  # some ratings missing
    specs = {"numeric": (unit, np.arange(n_items), x, "numeric"),
             "categorical": (unit, np.arange(n_items), (x > 4).astype(float), "categorical")}

    def run() -> dict:
        return report_stats.agreement_bootstraps(specs, n_items=n_items, n_boot=500, seed=3)

    together = run()
    monkeypatch.setattr(report_stats, "PRODUCT_BYTES", 1)  # one batch per product, as before
    alone = run()
    assert together == alone
    assert together["numeric"]["alpha"]["bootstrap_ci"][0] < together["numeric"]["alpha"]["value"]


def test_bootstrap_counted_and_weighed_on_threads_equals_one_resample_at_a_time(monkeypatch):
    """The draws stay on the calling thread; two threads count and weigh them into two buffers in
    turn. Each resample's statistics equal those of drawing, counting and weighing it alone, in order."""
    from annotation.reports import stats as report_stats

    rng = np.random.default_rng(5)
    n_items, raters, n_boot, seed = 40_000, 3, 700, 9  # 100 resamples a draw batch: 7 batches
    unit = np.repeat(np.arange(n_items), raters)
    x = np.clip(np.round(rng.normal(4, 1, size=n_items)[unit] + rng.normal(0, 0.8, size=unit.size)), 1, 7)
    monkeypatch.setattr(report_stats, "PRODUCT_BYTES", 2 * 100 * 8 * n_items)  # two batches a buffer: 4 turns
    got = report_stats.agreement_bootstraps({"c": (unit, np.arange(n_items), x, "numeric")}, n_items=n_items,
                                            n_boot=n_boot, seed=seed)["c"]

    feats, a_cols, k, _ = report_stats._bootstrap_features(unit, np.arange(n_items), x, "numeric", n_items)
    draw = np.random.default_rng(seed)
    alphas, iccs = [], []
    for _ in range(0, n_boot, 100):
        for row in draw.integers(0, n_items, size=(100, n_items)):
            totals = (feats.T @ np.bincount(row, minlength=n_items).astype(float))[None, :]
            alphas.append(report_stats._alpha_from_totals(totals[:, :a_cols], "numeric")[0])
            iccs.append(report_stats._icc1_from_totals(totals[:, a_cols:], k)[0])
    for name, found in (("alpha", alphas), ("icc1", iccs)):
        want = np.percentile(np.array(found)[np.isfinite(found)], [2.5, 97.5])
        assert got[name]["bootstrap_ci"] == pytest.approx(list(want), rel=1e-12, abs=1e-15), name
