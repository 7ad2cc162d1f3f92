"""Majority vote, Dawid–Skene and one-coin Dawid–Skene: the rater as a confusion matrix.

References: Dawid & Skene (1979), Maximum likelihood estimation of observer error-rates using
the EM algorithm, JRSS C 28(1); Zhang, Chen, Zhou & Jordan (2016), Spectral methods meet EM,
JMLR 17 (the one-coin model). Initialisation and iteration follow crowd-kit 1.4.2
(`DawidSkene`, `OneCoinDawidSkene`) so that the same data give the same numbers: the first
parameters are the M-step of the majority-vote shares, each iteration is an E-step (posteriors
from the current parameters) then an M-step, probabilities are clipped at 1e-10.

Each fit returns the posteriors of its last E-step with the parameters that produced them
(crowd-kit reports the M-step after it as well: its `errors_` after n iterations are ours
after n + 1).
"""

from __future__ import annotations

import numpy as np

from .data import EPS, LabelModel, Labels, finish, normalise_log

MAX_ITER = 100
TOL = 1e-7  # stop when the marginal log-likelihood gains less than this per label


def majority_vote(data: Labels) -> LabelModel:
    """Posteriors are each unit's vote shares (uniform for a unit nobody labelled); crowd-kit 1.4.2's
    MajorityVote, the baseline of Zheng et al. (2017), Truth inference in crowdsourcing, PVLDB 10(5).

    Its likelihood, for choosing among models, is that of one accuracy shared by every rater
    and the class frequencies (the model under which the majority is the best guess); the
    accuracy is the mean share of the raters' labels that agree with the vote shares."""
    votes = data.votes()
    total = votes.sum(axis=1, keepdims=True)
    post = np.where(total > 0, votes / np.where(total > 0, total, 1), 1.0 / data.n_classes)
    shared = float(post[data.item, data.label].mean())
    acc = np.full(data.n_raters, shared)
    prior = post.mean(axis=0)
    _, ll = _one_coin_e_step(data, prior, acc)
    return finish("majority", data, post, acc, prior, ll, n_params=data.n_classes, iterations=0, converged=True)


def _clip_log(p: np.ndarray) -> np.ndarray:
    return np.log(np.clip(p, EPS, None))


def _confusions(data: Labels, post: np.ndarray) -> np.ndarray:
    """M-step: (n_raters, observed class, true class), each true-class column summing to 1 over
    the classes the rater used (those never used stay 0, as in crowd-kit)."""
    k = data.n_classes
    counts = (data.incidence_t @ post).reshape(data.n_raters, k, k)
    used = (np.asarray(data.incidence.sum(axis=0)).ravel() > 0).reshape(data.n_raters, k, 1)
    counts = np.where(used, np.clip(counts, EPS, None), 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.nan_to_num(counts / counts.sum(axis=1, keepdims=True))


def _ds_e_step(data: Labels, prior: np.ndarray, confusion: np.ndarray) -> tuple[np.ndarray, float]:
    k = data.n_classes
    with np.errstate(divide="ignore"):
        log_conf = np.where(confusion > 0, np.log(confusion), 0.0)  # 0 only where a rater never used the class
    return normalise_log(_clip_log(prior)[None, :] + data.incidence @ log_conf.reshape(data.n_raters * k, k))


def _one_coin_e_step(data: Labels, prior: np.ndarray, skill: np.ndarray) -> tuple[np.ndarray, float]:
    k = data.n_classes
    right = np.log(np.clip(skill, EPS, 1 - EPS))
    wrong = np.log(np.clip((1 - skill) / (k - 1), EPS, 1 - EPS))
    per_cell = np.repeat(wrong, k)[:, None] + np.tile(np.eye(k), (data.n_raters, 1)) * np.repeat(right - wrong, k)[:, None]
    return normalise_log(_clip_log(prior)[None, :] + data.incidence @ per_cell)


def _skills(data: Labels, post: np.ndarray) -> np.ndarray:
    """One-coin M-step: a rater's skill is the mean posterior of the classes they chose."""
    k = data.n_classes
    chosen = np.einsum("rll->r", (data.incidence_t @ post).reshape(data.n_raters, k, k))
    return chosen / np.maximum(data.rater_counts(), 1)


def _em(data: Labels, m_step, e_step, max_iter: int, tol: float | None):
    """Shared EM loop: parameters from the majority shares, then E, M, E, ... ending on an E-step.
    `tol=None` runs exactly max_iter E-steps (used to compare with a reference step for step)."""
    votes = data.votes()
    post = votes / np.maximum(votes.sum(axis=1, keepdims=True), 1)
    params = (post.mean(axis=0), m_step(data, post))
    ll_prev, converged, it = -np.inf, False, 0
    for it in range(1, max_iter + 1):
        post, ll = e_step(data, *params)
        if tol is not None and ll - ll_prev < tol * data.n:
            converged = True
            break
        ll_prev = ll
        if it < max_iter:
            params = (post.mean(axis=0), m_step(data, post))
    return post, ll, params, it, converged


def dawid_skene(data: Labels, *, max_iter: int = MAX_ITER, tol: float | None = TOL) -> LabelModel:
    """Dawid–Skene (1979): a full confusion matrix per rater and class frequencies, by EM.

    rater["confusion"][r, observed, true]; rater_accuracy = sum_c prior_c confusion[r, c, c]."""
    post, ll, (prior, conf), it, ok = _em(data, _confusions, _ds_e_step, max_iter, tol)
    k = data.n_classes
    acc = (np.diagonal(conf, axis1=1, axis2=2) * prior[None, :]).sum(axis=1)
    return finish("dawid_skene", data, post, acc, prior, ll, n_params=data.n_raters * k * (k - 1) + k - 1,
                  iterations=it, converged=ok, rater={"confusion": conf})


def one_coin(data: Labels, *, max_iter: int = MAX_ITER, tol: float | None = TOL) -> LabelModel:
    """One-coin Dawid–Skene (Zhang et al. 2016): each rater right with probability skill, else a
    uniform wrong class."""
    post, ll, (prior, skill), it, ok = _em(data, _skills, _one_coin_e_step, max_iter, tol)
    return finish("one_coin", data, post, skill, prior, ll, n_params=data.n_raters + data.n_classes - 1,
                  iterations=it, converged=ok, rater={"skill": skill})
