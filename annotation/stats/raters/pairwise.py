"""Bradley–Terry with rater reliability (noisy Bradley–Terry, the Crowd-BT family).

A rater r comparing left l with right o either judges, with probability reliability[r], and then
prefers l with the Bradley–Terry probability sigmoid(s_l - s_o), or guesses, preferring the left
with probability left_bias[r]:
    P(left wins) = g_r * sigmoid(s_l - s_o) + (1 - g_r) * sigmoid(q_r),  g_r = sigmoid(gamma_r).
This is crowd-kit 1.4.2's `NoisyBradleyTerry` model. Fitted by L-BFGS-B on the exact gradient
(crowd-kit's hand-written gradient of the rater terms is off by one index, so its optimiser
stops short of the maximum: the tests compare likelihoods at both solutions), with a Gaussian
N(0, 1/ridge) on the strengths so that an output that never lost stays finite.

References: Chen, Bennett, Collins-Thompson & Horvitz (2013), Pairwise ranking aggregation in a
crowdsourced setting, WSDM; Bradley & Terry (1952), Biometrika 39.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.optimize import minimize
from scipy.special import expit

from annotation.stats.blas import one_blas_thread

from .data import LabelError, int_array

RIDGE = 1e-3
# L-BFGS-B steps: 20,000 comparisons of 30 outputs by 20 raters took 966 to meet GTOL/FTOL, so 500
# stopped short (converged=False) on an ordinary study; a fit that hits the cap still says so.
MAX_ITER = 5000
GTOL, FTOL = 1e-7, 1e-12  # on the objective per comparison
P_FLOOR = 1e-12


@dataclass(frozen=True)
class PairwiseModel:
    """A fitted noisy Bradley–Terry model (Chen et al. 2013). strength[o]: log-strength of output o (mean 0); P(o beats p) = sigmoid(s_o - s_p) for a
    reliable rater. reliability[r]: share of r's comparisons judged rather than guessed;
    left_bias[r]: P(r picks the left one when guessing); NaN for raters without comparisons."""

    strength: np.ndarray
    reliability: np.ndarray
    left_bias: np.ndarray
    rater_n: np.ndarray
    log_likelihood: float
    n_params: int
    n_comparisons: int
    iterations: int
    converged: bool

    def win_probability(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return expit(self.strength[np.asarray(a)] - self.strength[np.asarray(b)])

    @property
    def bic(self) -> float:
        return float(-2.0 * self.log_likelihood + self.n_params * np.log(self.n_comparisons))


def _check(raters, left, right, left_wins):
    r, lft, rgt = (int_array(n, v) for n, v in (("raters", raters), ("left", left), ("right", right)))
    y = np.asarray(left_wins, dtype=float)
    if not (r.size == lft.size == rgt.size == y.size):
        raise LabelError(f"raters, left, right and left_wins differ in length ({r.size}, {lft.size}, "
                         f"{rgt.size}, {y.size})")
    if r.size == 0:
        raise LabelError("no comparisons")
    bad = ~((y >= 0) & (y <= 1))
    if bad.any():
        k = int(np.flatnonzero(bad)[0])
        raise LabelError(f"left_wins[{k}] = {y[k].item()!r}: expected 1 (left won), 0 (right won) or 0.5 (a tie)")
    same = lft == rgt
    if same.any():
        k = int(np.flatnonzero(same)[0])
        raise LabelError(f"comparison {k} sets output {lft[k]} against itself")
    return r, lft, rgt, y


def _neg_log_post(x, r, lft, rgt, y, n_out, n_r, ridge):
    s, gamma, q = x[:n_out], x[n_out:n_out + n_r], x[n_out + n_r:]
    a = expit(s[lft] - s[rgt])
    g = expit(gamma)[r]
    b = expit(q)[r]
    p = np.clip(g * a + (1 - g) * b, P_FLOOR, 1 - P_FLOOR)
    ll = np.sum(y * np.log(p) + (1 - y) * np.log1p(-p))
    d = y / p - (1 - y) / (1 - p)  # d ll / d p
    ds = d * g * a * (1 - a)
    grad_s = np.bincount(lft, weights=ds, minlength=n_out) - np.bincount(rgt, weights=ds, minlength=n_out)
    grad_gamma = np.bincount(r, weights=d * g * (1 - g) * (a - b), minlength=n_r)
    grad_q = np.bincount(r, weights=d * (1 - g) * b * (1 - b), minlength=n_r)
    value = -ll + 0.5 * ridge * np.sum(s * s)
    grad = -np.concatenate([grad_s, grad_gamma, grad_q])
    grad[:n_out] += ridge * s
    return value, grad, ll


def noisy_bradley_terry(raters, left, right, left_wins, *, n_outputs: int | None = None,
                        n_raters: int | None = None, ridge: float = RIDGE, max_iter: int = MAX_ITER,
                        start: np.ndarray | None = None) -> PairwiseModel:
    """Noisy Bradley–Terry (Chen et al. 2013; Bradley & Terry 1952). Fit from parallel arrays: rater, left output, right output (codes from 0), and left_wins
    (1 left won, 0 right won, 0.5 a tie: half of each outcome's likelihood).

    The likelihood has several maxima (a rater can look like a guesser or like a judge of close
    pairs): it is fitted from equal strengths, no side bias and reliability 0.9, then 0.5, and the
    better fit is kept; or from `start` (strengths, logit reliabilities, logit biases) alone."""
    r, lft, rgt, y = _check(raters, left, right, left_wins)
    n_out = max(int(max(lft.max(), rgt.max())) + 1, n_outputs or 0)
    n_r = max(int(r.max()) + 1, n_raters or 0)
    starts = ([np.concatenate([np.zeros(n_out), np.full(n_r, g), np.zeros(n_r)]) for g in (np.log(9.0), 0.0)]
              if start is None else [np.asarray(start, dtype=float)])
    def per_comparison(x):  # the objective per comparison, so that L-BFGS-B's tolerances do not grow with n
        value, grad, _ = _neg_log_post(x, r, lft, rgt, y, n_out, n_r, ridge)
        return value / r.size, grad / r.size

    with one_blas_thread():
        fits = [minimize(per_comparison, x0, jac=True, method="L-BFGS-B",
                         options={"maxiter": max_iter, "gtol": GTOL, "ftol": FTOL}) for x0 in starts]
    res = min(fits, key=lambda f: f.fun)
    s = res.x[:n_out]
    ll = _neg_log_post(res.x, r, lft, rgt, y, n_out, n_r, ridge)[2]
    counts = np.bincount(r, minlength=n_r)
    seen = counts > 0
    return PairwiseModel(s - s.mean(), np.where(seen, expit(res.x[n_out:n_out + n_r]), np.nan),
                         np.where(seen, expit(res.x[n_out + n_r:]), np.nan), counts, float(ll),
                         n_out - 1 + 2 * n_r, int(r.size), int(res.nit), bool(res.success))
