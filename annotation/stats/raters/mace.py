"""MACE: which raters know the answer and which are spamming, and how they spam.

Each label: with probability competence[r] the rater knows and gives the true class; otherwise
they spam, drawing a class from their own strategy[r] (a rater who always says ACCEPT has a
strategy piled on ACCEPT and a competence near 0). True classes are uniform. Fitted by
variational Bayes with Beta(0.5, 0.5) on (spamming, knowing) and a symmetric Dirichlet(10) on
each strategy, a fixed number of iterations from random starting points (the best of
`restarts` by marginal likelihood), as crowd-kit 1.4.2's `MACE` does.

crowd-kit draws every restart from the same seed (so its restarts coincide) and its strategy
counts are ordered by sorted rater and class names while its parameters are ordered by first
appearance; here restart r uses seed + r and everything is indexed by the codes given, so the
two agree on data whose codes are in order of first appearance.

Reference: Hovy, Berg-Kirkpatrick, Vaswani & Hovy (2013), Learning whom to trust with MACE,
NAACL-HLT, 1120-1130.
"""

from __future__ import annotations

import numpy as np
from scipy.special import digamma, logsumexp
from scipy.stats import uniform

from .data import LabelModel, Labels, finish

N_ITER = 50
RESTARTS = 1
NOISE = 0.5
SPAM_PRIOR, KNOW_PRIOR, STRATEGY_PRIOR = 0.5, 0.5, 10.0


def _start(data: Labels, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(spamming: n_raters x [spam, know], strategy: n_raters x classes), rows normalised."""
    spamming = uniform(1, 1 + NOISE).rvs(size=(data.n_raters, 2), random_state=seed)
    strategy = uniform(1, 1 + NOISE).rvs(size=(data.n_raters, data.n_classes), random_state=seed)
    return spamming / spamming.sum(axis=1, keepdims=True), strategy / strategy.sum(axis=1, keepdims=True)


def _e_step(data: Labels, spamming: np.ndarray, strategy: np.ndarray):
    """(posteriors, log marginal likelihood, strategy counts, knowing counts). Every factor depends
    on (rater, class given) alone, so the sums over labels are products with data.incidence."""
    k, n_r = data.n_classes, data.n_raters
    spam = spamming[:, :1] * strategy                      # (rater, class given): P(label | spamming)
    know = np.broadcast_to(spamming[:, 1:], spam.shape)
    with np.errstate(divide="ignore"):
        base = np.log(spam).ravel()
        lift = np.log(spam + know).ravel() - base          # the factor when the true class is the one given
    per_cell = np.where(np.isfinite(base), base, 0.0)[:, None] + np.tile(np.eye(k), (n_r, 1)) * lift[:, None]
    log_joint = data.incidence @ per_cell - np.log(k)
    norm = logsumexp(log_joint, axis=1)
    post = np.exp(log_joint - norm[:, None])
    # per (rater, class given): the labels' summed P(true class = the class given)
    p_true = np.einsum("rll->rl", (data.incidence_t @ post).reshape(n_r, k, k))
    knowing = p_true * (know / (spam + know))
    given = np.asarray(data.incidence.sum(axis=0)).reshape(n_r, k)
    strategy_counts = given - knowing
    knowing_counts = np.stack([strategy_counts.sum(axis=1), knowing.sum(axis=1)], axis=1)
    return post, float(norm.sum()), strategy_counts, knowing_counts


def _vb_normalise(counts: np.ndarray, prior: np.ndarray) -> np.ndarray:
    return np.exp(digamma(counts + prior)) / np.exp(digamma((counts + prior).sum(axis=1)))[:, None]


def mace(data: Labels, *, n_iter: int = N_ITER, restarts: int = RESTARTS, seed: int = 0) -> LabelModel:
    """MACE (Hovy et al. 2013): rater["competence"] (P(knows)), rater["strategy"] (n_raters x classes: how they spam);
    rater_accuracy = competence + (1 - competence) / K: a spammer's strategy hits a uniform true
    class one time in K."""
    priors = np.array([SPAM_PRIOR, KNOW_PRIOR])[None, :]
    best = None
    for r in range(restarts):
        spamming, strategy = _start(data, seed + r)
        _, ll, strat_counts, know_counts = _e_step(data, spamming, strategy)
        for _ in range(n_iter):
            spamming = _vb_normalise(know_counts, priors)
            strategy = _vb_normalise(strat_counts, STRATEGY_PRIOR)
            _, ll, strat_counts, know_counts = _e_step(data, spamming, strategy)
        if best is None or ll > best[0]:
            best = (ll, spamming, strategy)
    _, spamming, strategy = best
    post, ll, _, _ = _e_step(data, spamming, strategy)
    competence = spamming[:, 1] / spamming.sum(axis=1)
    k = data.n_classes
    acc = competence + (1 - competence) / k
    return finish("mace", data, post, acc, np.full(k, 1.0 / k), ll, n_params=data.n_raters * k,
                  iterations=n_iter, converged=True,
                  rater={"competence": competence, "strategy": strategy / strategy.sum(axis=1, keepdims=True)})
