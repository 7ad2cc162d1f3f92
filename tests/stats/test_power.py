"""The study planner's formulas: against statsmodels and scipy, and by simulation of the model."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import binom, binomtest, norm, ttest_1samp
from statsmodels.stats.power import TTestPower
from statsmodels.stats.proportion import binom_test_reject_interval

from annotation.stats import power as pw

SCORES = dict(delta=0.5, sd=1.2, icc=0.5, corr=0.4)
REPS = 2000


def _effect(raters: int, **kw) -> float:
    kw = {**SCORES, **kw}
    return kw["delta"] / math.sqrt(pw.difference_variance(sd=kw["sd"], icc=kw["icc"], corr=kw["corr"],
                                                          raters=raters))


def _within(observed: float, expected: float, reps: int = REPS, k: float = 4.0) -> bool:
    se = math.sqrt(expected * (1 - expected) / reps)
    return abs(observed - expected) <= k * se


# ------------------------------------------------------------------ absolute scores


def test_variance_reduces_to_the_textbook_cases():
    # ρ = 0: every rating is noise, the mean of R has variance σ²/R per system.
    assert pw.difference_variance(sd=2, icc=0, corr=0.3, raters=4) == pytest.approx(2 * 4 / 4)
    # ρ = 1: raters agree perfectly, only the true-score difference 2σ²(1−c) is left, whatever R.
    assert pw.difference_variance(sd=2, icc=1, corr=0.25, raters=1) == pytest.approx(2 * 4 * 0.75)
    assert pw.difference_variance(sd=2, icc=1, corr=0.25, raters=6) == pytest.approx(2 * 4 * 0.75)


@pytest.mark.parametrize("raters,power,alpha", [(1, 0.8, 0.05), (3, 0.8, 0.05), (2, 0.9, 0.01), (6, 0.95, 0.1)])
def test_items_needed_matches_statsmodels_ttest_power(raters, power, alpha):
    effect = _effect(raters)
    solved = TTestPower().solve_power(effect_size=effect, alpha=alpha, power=power, alternative="two-sided")
    n = pw.items_needed(**SCORES, raters=raters, power=power, alpha=alpha)
    assert n == math.ceil(solved)
    reached = pw.paired_power(n, **SCORES, raters=raters, alpha=alpha)
    assert reached == pytest.approx(TTestPower().power(effect, n, alpha, alternative="two-sided"), abs=1e-9)
    assert reached >= power > pw.paired_power(n - 1, **SCORES, raters=raters, alpha=alpha)


def test_normal_approximation_is_the_z_formula_and_a_little_below_the_t_answer():
    v = pw.difference_variance(sd=1.2, icc=0.5, corr=0.4, raters=3)
    expected = (norm.ppf(0.975) + norm.ppf(0.8)) ** 2 * v / 0.5**2
    assert pw.items_normal(**SCORES, raters=3) == pytest.approx(expected)
    assert 0 < pw.items_needed(**SCORES, raters=3) - expected < 4


def test_a_large_effect_needs_the_minimum_of_two_items():
    big = dict(delta=50, sd=1, icc=0.9, corr=0.5, raters=3)
    assert pw.items_needed(**big) == 2
    assert TTestPower().power(_effect(3, **{k: big[k] for k in SCORES}), 2, 0.05) >= 0.8


def test_table_has_one_row_per_rater_count_with_totals():
    table = pw.items_table(**SCORES)
    assert [r["raters"] for r in table] == [1, 2, 3, 4, 5, 6]
    items = [r["items"] for r in table]
    assert items == sorted(items, reverse=True) and items[0] > items[-1]  # more raters, fewer items
    for r in table:
        assert r["total_ratings"] == r["raters"] * r["items"] * 2
        assert r["items"] == pw.items_needed(**SCORES, raters=r["raters"])


@pytest.mark.parametrize("raters,icc,corr", [(1, 0.5, 0.4), (3, 0.3, 0.0), (4, 0.7, 0.6)])
def test_simulated_paired_t_tests_reach_the_planned_power(raters, icc, corr):
    """Ratings drawn from the model (true scores correlated across systems, independent rater
    noise) at the planned n and R: the t-test rejects about as often as planned."""
    delta, sd = 0.5, 1.2
    n = pw.items_needed(delta=delta, sd=sd, icc=icc, corr=corr, raters=raters)
    planned = pw.paired_power(n, delta=delta, sd=sd, icc=icc, corr=corr, raters=raters)
    rng = np.random.default_rng(12 + raters)
    true_sd, noise_sd = sd * math.sqrt(icc), sd * math.sqrt(1 - icc)
    cov = true_sd**2 * np.array([[1, corr], [corr, 1]])
    truth = rng.multivariate_normal([delta, 0.0], cov, size=(REPS, n))  # (reps, items, system)
    ratings = truth[..., None] + rng.normal(0, noise_sd, size=(REPS, n, 2, raters))
    means = ratings.mean(axis=3)
    # the model's total variance of one rating is σ², as the formula assumes
    assert ratings[..., 1, :].var() == pytest.approx(sd**2, rel=0.03)
    diffs = means[..., 0] - means[..., 1]
    rejected = ttest_1samp(diffs, 0.0, axis=1).pvalue < 0.05
    assert _within(rejected.mean(), planned)
    assert planned >= 0.8


# ------------------------------------------------------------------ pairwise comparisons


def _reject_set(n: int, alpha: float) -> list[int]:
    return [k for k in range(n + 1) if binomtest(k, n, 0.5).pvalue <= alpha]


@pytest.mark.parametrize("p,alpha", [(0.6, 0.05), (0.3, 0.05), (0.7, 0.01)])
def test_binomial_power_is_the_binomial_sum_over_binomtests_rejections(p, alpha):
    for n in [1, 5, 6, 17, 40, 101, 200]:
        expected = sum(binom.pmf(k, n, p) for k in _reject_set(n, alpha))
        assert pw.binomial_power(n, win_prob=p, alpha=alpha) == pytest.approx(expected, abs=1e-12)


def test_rejection_region_agrees_with_statsmodels():
    # statsmodels gives the open interval of counts that are not rejected
    for n in (30, 200):
        low, high = binom_test_reject_interval(0.5, n, alpha=0.05)
        inside = [k for k in range(n + 1) if low < k < high]
        assert set(range(n + 1)) - set(inside) == set(_reject_set(n, 0.05))


def test_judgements_needed_stays_above_target_and_not_before():
    n = pw.judgements_needed(win_prob=0.6)
    powers = pw.binomial_power(np.arange(1, n + pw.STAY_ABOVE + 1), win_prob=0.6)
    assert (powers[n - 1:] >= 0.8).all()
    # one step earlier, the window of the next 20 has a dip below target
    assert (powers[n - 2:n - 2 + pw.STAY_ABOVE + 1] < 0.8).any()
    # the oscillation is real: some smaller n already reached the target once
    assert (powers[: n - 1] >= 0.8).any()


def test_normal_approximation_is_fleiss_one_sample_proportion_formula():
    p = 0.6
    n = pw.judgements_normal(win_prob=p)
    # at that n, the normal power Φ((|p−½|√n − z·½)/√(pq)) is exactly the target
    z = norm.ppf(0.975)
    assert norm.cdf((abs(p - 0.5) * math.sqrt(n) - z * 0.5) / math.sqrt(p * (1 - p))) == pytest.approx(0.8)
    assert n == pytest.approx(193.85, abs=0.01)
    assert pw.judgements_normal(win_prob=0.4) == pytest.approx(n)  # symmetric


def test_bradley_terry_difference_gives_the_logistic_win_probability():
    assert pw.bt_win_prob(math.log(3)) == pytest.approx(0.75)
    plan = pw.pairwise_plan(bt_diff=math.log(3))
    assert plan["win_prob"] == pytest.approx(0.75)
    assert plan["decided"] == pw.judgements_needed(win_prob=0.75)


def test_ties_scale_the_judgements_up():
    plan = pw.pairwise_plan(win_prob=0.6, ties=0.2)
    assert plan["decided"] == pw.judgements_needed(win_prob=0.6)
    assert plan["judgements"] == math.ceil(plan["decided"] / 0.8)


def test_simulated_binomial_tests_reach_the_planned_power():
    p = 0.62
    n = pw.judgements_needed(win_prob=p)
    planned = pw.binomial_power(n, win_prob=p)
    rng = np.random.default_rng(7)
    wins = rng.binomial(n, p, size=REPS)
    rejected = np.array([binomtest(int(w), n, 0.5).pvalue <= 0.05 for w in wins])
    assert _within(rejected.mean(), planned)


def test_simulated_judgements_with_ties_reach_about_the_target():
    """Ties drawn at rate t; the binomial test runs on the decided judgements only. The
    decided count is random around n, so the power is close to, not exactly, the plan."""
    p, ties = 0.65, 0.3
    plan = pw.pairwise_plan(win_prob=p, ties=ties)
    rng = np.random.default_rng(8)
    counts = rng.multinomial(plan["judgements"], [ties, (1 - ties) * p, (1 - ties) * (1 - p)], size=REPS)
    decided = counts[:, 1] + counts[:, 2]
    rejected = np.array([binomtest(int(w), int(d), 0.5).pvalue <= 0.05 for w, d in zip(counts[:, 1], decided)])
    assert decided.mean() == pytest.approx(plan["decided"], rel=0.02)
    assert abs(rejected.mean() - 0.8) < 4 * math.sqrt(0.8 * 0.2 / REPS) + 0.02


# ------------------------------------------------------------------ bad input


@pytest.mark.parametrize("kwargs,argument", [
    ({"delta": 0}, "delta"), ({"delta": -1}, "delta"), ({"sd": 0}, "sd"), ({"sd": float("nan")}, "sd"),
    ({"icc": 1.2}, "icc"), ({"icc": -0.1}, "icc"), ({"corr": 1}, "corr"), ({"corr": -1.5}, "corr"),
    ({"raters": 0}, "raters"), ({"raters": 2.5}, "raters"), ({"power": 1}, "power"), ({"power": 0}, "power"),
    ({"alpha": 0}, "alpha"), ({"alpha": 1.5}, "alpha"), ({"delta": "big"}, "delta"),
])
def test_bad_score_inputs_name_the_argument(kwargs, argument):
    args = {**SCORES, "raters": 3, "power": 0.8, "alpha": 0.05, **kwargs}
    with pytest.raises(pw.InvalidArgument) as info:
        pw.scores_plan(**args)
    assert info.value.argument == argument
    assert str(info.value).startswith(argument)


@pytest.mark.parametrize("kwargs,argument", [
    ({"win_prob": 0.5}, "win_prob"), ({"win_prob": 1.0}, "win_prob"), ({"win_prob": 0}, "win_prob"),
    ({"bt_diff": 0.0}, "bt_diff"), ({"win_prob": 0.6, "ties": 1.0}, "ties"), ({"win_prob": 0.6, "ties": -0.1}, "ties"),
    ({"win_prob": 0.6, "power": 1.2}, "power"), ({"win_prob": 0.6, "alpha": 0}, "alpha"), ({}, "win_prob"),
])
def test_bad_pairwise_inputs_name_the_argument(kwargs, argument):
    with pytest.raises(pw.InvalidArgument) as info:
        pw.pairwise_plan(**kwargs)
    assert info.value.argument == argument


def test_a_hopelessly_small_difference_is_refused_not_searched_forever():
    with pytest.raises(pw.InvalidArgument, match="delta"):
        pw.items_needed(delta=1e-4, sd=1, icc=0.2, corr=0, raters=1)
    with pytest.raises(pw.InvalidArgument, match="win_prob"):
        pw.judgements_needed(win_prob=0.5001)
