"""Bias probes checked against statsmodels (OLS) and SciPy (Welch, Spearman)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import statsmodels.formula.api as smf
from scipy.stats import spearmanr, ttest_ind

from annotation.stats.bias import length_controlled, self_preference, verbosity


def _outputs(seed: int, per_word: float):
    rng = np.random.default_rng(seed)
    systems = np.repeat(["long-winded", "terse", "plain"], 80)
    words = np.where(systems == "long-winded", 300, np.where(systems == "terse", 60, 150)) + rng.normal(0, 40, 240)
    quality = np.where(systems == "terse", 3.4, 3.0)
    scores = quality + per_word * words + rng.normal(0, 0.5, 240)
    return scores, words, systems


def test_verbosity_finds_a_planted_length_preference_and_matches_references():
    scores, words, _ = _outputs(0, per_word=0.004)
    v = verbosity(scores, words)
    assert v["spearman"] == pytest.approx(spearmanr(scores, words).statistic)
    fit = smf.ols("s ~ w", pd.DataFrame({"s": scores, "w": words / 100})).fit()
    assert v["slope_per_100_words"] == pytest.approx(fit.params["w"])
    assert v["slope_ci"] == pytest.approx(list(fit.conf_int().loc["w"]))
    assert v["p"] < 0.001 and v["spearman_ci"][0] > 0
    rng = np.random.default_rng(1)
    unrelated = verbosity(rng.normal(3, 1, 200), rng.uniform(50, 400, 200))
    assert unrelated["spearman_ci"][0] < 0 < unrelated["spearman_ci"][1] and unrelated["p"] > 0.05


def test_length_control_undoes_the_length_bonus_and_matches_statsmodels():
    scores, words, systems = _outputs(2, per_word=0.004)
    lc = length_controlled(scores, words, systems)["systems"]
    assert lc["long-winded"]["mean"] > lc["terse"]["mean"]  # raw: length wins
    assert lc["terse"]["length_controlled"] > lc["long-winded"]["length_controlled"]  # controlled: quality wins
    df = pd.DataFrame({"s": scores, "w": (words - words.mean()) / 100, "sys": systems})
    fit = smf.ols("s ~ C(sys) + w", df).fit()
    pred = fit.get_prediction(pd.DataFrame({"sys": ["terse"], "w": [0.0]})).summary_frame(alpha=0.05)
    assert lc["terse"]["length_controlled"] == pytest.approx(float(pred["mean"].iloc[0]))
    assert lc["terse"]["ci"] == pytest.approx([float(pred["mean_ci_lower"].iloc[0]),
                                               float(pred["mean_ci_upper"].iloc[0])])


def test_self_preference_is_welch():
    rng = np.random.default_rng(3)
    own, others = rng.normal(3.6, 0.8, 40), rng.normal(3.1, 0.9, 120)
    sp = self_preference(own, others)
    assert sp["difference"] == pytest.approx(own.mean() - others.mean())
    assert sp["p"] == pytest.approx(ttest_ind(own, others, equal_var=False).pvalue)
    assert sp["ci"][0] > 0
    assert self_preference([3.0], [2.0, 4.0])["difference"] is None
