"""Rater effects on a scale: score = output's level + rater's bias + the rater's own noise.

    y_k = mu_{o(k)} + b_{r(k)} + e_k,   b_r ~ N(0, tau^2),   e_k ~ N(0, sigma^2_{r(k)})

mu (one per output) are fixed effects: the output's adjusted mean, the score it would get from
an average rater; b are random rater biases (a strict rater has b < 0); sigma_r is each rater's
noise (heteroscedastic), or one sigma for all (`heteroscedastic=False`, the model statsmodels'
MixedLM fits with a random intercept per rater: the tests check the two agree).

Variances by REML through EM on Henderson's mixed-model equations (Searle, Casella & McCulloch
1992, Variance Components, ch. 8): each step solves the equations with the current variances,
then sets each variance to its expected sum of squares given the data. The rater block of the
equations is a dense n_raters x n_raters Schur complement; the output block stays diagonal, so
thousands of outputs cost little and a few thousand raters are the limit. Each rater's sigma^2
is shrunk towards the pooled one by PSEUDO_RATINGS ratings' worth (an inverse-gamma prior), so a
rater with one rating does not get a zero variance and an infinite likelihood. An output's
interval is mu +- z * se, se from the inverse of the equations (the covariance of mu given the
variances).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import sparse
from scipy.linalg import cho_factor, cho_solve
from scipy.stats import norm

from annotation.stats.blas import one_blas_thread

from .data import LabelError, int_array

PSEUDO_RATINGS = 2.0
MAX_ITER = 1000
TOL = 1e-9  # stop when the REML log-likelihood gains less than this per rating
VAR_FLOOR = 1e-10


@dataclass(frozen=True)
class RaterEffects:
    """A fitted rater-effects model (REML, Patterson & Thompson 1971): per output the adjusted mean with
    its interval, per rater the bias (BLUP, Henderson 1975) and own noise SD."""

    output_mean: np.ndarray   # adjusted mean per output
    output_se: np.ndarray
    ci_low: np.ndarray
    ci_high: np.ndarray
    output_n: np.ndarray
    rater_bias: np.ndarray    # BLUP of b_r (0 for a rater without ratings)
    rater_sd: np.ndarray      # sigma_r (NaN for a rater without ratings)
    rater_n: np.ndarray
    bias_sd: float            # tau
    noise_sd: float           # pooled sigma
    log_likelihood: float     # REML log-likelihood
    iterations: int
    converged: bool
    heteroscedastic: bool
    level: float


def _check(outputs, raters, scores):
    o, r = int_array("outputs", outputs), int_array("raters", raters)
    y = np.asarray(scores, dtype=float)
    if not (o.size == r.size == y.size):
        raise LabelError(f"outputs, raters and scores differ in length ({o.size}, {r.size}, {y.size})")
    if o.size < 2:
        raise LabelError("a rater-effects model needs at least two ratings")
    bad = ~np.isfinite(y)
    if bad.any():
        k = int(np.flatnonzero(bad)[0])
        raise LabelError(f"scores[{k}] = {y[k].item()!r}: expected a finite number")
    return o, r, y


class _Design:
    """The fixed structure: unique (output, rater) cells and, per output, every ordered pair of
    its raters' cells (the entries of the rater block that the traces need)."""

    def __init__(self, o, r, n_out, n_r):
        self.o, self.r, self.n_out, self.n_r = o, r, n_out, n_r
        self.rater_rated = np.bincount(r, minlength=n_r) > 0
        self.n_rated = int(self.rater_rated.sum())
        key = o * n_r + r
        cells, self.cell_of = np.unique(key, return_inverse=True)
        self.cell_o, self.cell_r = cells // n_r, cells % n_r
        start = np.searchsorted(self.cell_o, np.arange(n_out))
        size = np.bincount(self.cell_o, minlength=n_out)
        reps = size[self.cell_o]
        self.pair_first = np.repeat(np.arange(cells.size), reps)
        offset = np.arange(self.pair_first.size) - np.repeat(np.cumsum(reps) - reps, reps)
        self.pair_second = start[self.cell_o][self.pair_first] + offset
        # The pairs' gathers that every EM step repeated (most of a step's time at four raters): taken once.
        # s_inv's entries are read by flat index, the same values as s_inv[rows, cols].
        first_r, second_r = self.cell_r[self.pair_first], self.cell_r[self.pair_second]
        self.pair_o = self.cell_o[self.pair_first]
        self.pair_rs = first_r * n_r + second_r   # (first's rater, second's rater) in the rater block
        self.pair_sr = second_r * n_r + first_r
        self.cell_rr = self.cell_r * (n_r + 1)    # the rater block's diagonal at each cell


