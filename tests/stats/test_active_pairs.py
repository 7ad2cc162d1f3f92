"""Active comparisons (issue 58 §3): the fit, the choice, its recorded probabilities, and the planted-ranking goal."""

import numpy as np
import pytest
import statsmodels.api as sm

from annotation.stats.active_pairs import ActivePairsPolicy, bt_fit, choose_pairs, simulate_active_pairs


def _planted_wins(k=5, n=3000, seed=0):
    rng = np.random.default_rng(seed)
    strength = np.linspace(-1, 1, k)
    i = rng.integers(k, size=n)
    j = (i + rng.integers(1, k, size=n)) % k
    won = rng.random(n) < 1 / (1 + np.exp(strength[j] - strength[i]))
    return i, j, won


def test_bt_fit_matches_statsmodels_logit():
    i, j, won = _planted_wins()
    k = 5
    wins = np.zeros((k, k))
    np.add.at(wins, (np.where(won, i, j), np.where(won, j, i)), 1)
    theta, _ = bt_fit(wins, ridge=1e-9)
    x = np.zeros((i.size, k))
    x[np.arange(i.size), i], x[np.arange(i.size), j] = 1, -1
    ref = sm.Logit(won.astype(float), x[:, 1:]).fit(disp=0)  # system 0 fixed at 0
    ref_theta = np.concatenate([[0.0], ref.params])
    np.testing.assert_allclose(theta - theta.mean(), ref_theta - ref_theta.mean(), atol=1e-5)
    cov = np.linalg.inv(-ref.model.hessian(ref.params))
    _, our_cov = bt_fit(wins, ridge=1e-9)
    d = our_cov[1, 1] + our_cov[2, 2] - 2 * our_cov[1, 2]  # a contrast, free of the centring
    assert d == pytest.approx(cov[0, 0] + cov[1, 1] - 2 * cov[0, 1], rel=1e-4)


def test_random_share_recorded_probabilities_and_uniform_random_pairs():
    k, policy = 6, ActivePairsPolicy(random_share=0.3)
    rng = np.random.default_rng(1)
    wins = np.ones((k, k)) - np.eye(k)
    balance = np.zeros(k)
    choices = [c for _ in range(400) for c in choose_pairs(wins, balance, policy=policy, rng=rng, n=5)]
    random_ones = [c for c in choices if c.how == "random"]
    assert abs(len(random_ones) / len(choices) - 0.3) < 0.05
    floor = 0.3 / 15
    assert {round(c.probability, 9) for c in random_ones} == {round(floor, 9)}
    assert {round(c.probability, 9) for c in choices if c.how == "active"} == {round(floor + 0.7, 9)}
    counts = np.zeros(15)
    index = {(a, b): n for n, (a, b) in enumerate((a, b) for a in range(k) for b in range(a + 1, k))}
    for c in random_ones:
        counts[index[tuple(sorted((c.left, c.right)))]] += 1
    from scipy.stats import chisquare
    assert chisquare(counts).pvalue > 0.001  # uniform over all pairs
    assert np.abs(balance).max() <= 2  # each system shown first about as often as second


def test_active_choice_is_the_unsettled_neighbour_pair():
    # Systems 0 < 1 << 2: 0 and 1 are close and little compared, 2 is clearly the best.
    wins = np.array([[0, 5, 1], [6, 0, 1], [40, 40, 0]], dtype=float)
    c = choose_pairs(wins, np.zeros(3), policy=ActivePairsPolicy(random_share=1e-9), rng=np.random.default_rng(0))[0]
    assert {c.left, c.right} == {0, 1} and c.how == "active"


def test_bad_policy_names_the_field():
    with pytest.raises(ValueError, match="random_share"):
        ActivePairsPolicy(random_share=0)
    with pytest.raises(ValueError, match="wins"):
        choose_pairs(np.zeros((1, 1)), np.zeros(1), policy=ActivePairsPolicy(), rng=np.random.default_rng(0))


def test_planted_ranking_goal_at_most_60_percent_of_random_pairs():
    # 12 systems evenly spread over 4 logits; 10 seeds, Spearman checked every 50 comparisons.
    r = simulate_active_pairs(n_systems=12, spread=4.0, budget=1200, step=50, seeds=range(10))
    assert r["uniform_needed"] is not None and r["active_needed"] is not None
    assert r["active_needed"] <= 0.6 * r["uniform_needed"]
