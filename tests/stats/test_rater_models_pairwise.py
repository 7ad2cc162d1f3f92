"""Noisy Bradley–Terry (rater reliability) against crowd-kit 1.4.2's NoisyBradleyTerry, and on planted raters.

The model is the same; the algorithm is not: crowd-kit's hand-written gradient writes the rater
terms one index off (`gradient[labels + worker_idx]` for `1 + labels + worker_idx`) and assigns
instead of adding, so L-BFGS-B stops where the true gradient is not zero. The comparison is
therefore of the likelihood: at our solution it is at least crowd-kit's, evaluated by crowd-kit's
own likelihood function at both solutions, and our optimiser started from crowd-kit's solution
climbs to no higher maximum than ours.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from crowdkit.aggregation import NoisyBradleyTerry
from scipy.special import logit

from annotation.stats.raters import LabelError, noisy_bradley_terry
from annotation.stats.raters.simulate import planted_comparisons


def _crowdkit_total(x_ours, lft, rgt, y, r, n_out, n_r):
    """crowd-kit's log-likelihood (without its regulariser) at our parameter vector."""
    x = np.concatenate([[0.0], x_ours[:n_out], x_ours[n_out + n_r:], x_ours[n_out:n_out + n_r]])
    data = np.stack([lft + 1, rgt + 1, np.where(y == 1, lft, rgt) + 1], axis=1)
    return -NoisyBradleyTerry._compute_log_likelihood(x, data, r, n_out, n_r, 0.0)


@pytest.mark.parametrize("seed", [1, 2])
def test_likelihood_at_least_crowd_kit(seed):
    c = planted_comparisons(n_outputs=12, n_raters=10, n=800, spammers=2, seed=seed)
    n_out, n_r = 12, 10
    df = pd.DataFrame({"worker": c.raters, "left": c.left, "right": c.right,
                       "label": np.where(c.left_wins == 1, c.left, c.right)})
    ck = NoisyBradleyTerry(n_iter=100).fit(df)
    # crowd-kit's parameters back on our codes: scores and skills/biases come out through expit
    s = np.zeros(n_out)
    s[ck.scores_.index.to_numpy()] = logit(ck.scores_.to_numpy())
    gamma, q = np.zeros(n_r), np.zeros(n_r)
    gamma[ck.skills_.index.to_numpy()] = logit(ck.skills_.to_numpy())
    q[ck.biases_.index.to_numpy()] = logit(ck.biases_.to_numpy())
    theirs = np.concatenate([s, gamma, q])
    ours = noisy_bradley_terry(c.raters, c.left, c.right, c.left_wins, ridge=0.0)
    mine = np.concatenate([ours.strength, logit(ours.reliability), logit(ours.left_bias)])
    r = c.raters
    ll_theirs = _crowdkit_total(theirs, c.left, c.right, c.left_wins, r, n_out, n_r)
    ll_mine = _crowdkit_total(mine, c.left, c.right, c.left_wins, r, n_out, n_r)
    assert ll_mine == pytest.approx(ours.log_likelihood, abs=1e-6)  # the two likelihood functions agree
    assert ll_mine >= ll_theirs - 1e-6
    # the likelihood has several maxima: climbing on from crowd-kit's solution finds none higher
    restarted = noisy_bradley_terry(c.raters, c.left, c.right, c.left_wins, ridge=0.0, start=theirs)
    assert restarted.log_likelihood <= ours.log_likelihood + 1e-3


def test_planted_strengths_and_spammers_are_recovered():
    c = planted_comparisons(n_outputs=30, n_raters=20, n=3000, spammers=3, seed=1)
    fit = noisy_bradley_terry(c.raters, c.left, c.right, c.left_wins)
    assert fit.converged
    assert np.corrcoef(fit.strength, c.strength)[0, 1] > 0.95
    spam = np.flatnonzero(c.reliability == 0)
    assert set(np.argsort(fit.reliability)[:3]) == set(spam)
    assert np.all(fit.left_bias[spam] > 0.75)  # they guessed left 90% of the time
    assert fit.win_probability([0], [1])[0] == pytest.approx(1 / (1 + np.exp(fit.strength[1] - fit.strength[0])))


def test_ties_count_half_each_way():
    raters = np.array([0, 1, 0, 1, 0, 1])
    left, right = np.array([0, 1, 0, 1, 2, 2]), np.array([1, 0, 2, 2, 1, 0])
    wins = np.array([1.0, 0.5, 0.5, 0.0, 1.0, 0.5])
    fit = noisy_bradley_terry(raters, left, right, wins, ridge=0.0)
    g, b = fit.reliability[raters], fit.left_bias[raters]
    p = g / (1 + np.exp(fit.strength[right] - fit.strength[left])) + (1 - g) * b
    assert fit.log_likelihood == pytest.approx(np.sum(wins * np.log(p) + (1 - wins) * np.log(1 - p)), abs=1e-9)


def test_bad_comparisons_are_named():
    with pytest.raises(LabelError, match=r"left_wins\[1\] = 2.0"):
        noisy_bradley_terry([0, 0], [0, 1], [1, 2], [1, 2])
    with pytest.raises(LabelError, match="comparison 0 sets output 3 against itself"):
        noisy_bradley_terry([0], [3], [3], [1])
    with pytest.raises(LabelError, match="no comparisons"):
        noisy_bradley_terry([], [], [], [])
