"""A rater model's `converged` says what happened: GLAD and noisy Bradley–Terry against the same
model run to a tight tolerance, and against a fit stopped short (which must say it was)."""

from __future__ import annotations

import numpy as np

from annotation.stats.raters import glad, noisy_bradley_terry
from annotation.stats.raters.glad import _e_step, _objective
from annotation.stats.raters.simulate import planted_comparisons, planted_labels


def _gradient(fit, data) -> float:
    """The MAP objective's gradient at the fit's parameters (GLAD's own function, after an E-step)."""
    beta = -np.log(fit.item["difficulty"])
    x = np.concatenate([fit.rater["ability"], beta])
    post, _ = _e_step(data, fit.rater["ability"], beta, np.log(fit.class_prior))
    return float(np.max(np.abs(_objective(x, data, post[data.item, data.label])[1])))


def test_glad_converges_where_its_gradient_vanishes_not_where_its_objective_fell():
    p = planted_labels(n_items=400, n_raters=10, per_item=5, n_classes=4, seed=2)
    fit = glad(p.data)
    tight = glad(p.data, tol=1e-6, max_iter=300)
    assert fit.converged and fit.iterations > 2  # crowd-kit's rule stopped here after 2 steps
    assert _gradient(fit, p.data) < 1e-3
    # the converged fit is the tightly converged one, to well below what a report shows
    assert np.abs(fit.rater_accuracy - tight.rater_accuracy).max() < 1e-4
    assert np.abs(fit.posteriors - tight.posteriors).max() < 1e-3
    # two steps (where the old rule said "converged") are measurably short of it, and say so now
    short = glad(p.data, max_iter=2)
    assert not short.converged and short.iterations == 2
    assert np.abs(short.rater_accuracy - tight.rater_accuracy).max() > 1e-4
    assert _gradient(short, p.data) > 1e-3


def test_noisy_bradley_terry_converges_within_its_default_steps_and_says_when_it_did_not():
    # 5,000 comparisons take about 500 L-BFGS-B steps (492 to 558, by the machine's floating point): the old
    # cap of 500 could report converged=False. A cap at half the steps this machine took must say so.
    c = planted_comparisons(n_outputs=30, n_raters=20, n=5000, spammers=3, seed=1)
    fit = noisy_bradley_terry(c.raters, c.left, c.right, c.left_wins)
    assert fit.converged and fit.iterations > 300
    cap = fit.iterations // 2
    capped = noisy_bradley_terry(c.raters, c.left, c.right, c.left_wins, max_iter=cap)
    assert not capped.converged and capped.iterations == cap
    assert fit.log_likelihood >= capped.log_likelihood - 1e-9
    assert np.corrcoef(fit.strength, c.strength)[0, 1] > 0.95