def _solve(d: _Design, y, sigma2_r, tau2):
    w = (1.0 / sigma2_r)[d.r]
    a = np.bincount(d.o, weights=w, minlength=d.n_out)
    rated = a > 0
    a = np.where(rated, a, 1.0)  # an output code nobody rated: mu = 0 here, NaN in the result
    cell_w = np.bincount(d.cell_of, weights=w, minlength=d.cell_o.size)
    u = cell_w / a[d.cell_o]                      # U = A^-1 B at each cell
    u_second = u[d.pair_second]
    bu = np.bincount(d.pair_rs, weights=cell_w[d.pair_first] * u_second, minlength=d.n_r * d.n_r)
    s = np.diag(np.bincount(d.r, weights=w, minlength=d.n_r) + 1.0 / tau2) - bu.reshape(d.n_r, d.n_r)
    chol = cho_factor(s)
    s_inv = cho_solve(chol, np.eye(d.n_r))
    xy = np.bincount(d.o, weights=w * y, minlength=d.n_out)
    zy = np.bincount(d.r, weights=w * y, minlength=d.n_r)
    b = cho_solve(chol, zy - np.bincount(d.cell_r, weights=u * xy[d.cell_o], minlength=d.n_r))
    mu = (xy - np.bincount(d.cell_o, weights=cell_w * b[d.cell_r], minlength=d.n_out)) / a
    # (U S^-1)[o, r] at each cell and U S^-1 U' on each output's diagonal, from the raters' pairs
    us = np.bincount(d.pair_first, weights=u_second * np.take(s_inv, d.pair_sr), minlength=u.size)
    quad = np.bincount(d.pair_o, weights=u[d.pair_first] * u_second * np.take(s_inv, d.pair_rs), minlength=d.n_out)
    var_mu = 1.0 / a + quad
    cell_var = var_mu[d.cell_o] + np.take(s_inv, d.cell_rr) - 2.0 * us  # var of mu_o + b_r given y
    e = y - mu[d.o] - b[d.r]
    logdet = np.sum(np.log(a[rated])) + 2.0 * np.sum(np.log(np.diag(chol[0])))
    reml = -0.5 * ((y.size - rated.sum()) * np.log(2 * np.pi) + np.sum(np.log(sigma2_r)[d.r]) + d.n_rated * np.log(tau2)
                   + logdet + np.sum(w * y * e))
    return mu, var_mu, b, s_inv, e, cell_var[d.cell_of], float(reml)


def rater_effects(outputs, raters, scores, *, heteroscedastic: bool = True, level: float = 0.95,
                  n_outputs: int | None = None, n_raters: int | None = None, max_iter: int = MAX_ITER,
                  tol: float = TOL) -> RaterEffects:
    """Rater effects by REML (Searle, Casella & McCulloch 1992; Patterson & Thompson 1971): fit from
    parallel arrays (output code, rater code, score); see the module docstring."""
    with one_blas_thread():
        return _fit(*_check(outputs, raters, scores), heteroscedastic=heteroscedastic, level=level,
                    n_outputs=n_outputs, n_raters=n_raters, max_iter=max_iter, tol=tol)


def _fit(o, r, y, *, heteroscedastic, level, n_outputs, n_raters, max_iter, tol) -> RaterEffects:
    n_out = max(int(o.max()) + 1, n_outputs or 0)
    n_r = max(int(r.max()) + 1, n_raters or 0)
    d = _Design(o, r, n_out, n_r)
    counts = np.bincount(r, minlength=n_r)
    resid = y - (np.bincount(o, weights=y, minlength=n_out) / np.maximum(np.bincount(o, minlength=n_out), 1))[o]
    pooled = max(float(np.mean(resid ** 2)), VAR_FLOOR)
    sigma2_r, tau2 = np.full(n_r, pooled), max(pooled / 4, VAR_FLOOR)
    prev, converged, it = -np.inf, False, 0
    for it in range(1, max_iter + 1):
        solved = _solve(d, y, sigma2_r, tau2)
        mu, var_mu, b, s_inv, e, v, reml = solved
        if reml - prev < tol * y.size and it > 1:
            converged = True
            break
        prev = reml
        # over the raters with ratings: one without is a draw from the prior and adds nothing
        tau2 = max((b @ b + np.sum(np.diag(s_inv)[d.rater_rated])) / d.n_rated, VAR_FLOOR)
        ss = np.bincount(r, weights=e * e + v, minlength=n_r)
        pooled = max(float(ss.sum() / y.size), VAR_FLOOR)
        sigma2_r = (np.maximum((ss + PSEUDO_RATINGS * pooled) / (counts + PSEUDO_RATINGS), VAR_FLOOR)
                    if heteroscedastic else np.full(n_r, pooled))
    # converged: the last step's solution is the one at these variances (they change only after a step)
    mu, var_mu, b, s_inv, e, v, reml = solved if converged else _solve(d, y, sigma2_r, tau2)
    output_n = np.bincount(o, minlength=n_out)
    mu, se = np.where(output_n > 0, mu, np.nan), np.where(output_n > 0, np.sqrt(var_mu), np.nan)
    z = float(norm.ppf((1 + level) / 2))
    return RaterEffects(mu, se, mu - z * se, mu + z * se, output_n, b,
                        np.where(counts > 0, np.sqrt(sigma2_r), np.nan), counts, float(np.sqrt(tau2)),
                        float(np.sqrt(pooled)), reml, it, converged, heteroscedastic, level)
