"""Active statistical inference (annotation/stats/active.py) against ppi_py and the paper's formulas."""

import numpy as np
import pytest
from ppi_py import ppi_mean_ci, ppi_mean_pointestimate
from scipy.stats import norm

from annotation.stats.active import (
    active_probabilities, choose_design, ipw_ppi_lambda, ipw_ppi_mean, ipw_ppi_systems, judge_uncertainty,
)


def _study(seed=0, n=400):
    rng = np.random.default_rng(seed)
    y = rng.normal(3, 1, n)
    scale = rng.lognormal(0, 0.8, n)
    yhat = y + 0.4 + scale * rng.normal(size=n)
    return rng, y, yhat, scale


def test_probabilities_meet_the_budget_keep_the_floor_and_grow_with_uncertainty():
    u = np.array([0.0, 0.1, 0.5, 1.0, 8.0, 20.0])
    pi = active_probabilities(u, budget=3, floor=0.2)
    assert pi.sum() == pytest.approx(3)
    assert np.all(pi >= 0.2 * 3 / 6 - 1e-12) and np.all(pi <= 1)
    assert np.all(np.diff(pi) >= 0)
    assert pi[-1] == 1.0 and pi[-2] == 1.0  # capped, the rest of the budget spread over the others
    assert np.allclose(active_probabilities(u, 3, floor=1.0), 0.5)
    assert np.allclose(active_probabilities(np.zeros(6), 3, floor=0.1), 0.5)
    rows = active_probabilities(np.vstack([u, u[::-1]]), 3, 0.2)
    assert np.allclose(rows[0], pi) and np.allclose(rows[1], pi[::-1])


@pytest.mark.parametrize("kwargs, message", [
    ({"uncertainty": [1, -1], "budget": 1}, "finite and >= 0"),
    ({"uncertainty": [1, 2], "budget": 3}, "budget must be in"),
    ({"uncertainty": [1, 2], "budget": 1, "floor": 0}, "floor must be in"),
])
def test_bad_designs_are_named(kwargs, message):
    with pytest.raises(ValueError, match=message):
        active_probabilities(**kwargs)


def test_uncertainty_combines_the_jury_the_probability_and_the_calibration_error():
    jury = np.array([[1, 3, np.nan], [2, 2, 2.0]])
    u = judge_uncertainty(jury=jury, probability=[0.5, 0.9], calibration_error=[0.0, 0.3])
    assert u == pytest.approx([np.sqrt(2 + 0.25), np.sqrt(0.09 + 0.09)])
    with pytest.raises(ValueError, match="fewer than two judges"):
        judge_uncertainty(jury=[[1, np.nan], [1, 2]])
    with pytest.raises(ValueError, match="different numbers of items"):
        judge_uncertainty(jury=jury, probability=[0.5])


def test_estimate_equals_the_papers_formula():
    rng, y, yhat, scale = _study()
    pi = active_probabilities(scale, budget=80, floor=0.2)
    rated = rng.random(y.size) < pi
    y_obs = np.where(rated, y, np.nan)
    out = ipw_ppi_mean(y_obs, yhat, pi, rated, normalise=False)
    # Zrnic & Candès: mean and std (ddof 0) of λf + (Y − λf)ξ/π over all n items, normal interval.
    lam = out["lambda"]
    z = lam * yhat + (np.where(rated, y, 0) - lam * yhat) * rated / pi
    half = norm.ppf(0.975) * z.std() / np.sqrt(y.size)
    assert out["mean"] == pytest.approx(z.mean(), abs=1e-12)
    assert out["ci"] == pytest.approx([z.mean() - half, z.mean() + half], abs=1e-12)
    # λ minimises that variance: a grid finds nothing smaller.
    grid = np.linspace(0, 1, 201)
    variances = [np.var(g * yhat + (np.where(rated, y, 0) - g * yhat) * rated / pi) for g in grid]
    assert np.var(z) <= min(variances) + 1e-12 and 0 < lam < 1


