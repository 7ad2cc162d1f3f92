"""The calibrated design of active sampling (annotation/stats/active_design.py) and the IPW estimator's
variance against its hand-derived closed form (annotation/stats/active.py), by Monte Carlo with fixed seeds."""

import numpy as np
import pytest

from annotation.stats.active import active_probabilities, ipw_ppi_mean
from annotation.stats.active_design import calibrated_probabilities, predicted_saving, residual_map


def test_the_map_is_the_bin_mean_of_the_squared_residuals():
    u = np.array([0, 0, 0, 0, 1, 1, 2, 2.0])
    rated_u = np.array([0, 0, 1, 2, 2.0])
    r2 = np.array([0.0, 0.2, 1.0, 3.0, 5.0])
    m = residual_map(u, rated_u, r2, min_share=0.25, prior=0)
    assert m.tolist() == pytest.approx([0.1] * 4 + [1.0] * 2 + [4.0] * 2)
    # A pseudo-rating at the overall mean (1.84) pulls each bin towards it, most where it has few ratings.
    m1 = residual_map(u, rated_u, r2, min_share=0.25, prior=1)
    assert m1[0] == pytest.approx((0.2 + 1.84) / 3) and m1[4] == pytest.approx((1.0 + 1.84) / 2)
    # A bin that breaks the order is pooled with its neighbour (never a smaller error at more disagreement).
    m2 = residual_map(u, rated_u, np.array([2.0, 2.0, 0.0, 3.0, 5.0]), min_share=0.25, prior=0)
    assert m2[0] == m2[4] == pytest.approx(4 / 3) and m2[6] == pytest.approx(4.0)
    assert residual_map(u, rated_u, r2, min_share=0.25, prior=0, monotone=False)[0] == pytest.approx(0.1)


def test_jury_spreads_equal_up_to_rounding_share_a_bin():
    u = np.array([0.0, np.sqrt(1 / 3), 0.5773502691896258, 1.0])
    m = residual_map(u, u, np.array([0.0, 1.0, 3.0, 4.0]), min_share=0.25, prior=0)
    assert m[1] == m[2] == pytest.approx(2.0)


@pytest.mark.parametrize("args, message", [
    (([0, 1], [0], [1.0]), "at least two"),
    (([0, 1], [0, 1], [1.0]), "pair the same"),
    (([0, 1], [0, 1], [1.0, -1.0]), ">= 0"),
    (([0, np.nan], [0, 1], [1.0, 1.0]), "one finite value"),
])
def test_bad_maps_are_named(args, message):
    with pytest.raises(ValueError, match=message):
        residual_map(*args)


def test_calibrated_probabilities_follow_the_predicted_residual_and_keep_budget_and_floor():
    rng = np.random.default_rng(0)
    u = rng.choice([0.0, 0.6, 1.2], 3000, p=[0.7, 0.2, 0.1])
    resid = rng.normal(0, 0.05 + u)
    rated = rng.random(u.size) < 0.1
    pi = calibrated_probabilities(u, 300, u[rated], resid[rated], floor=0.2)
    assert pi.sum() == pytest.approx(300)
    assert pi.min() >= 0.2 * 0.1 - 1e-12
    by = [pi[u == v][0] for v in (0.0, 0.6, 1.2)]
    assert by[0] < by[1] < by[2]


def test_predicted_saving_against_its_closed_form():
    # Half the items never wrong (m = 0), half with E[r²] = 1: the oracle π ∝ sqrt(m) rates only the
    # second half, 1 − mean(sqrt m)²/mean(m) = 1 − 0.25/0.5 = 0.5.
    m = np.repeat([0.0, 1.0], 500)
    out = predicted_saving(m, 100, floor=0.2)
    assert out["oracle_saving"] == pytest.approx(0.5)
    # With the floor: π = 0.02 on the first half, 0.18 on the second; mean(m/π)·B/n/mean(m) = (0.5/0.18)·0.1/0.5.
    assert out["saving"] == pytest.approx(1 - (0.5 / 0.18) * 0.1 / 0.5)
    assert predicted_saving(m, 100, floor=1.0)["saving"] == pytest.approx(0.0, abs=1e-12)
    assert predicted_saving(np.zeros(10), 5) == {"saving": 0.0, "oracle_saving": 0.0}


