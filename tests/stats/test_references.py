"""Statistics against the reference libraries on random data with missing values."""

from itertools import combinations

import krippendorff
import numpy as np
import pandas as pd
import pingouin as pg
import pytest
from scipy import stats as sps
from sklearn.metrics import cohen_kappa_score
from statsmodels.stats.inter_rater import aggregate_raters
from statsmodels.stats.inter_rater import fleiss_kappa as sm_fleiss

from annotation.stats.agreement import (
    cohen_kappa, fleiss_kappa, icc, kendall_tau_b, krippendorff_all, matrix_agreement,
    pairwise_cohen, pairwise_correlations, pearson, spearman,
)


def ratings(seed, n_items=120, n_raters=5, missing=0.25, low=1, high=5):
    rng = np.random.default_rng(seed)
    truth = rng.normal(3, 1, (n_items, 1))
    x = np.clip(np.rint(truth + rng.normal(0, 0.9, (n_items, n_raters))), low, high)
    x[rng.random(x.shape) < missing] = np.nan
    return x


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("level", ["nominal", "ordinal", "interval", "ratio"])
def test_alpha_matches_krippendorff_package(seed, level):
    x = ratings(seed)
    ref = krippendorff.alpha(reliability_data=x.T, level_of_measurement=level)
    assert krippendorff_all(x)[level].value == pytest.approx(ref, abs=1e-10)


def test_alpha_on_continuous_values_matches_package():
    rng = np.random.default_rng(7)
    x = rng.gamma(2.0, 1.0, (60, 4)) + rng.gamma(2.0, 1.0, (60, 1))
    x[rng.random(x.shape) < 0.2] = np.nan
    for level in ("interval", "ratio", "ordinal"):
        ref = krippendorff.alpha(reliability_data=x.T, level_of_measurement=level)
        assert krippendorff_all(x)[level].value == pytest.approx(ref, abs=1e-9)


@pytest.mark.parametrize("seed", [0, 3])
def test_icc_and_cis_match_pingouin(seed):
    x = ratings(seed, n_items=40, n_raters=4, missing=0.1)
    long = pd.DataFrame([(i, j, x[i, j]) for i in range(x.shape[0]) for j in range(x.shape[1])
                         if not np.isnan(x[i, j])], columns=["t", "r", "s"])
    ref = pg.intraclass_corr(long, targets="t", raters="r", ratings="s", nan_policy="omit")
    ours = icc(x)
    names = {"ICC(1,1)": "ICC1", "ICC(A,1)": "ICC2", "ICC(C,1)": "ICC3",
             "ICC(1,k)": "ICC1k", "ICC(A,k)": "ICC2k", "ICC(C,k)": "ICC3k"}
    for _, row in ref.iterrows():
        mine = ours[names[row["Type"]]]
        assert mine.value == pytest.approx(row["ICC"], abs=1e-3)  # pingouin rounds to 3 places
        # pingouin rounds the CI to two decimals
        assert mine.ci[0] == pytest.approx(row["CI95"][0], abs=0.0051)
        assert mine.ci[1] == pytest.approx(row["CI95"][1], abs=0.0051)


def test_icc_exact_against_pingouin_unrounded(monkeypatch):
    x = ratings(5, n_items=30, n_raters=3, missing=0.0)
    long = pd.DataFrame([(i, j, x[i, j]) for i in range(30) for j in range(3)], columns=["t", "r", "s"])
    monkeypatch.setitem(pg.options, "round", None)
    ref = pg.intraclass_corr(long, targets="t", raters="r", ratings="s")
    values = [icc(x)[f].value for f in ("ICC1", "ICC2", "ICC3", "ICC1k", "ICC2k", "ICC3k")]
    assert values == pytest.approx(list(ref["ICC"]), abs=1e-12)


@pytest.mark.parametrize("seed", [0, 1])
def test_fleiss_matches_statsmodels(seed):
    x = ratings(seed, n_items=80, n_raters=6, missing=0.0)
    table, _ = aggregate_raters(x.astype(int))
    assert fleiss_kappa(table).value == pytest.approx(sm_fleiss(table), abs=1e-12)
    assert matrix_agreement(x)["fleiss_kappa"].value == pytest.approx(sm_fleiss(table), abs=1e-12)


@pytest.mark.parametrize("weights", ["unweighted", "linear", "quadratic"])
def test_cohen_matches_sklearn_per_pair_and_mean(weights):
    x = ratings(4, n_items=150, n_raters=4, missing=0.2)
    pairs = pairwise_cohen(x, weights)
    refs = []
    for i, j in combinations(range(4), 2):
        both = ~np.isnan(x[:, i]) & ~np.isnan(x[:, j])
        ref = cohen_kappa_score(x[both, i], x[both, j], weights=None if weights == "unweighted" else weights)
        assert pairs[(i, j)].value == pytest.approx(ref, abs=1e-12)
        refs.append(ref)
    assert matrix_agreement(x)["cohen_kappa"][weights].value == pytest.approx(np.mean(refs), abs=1e-12)


def test_cohen_with_gaps_in_labels_matches_sklearn():
    a = np.array([1, 1, 4, 7, 7, 4, 1, 7, 4, 4])
    b = np.array([1, 4, 4, 7, 4, 4, 1, 7, 7, 1])
    for w in ("linear", "quadratic"):
        assert cohen_kappa(a, b, w).value == pytest.approx(cohen_kappa_score(a, b, weights=w), abs=1e-12)


def test_pairwise_correlations_match_scipy():
    x = ratings(8, n_items=100, n_raters=4, missing=0.3)
    corr = pairwise_correlations(x)
    pr, sr = [], []
    for i, j in combinations(range(4), 2):
        both = ~np.isnan(x[:, i]) & ~np.isnan(x[:, j])
        pr.append(sps.pearsonr(x[both, i], x[both, j]).statistic)
        sr.append(sps.spearmanr(x[both, i], x[both, j]).statistic)
        assert corr["pearson"][(i, j)].value == pytest.approx(pr[-1], abs=1e-12)
        assert corr["spearman"][(i, j)].value == pytest.approx(sr[-1], abs=1e-12)
    report = matrix_agreement(x)
    assert report["mean_pairwise_pearson"].value == pytest.approx(np.mean(pr), abs=1e-12)
    assert report["mean_pairwise_spearman"].value == pytest.approx(np.mean(sr), abs=1e-12)


def test_single_correlations_match_scipy():
    rng = np.random.default_rng(9)
    a = rng.integers(1, 8, 200).astype(float)
    b = a + rng.integers(-2, 3, 200)
    assert pearson(a, b).value == pytest.approx(sps.pearsonr(a, b).statistic, abs=1e-12)
    assert spearman(a, b).value == pytest.approx(sps.spearmanr(a, b).statistic, abs=1e-12)
    assert kendall_tau_b(a, b).value == pytest.approx(sps.kendalltau(a, b).statistic, abs=1e-12)


def test_percent_agreement_by_hand():
    # item 1: 3 raters all agree (3/3 pairs); item 2: 2 of 3 agree (1/3 pairs); item 3: one rating only.
    x = np.array([[2, 2, 2], [1, 1, 3], [4, np.nan, np.nan]], dtype=float)
    assert matrix_agreement(x)["percent_agreement"].value == pytest.approx((1 + 1 / 3) / 2)