def test_the_ratio_form_matches_ppi_py():
    rng, y, yhat, scale = _study(seed=1)
    y_obs = lambda rated: np.where(rated, y, np.nan)  # noqa: E731
    # Any π: ppi_py's weighted PPI++ mean (weights 1/π, which it normalises), every item's score unlabelled.
    pi = active_probabilities(scale, budget=100, floor=0.2)
    rated = rng.random(y.size) < pi
    for lam in (0.0, 0.6, 1.0):
        ref = ppi_mean_pointestimate(y[rated], yhat[rated], yhat, lam=lam, w=1 / pi[rated])
        assert ipw_ppi_mean(y_obs(rated), yhat, pi, rated, lam=lam)["mean"] == pytest.approx(
            float(np.ravel(ref)[0]), abs=1e-12)
    # Uniform π: ppi_py's unweighted PPI++ mean; its interval misses only the covariance of the two terms
    # (ppi_py's unlabelled items are another sample, here they include the rated ones): 2λ·cov(f, Y − λf)/n.
    rated = rng.random(y.size) < 0.25
    pi = np.full(y.size, rated.mean())  # the realised share, as ppi_py's two samples have
    for lam in (0.0, 0.6, 1.0):
        ours = ipw_ppi_mean(y_obs(rated), yhat, pi, rated, lam=lam)
        assert ours["mean"] == pytest.approx(float(np.ravel(ppi_mean_pointestimate(
            y[rated], yhat[rated], yhat, lam=lam))[0]), abs=1e-12)
        lo, hi = ppi_mean_ci(y[rated], yhat[rated], yhat, alpha=0.05, lam=lam)
        ppi_se = float(hi[0] - lo[0]) / (2 * norm.ppf(0.975))
        r = y[rated] - lam * yhat[rated]
        cov = np.mean((yhat[rated] - yhat[rated].mean()) * (r - r.mean()))
        assert ours["se"] ** 2 == pytest.approx(ppi_se ** 2 + 2 * lam * cov / y.size, abs=1e-12)
    assert 0 < ipw_ppi_mean(y_obs(rated), yhat, pi, rated)["lambda"] < 1


def test_coverage_and_unbiasedness_over_replications():
    rng, y, yhat, scale = _study(seed=2, n=300)
    pi = active_probabilities(scale, budget=60, floor=0.2)
    truth = y.mean()  # fixed items, random sampling: the estimator is unbiased for their mean human value
    draws = rng.random((600, y.size)) < pi
    means, covered = [], 0
    for rated in draws:
        out = ipw_ppi_mean(np.where(rated, y, np.nan), yhat, pi, rated, lam=1.0)
        means.append(out["mean"])
        covered += out["ci"][0] <= truth <= out["ci"][1]
    assert abs(np.mean(means) - truth) < 4 * np.std(means) / np.sqrt(len(means))
    assert covered / len(draws) >= 0.93


def test_bad_estimator_input_is_named():
    with pytest.raises(ValueError, match="y is missing for rated item 1"):
        ipw_ppi_mean([1, np.nan, 3], [1, 2, 3], [0.5, 0.5, 0.5], [True, True, False])
    with pytest.raises(ValueError, match=r"pi must be in \(0, 1\] \(item 2\)"):
        ipw_ppi_mean([1, 2, 3], [1, 2, 3], [0.5, 0.5, 0], [True, True, False])
    with pytest.raises(ValueError, match="lengths"):
        ipw_ppi_mean([1, 2], [1, 2, 3], [0.5, 0.5, 0.5], [True, True, False])


def test_per_system_estimates_and_lambda_extremes():
    rng, y, yhat, scale = _study(seed=3)
    system = np.where(np.arange(y.size) % 2 == 0, "A", "B")
    pi = active_probabilities(scale, 100, 0.3)
    rated = rng.random(y.size) < pi
    out = ipw_ppi_systems(system, np.where(rated, y, np.nan), yhat, pi, rated)
    assert set(out) == {"A", "B"}
    a = system == "A"
    assert out["A"]["mean"] == ipw_ppi_mean(np.where(rated, y, np.nan)[a], yhat[a], pi[a], rated[a])["mean"]
    assert ipw_ppi_lambda(y, np.full(y.size, 2.0), np.ones(y.size), np.ones(y.size)) == 0


def test_choose_design_is_uniform_without_signal_and_active_with_it():
    rng = np.random.default_rng(4)
    n = 2000
    scale = rng.lognormal(0, 1, n)
    resid = scale * rng.normal(size=n)
    pilot = rng.choice(n, 200, replace=False)
    power, floor = choose_design(scale, 200, scale[pilot], resid[pilot])
    assert floor <= 0.3
    noise = rng.permutation(scale)
    assert choose_design(noise, 200, noise[pilot], resid[pilot])[1] >= 0.7
    # Rows: one design each; NaN residuals are the pilot items no human rated.
    both = np.vstack([scale, noise])
    pilot_resid = np.vstack([resid[pilot], resid[pilot]])
    pilot_resid[:, ::3] = np.nan
    powers, floors = choose_design(both, 200, both[:, pilot], pilot_resid)
    assert floors[0] < floors[1]