def _population(seed=11, n=1000):
    rng = np.random.default_rng(seed)
    y = rng.integers(1, 6, n).astype(float)
    wrong = rng.random(n) < 0.2
    f = np.where(wrong, np.clip(y + rng.choice([-2, -1, 1, 2], n), 1, 5), y)
    pi = active_probabilities(np.where(wrong, 1.0, 0.1), n / 5, floor=0.2)
    return rng, y, f, pi


def test_horvitz_thompson_variance_equals_the_closed_form_by_monte_carlo():
    # A fixed population, fixed π, λ = 1, the paper's form: θ = mean(f) + mean((Y − f)ξ/π) is unbiased for
    # mean(Y), and over the independent draws ξ_i ~ Bernoulli(π_i) its variance is exactly
    # (1/n²)·Σ (Y_i − f_i)²(1 − π_i)/π_i.
    rng, y, f, pi = _population()
    n = y.size
    draws = rng.random((20_000, n)) < pi
    theta = f.mean() + ((y - f) * draws / pi).mean(axis=1)
    closed = float(np.sum((y - f) ** 2 * (1 - pi) / pi) / n ** 2)
    assert abs(theta.mean() - y.mean()) < 4 * np.sqrt(closed / draws.shape[0])
    assert theta.var() == pytest.approx(closed, rel=0.04)  # the Monte-Carlo error of a variance of 20,000 draws: ~1%
    # The estimator computes exactly that θ.
    for rated in draws[:5]:
        out = ipw_ppi_mean(np.where(rated, y, np.nan), f, pi, rated, lam=1.0, normalise=False)
        assert out["mean"] == pytest.approx(f.mean() + np.mean((y - f) * rated / pi), abs=1e-12)


def test_ratio_form_variance_matches_its_linearisation_by_monte_carlo():
    # The Hájek form divides the correction by Σξ/π: to first order its variance is
    # (1/n²)·Σ (r_i − r̄)²(1 − π_i)/π_i with r = Y − f, so a constant bias of the judge costs nothing.
    rng, y, f, pi = _population(seed=12)
    f = f + 0.7  # a biased judge
    n = y.size
    draws = rng.random((20_000, n)) < pi
    r = y - f
    w = draws / pi
    theta = f.mean() + (w * r).sum(axis=1) / w.sum(axis=1)
    closed = float(np.sum((r - r.mean()) ** 2 * (1 - pi) / pi) / n ** 2)
    assert theta.var() == pytest.approx(closed, rel=0.06)
    horvitz = float(np.sum(r ** 2 * (1 - pi) / pi) / n ** 2)
    assert closed < 0.5 * horvitz  # what the ratio form saves under that bias
    out = ipw_ppi_mean(np.where(draws[0], y, np.nan), f, pi, draws[0], lam=1.0)
    assert out["mean"] == pytest.approx(theta[0], abs=1e-12)


def test_hajek_mean_is_the_plain_mean_under_equal_weights_and_recovers_a_population_mean():
    from annotation.stats.active import hajek_mean

    x = np.array([1.0, 2.0, 4.0, 7.0])
    out = hajek_mean(x, np.full(4, 3.0))
    assert out["mean"] == pytest.approx(x.mean()) and out["effective_n"] == pytest.approx(4)
    assert out["se"] == pytest.approx(x.std(ddof=1) / 2)  # n/(n−1)·Σ(x−m)²/n² = s²/n
    # Poisson sampling of a planted population with π growing with the value: weighted mean unbiased
    rng = np.random.default_rng(58)
    y = rng.normal(3, 1, 20000)
    pi = np.clip(0.05 + 0.05 * (y - y.min()), 0.05, 1)
    drawn = rng.random(y.size) < pi
    est = hajek_mean(y[drawn], 1 / pi[drawn])
    assert abs(est["mean"] - y.mean()) < 3 * est["se"] and y[drawn].mean() - y.mean() > 10 * est["se"]
    with pytest.raises(ValueError, match="positive weight"):
        hajek_mean([1.0], [0.0])
