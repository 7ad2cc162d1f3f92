import numpy as np
import pytest
from scipy.stats import ttest_1samp
from statsmodels.stats.multitest import multipletests

from annotation.stats.alt_test import alt_test, benjamini_yekutieli


def test_by_matches_statsmodels():
    rng = np.random.default_rng(0)
    for _ in range(20):
        p = rng.random(8) ** 3
        assert list(benjamini_yekutieli(p, 0.05)) == list(multipletests(p, alpha=0.05, method="fdr_by")[0])


def panel(seed, n=80, judge_noise=0.4, human_noise=1.0):
    rng = np.random.default_rng(seed)
    truth = rng.normal(3, 1, n)
    humans = truth[:, None] + rng.normal(0, human_noise, (n, 3))
    judge = truth + rng.normal(0, judge_noise, n)
    return humans, judge


def test_good_judge_passes_and_bad_judge_fails():
    humans, judge = panel(1)
    good = alt_test(humans, judge, epsilon=0.2)
    assert good["passed"] is True and good["winning_rate"] >= 0.5
    bad = alt_test(humans, np.random.default_rng(2).normal(3, 1, 80), epsilon=0.0)
    assert bad["passed"] is False


def test_per_human_values_by_hand():
    humans, judge = panel(3, n=40)
    out = alt_test(humans, judge, epsilon=0.15)
    j = 1
    others = np.delete(humans, j, axis=1)
    s_judge = -np.sqrt(np.mean((others - judge[:, None]) ** 2, axis=1))
    s_h = -np.sqrt(np.mean((others - humans[:, [j]]) ** 2, axis=1))
    w_f, w_h = (s_judge >= s_h).astype(float), (s_h >= s_judge).astype(float)
    info = out["humans"]["1"]
    assert info["advantage_probability"] == pytest.approx(w_f.mean())
    assert info["p_value"] == pytest.approx(ttest_1samp(w_h - w_f, 0.15, alternative="less").pvalue)


def test_accuracy_scoring_and_missing():
    humans = np.array([[1, 1, 2], [2, 2, np.nan], [1, np.nan, 1], [3, 3, 3]] * 10, dtype=float)
    judge = np.array([1, 2, 1, 3] * 10, dtype=float)
    out = alt_test(humans, judge, scoring="accuracy", epsilon=0.1)
    # the judge always equals the majority, so it is at least as good as any human on every item
    assert all(v["advantage_probability"] == 1.0 for v in out["humans"].values())
    assert out["passed"] is True


def test_too_few_items_is_reported_not_tested():
    humans, judge = panel(4, n=10)
    out = alt_test(humans, judge)
    assert out["winning_rate"] is None and out["passed"] is None
    assert "reason" in out["humans"]["0"]
