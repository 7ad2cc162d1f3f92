"""Judges vs humans on one criterion (pure): checked against scipy and the krippendorff library."""

from __future__ import annotations

import krippendorff
import numpy as np
import pytest
from scipy.stats import kendalltau, pearsonr, spearmanr

from judges.services.humans import compare_criterion, human_ceiling, majority

pytestmark = pytest.mark.filterwarnings("ignore:Mean of empty slice")


def noisy_humans(n_units=60, n_humans=3, sd=1.0, seed=1):
    rng = np.random.default_rng(seed)
    truth = rng.integers(1, 8, n_units).astype(float)
    humans = np.clip(np.round(truth[:, None] + rng.normal(0, sd, (n_units, n_humans))), 1, 7)
    humans[rng.random(humans.shape) < 0.1] = np.nan  # some missing ratings
    return truth, humans


def test_numeric_statistics_match_reference_libraries():
    truth, humans = noisy_humans()
    rng = np.random.default_rng(2)
    judge = np.clip(truth + rng.integers(-1, 2, truth.size), 1, 7)
    judge[3] = np.nan
    res = compare_criterion(humans, {"j": judge}, "numeric")
    j = res["judges"]["j"]
    mean = np.nanmean(humans, axis=1)
    ok = ~np.isnan(judge) & ~np.isnan(mean)
    assert j["n_units"] == ok.sum()
    assert j["pearson"]["value"] == pytest.approx(pearsonr(judge[ok], mean[ok])[0])
    assert j["spearman"]["value"] == pytest.approx(spearmanr(judge[ok], mean[ok])[0])
    assert j["kendall_tau_b"]["value"] == pytest.approx(kendalltau(judge[ok], mean[ok])[0])
    assert j["mae"]["value"] == pytest.approx(np.mean(np.abs(judge[ok] - mean[ok])))
    d = judge[ok] - mean[ok]
    assert j["bias"]["value"] == pytest.approx(d.mean())
    assert j["bias"]["ci"][0] < d.mean() < j["bias"]["ci"][1]
    rows = ~np.isnan(judge)
    assert j["alpha"]["humans"]["value"] == pytest.approx(
        krippendorff.alpha(reliability_data=humans[rows].T, level_of_measurement="interval"))
    assert j["alpha"]["with_judge"]["value"] == pytest.approx(
        krippendorff.alpha(reliability_data=np.column_stack([humans[rows], judge[rows]]).T,
                           level_of_measurement="interval"))


def test_human_ceiling_is_each_human_against_the_others_pooled():
    _, humans = noisy_humans(n_units=40, n_humans=3, seed=5)
    got = human_ceiling(humans, "numeric")
    rs, maes, ns = [], [], []
    for j in range(3):
        rest = np.nanmean(np.delete(humans, j, axis=1), axis=1)
        ok = ~np.isnan(humans[:, j]) & ~np.isnan(rest)
        rs.append(pearsonr(humans[ok, j], rest[ok])[0])
        maes.append(np.mean(np.abs(humans[ok, j] - rest[ok])))
        ns.append(ok.sum())
    assert got["n_humans"] == 3
    assert got["pearson"] == pytest.approx(np.average(rs, weights=ns))
    assert got["mae"] == pytest.approx(np.average(maes, weights=ns))


def test_alt_test_passes_an_accurate_judge_and_fails_a_random_one():
    truth, humans = noisy_humans(n_units=80, n_humans=4, sd=1.2, seed=3)
    random_judge = np.random.default_rng(9).integers(1, 8, truth.size).astype(float)
    res = compare_criterion(humans, {"good": truth, "random": random_judge}, "numeric")
    good, bad = res["judges"]["good"], res["judges"]["random"]
    assert good["verdict"]["method"] == "alt-test" and good["verdict"]["passed"] is True
    assert bad["verdict"]["method"] == "alt-test" and bad["verdict"]["passed"] is False
    assert good["alt_test"]["winning_rate"] >= 0.5 > bad["alt_test"]["winning_rate"]


def test_with_too_few_units_the_rule_decides_and_says_so():
    truth, humans = noisy_humans(n_units=12, n_humans=2, seed=4)
    res = compare_criterion(humans, {"good": truth, "far": 8 - truth}, "numeric")
    good, far = res["judges"]["good"], res["judges"]["far"]
    assert good["verdict"]["method"] == "rule" and "alt-test not run" in good["verdict"]["why"]
    assert good["verdict"]["passed"] is (good["pearson"]["value"] >= res["ceiling"]["pearson"]
                                         and good["mae"]["value"] <= res["ceiling"]["mae"])
    assert far["verdict"]["passed"] is False and far["verdict"]["label"] == "below human agreement"


def test_one_human_per_unit_is_undetermined():
    humans = np.array([[1.0], [2.0], [3.0], [4.0]])
    res = compare_criterion(humans, {"j": np.array([1.0, 2.0, 3.0, 4.0])}, "numeric")
    assert res["judges"]["j"]["verdict"]["label"] == "undetermined"
    assert res["judges"]["j"]["pearson"]["value"] == pytest.approx(1.0)


def test_categorical_against_the_majority():
    humans = np.array([[0, 0, 1], [1, 1, 1], [2, 2, 0], [0, 1, np.nan], [2, 2, 2], [1, 1, 0]], dtype=float)
    assert np.array_equal(majority(humans), np.array([0, 1, 2, np.nan, 2, 1]), equal_nan=True)
    judge = np.array([0, 1, 1, 0, 2, 1], dtype=float)
    res = compare_criterion(humans, {"j": judge}, "categorical")
    j = res["judges"]["j"]
    assert j["n_units"] == 5  # the tied unit is left out
    assert j["agreement"]["value"] == pytest.approx(4 / 5)
    assert j["alpha"]["with_judge"]["value"] == pytest.approx(
        krippendorff.alpha(reliability_data=np.column_stack([humans, judge]).T, level_of_measurement="nominal"))
