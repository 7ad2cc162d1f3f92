import numpy as np
import pytest
from scipy import stats as sps

from annotation.stats.bootstrap import bootstrap_ci
from annotation.stats.correlation import judge_vs_humans, lin_ccc, mean_difference


def test_lin_ccc_matches_its_mse_definition():
    rng = np.random.default_rng(0)
    x = rng.normal(3, 1, 300)
    y = 0.8 * x + rng.normal(0.5, 0.5, 300)
    # Lin (1989): rho_c = 1 - E(X - Y)^2 / (s_x^2 + s_y^2 + (m_x - m_y)^2), population moments.
    expected = 1 - np.mean((x - y) ** 2) / (x.var() + y.var() + (x.mean() - y.mean()) ** 2)
    assert lin_ccc(x, y).value == pytest.approx(expected, abs=1e-12)
    assert lin_ccc(x, x).value == pytest.approx(1.0)
    assert lin_ccc(x, x + 1).value < 1.0  # a shift lowers agreement but not correlation


def test_judge_vs_humans_against_scipy():
    rng = np.random.default_rng(1)
    h = rng.integers(1, 6, 120) + rng.choice([0, 0.5], 120)
    j = np.clip(np.rint(h + rng.normal(0, 1, 120)), 1, 5)
    j[:5] = np.nan
    out = judge_vs_humans(j, h)
    ok = ~np.isnan(j)
    assert out["pearson"].value == pytest.approx(sps.pearsonr(j[ok], h[ok]).statistic, abs=1e-12)
    assert out["spearman"].value == pytest.approx(sps.spearmanr(j[ok], h[ok]).statistic, abs=1e-12)
    assert out["kendall_tau_b"].value == pytest.approx(sps.kendalltau(j[ok], h[ok]).statistic, abs=1e-12)
    assert out["mae"].value == pytest.approx(np.mean(np.abs(j[ok] - h[ok])))
    rh = np.floor(h[ok] + 0.5)
    assert out["exact_agreement"].value == pytest.approx(np.mean(j[ok] == rh))
    assert out["within_1_agreement"].value == pytest.approx(np.mean(np.abs(j[ok] - rh) <= 1))


def test_bias_ci_matches_scipy_t_interval():
    a = np.array([3.0, 4, 5, 4, 2, 5, 4])
    b = np.array([2.5, 4, 4, 3, 2, 4.5, 3])
    d = a - b
    lo, hi = sps.t.interval(0.95, d.size - 1, loc=d.mean(), scale=sps.sem(d))
    stat = mean_difference(a, b)
    assert stat.value == pytest.approx(d.mean())
    assert stat.ci == pytest.approx((lo, hi))


def test_bootstrap_percentile_close_to_scipy_and_seeded():
    rng = np.random.default_rng(2)
    x = rng.exponential(2.0, 200)
    ours = bootstrap_ci(lambda a: a.mean(axis=1), x, n_boot=20000, seed=1, vectorized=True)
    ref = sps.bootstrap((x,), np.mean, n_resamples=20000, method="percentile", random_state=3)
    assert ours.value == pytest.approx(x.mean())
    assert ours.ci[0] == pytest.approx(ref.confidence_interval.low, abs=0.03)
    assert ours.ci[1] == pytest.approx(ref.confidence_interval.high, abs=0.03)
    again = bootstrap_ci(lambda a: a.mean(axis=1), x, n_boot=20000, seed=1, vectorized=True)
    assert again.ci == ours.ci
    # the loop path resamples the same items and so gives the same interval
    looped = bootstrap_ci(np.mean, x, n_boot=20000, seed=1)
    assert looped.ci == pytest.approx(ours.ci)


def test_bootstrap_of_paired_statistic_resamples_items_together():
    rng = np.random.default_rng(4)
    x = rng.normal(size=100)
    y = x + rng.normal(scale=0.1, size=100)
    out = bootstrap_ci(lambda a, b: sps.pearsonr(a, b).statistic, x, y, n_boot=300, seed=0)
    assert 0.97 < out.ci[0] <= out.value <= out.ci[1] <= 1.0


def test_bootstrap_needs_two_items():
    assert bootstrap_ci(np.mean, np.array([1.0]), n_boot=10).value is None
