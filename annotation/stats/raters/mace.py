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
    """(posteriors, log marginal likelihood, strategy counts, knowing counts)."""
    k = data.n_classes
    spam = spamming[data.rater, 0] * strategy[data.rater, data.label]   # P(label | spam)
    know = spamming[data.rater, 1]
    with np.errstate(divide="ignore"):
        base = np.log(spam)
        lift = np.log(spam + know) - base  # the label's factor when the true class is the label given
    log_joint = np.bincount(data.item, weights=base, minlength=data.n_items)[:, None] - np.log(k)
    log_joint = log_joint + np.bincount(data.item * k + data.label, weights=lift,
                                        minlength=data.n_items * k).reshape(data.n_items, k)
    norm = logsumexp(log_joint, axis=1)
    post = np.exp(log_joint - norm[:, None])
    p_true = post[data.item, data.label]  # P(true class = the label given)
    knowing = p_true * know / (spam + know)
    spamming_share = 1.0 - knowing
    strategy_counts = np.bincount(data.rater * k + data.label, weights=spamming_share,
                                  minlength=data.n_raters * k).reshape(data.n_raters, k)
    knowing_counts = np.stack([data.per_rater(spamming_share), data.per_rater(knowing)], axis=1)
    return post, float(norm.sum()), strategy_counts, knowing_counts


def _vb_normalise(counts: np.ndarray, prior: np.ndarray) -> np.ndarray:
    return np.exp(digamma(counts + prior)) / np.exp(digamma((counts + prior).sum(axis=1)))[:, None]


def mace(data: Labels, *, n_iter: int = N_ITER, restarts: int = RESTARTS, seed: int = 0) -> LabelModel:
    """rater["competence"] (P(knows)), rater["strategy"] (n_raters x classes: how they spam);
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
