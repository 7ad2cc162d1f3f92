"""Study planning: how many items, raters and judgements give the wanted power.

Absolute scores (two systems rated on the same n items, each output by R raters)
-------------------------------------------------------------------------------
Model: a rating = the output's true score + rater noise. With σ² the total variance of one
rating, ρ the inter-rater reliability (ICC(1): the share of σ² that is the output's true score)
and c the correlation of the two systems' true scores on the same item, the difference of the
two systems' mean ratings on one item has variance

    V = 2σ²(ρ(1−c) + (1−ρ)/R)

(true scores: 2ρσ²(1−c); the mean of R independent rater errors per system: (1−ρ)σ²/R).
A two-sided paired t-test at level α detects a mean difference δ with power 1−β when

    n ≈ (z_{1−α/2} + z_{1−β})² V / δ²          (normal approximation)

and exactly: the smallest n ≥ 2 whose power, P(|T| > t_{1−α/2, n−1}) with T noncentral t
(df = n−1, noncentrality δ/√(V/n)), is at least 1−β.

Pairwise comparisons (judgements of one pair of systems)
--------------------------------------------------------
A two-sided binomial test of the decided judgements against 1/2 tells a win probability p
from 1/2 with power 1−β when

    n ≈ ((z_{1−α/2}·0.5 + z_{1−β}·√(p(1−p))) / (p − 0.5))²     (normal approximation)

and exactly from the binomial distribution. The exact power is not monotone in n (the test's
size jumps with n), so the answer is the smallest n from which the power stays ≥ 1−β for the
next STAY_ABOVE values of n. A Bradley–Terry log-strength difference d gives p = 1/(1+e^{−d}).
Ties carry no information on who wins: with a tie share t, n/(1−t) judgements are needed on
average for n decided ones.

Bad input raises InvalidArgument (a ValueError) whose `argument` names the offending argument.
"""

from __future__ import annotations

import math
from typing import Any, Iterable

import numpy as np
from scipy.stats import binom, nct, norm
from scipy.stats import t as t_dist

STAY_ABOVE = 20  # pairwise: the power must stay above target for this many further n
MIN_ITEMS = 2  # a paired t-test needs two differences
MAX_SEARCH = 10_000_000  # beyond this many items or judgements a plan is not a plan
TABLE_RATERS = tuple(range(1, 7))

SCORES_FORMULA = (
    "Paired t-test on the per-item difference of the two systems' mean ratings. "
    "Variance of one item's difference V = 2σ²(ρ(1−c) + (1−ρ)/R); "
    "normal approximation n = (z₁₋α/₂ + z₁₋β)²·V/δ²; "
    "exact: smallest n with noncentral-t power ≥ 1−β (df n−1, noncentrality δ/√(V/n))."
)
PAIRWISE_FORMULA = (
    "Two-sided exact binomial test of the decided judgements against 1/2. "
    "Normal approximation n = ((z₁₋α/₂·0.5 + z₁₋β·√(p(1−p)))/(p−0.5))²; "
    f"exact: smallest n from which the binomial power stays ≥ 1−β for the next {STAY_ABOVE} n; "
    "Bradley–Terry p = 1/(1+e^(−d)); with a tie share t, n/(1−t) judgements in all."
)


class InvalidArgument(ValueError):
    """Bad planning input; `argument` is the name of the argument at fault."""

    def __init__(self, argument: str, message: str):
        super().__init__(f"{argument}: {message}")
        self.argument = argument
        self.message = message


def _finite(name: str, value: float) -> float:
    try:
        value = float(value)
    except (TypeError, ValueError):
        raise InvalidArgument(name, f"{value!r} is not a number") from None
    if not math.isfinite(value):
        raise InvalidArgument(name, f"{value!r} is not a finite number")
    return value


def _positive(name: str, value: float) -> float:
    value = _finite(name, value)
    if value <= 0:
        raise InvalidArgument(name, f"must be > 0, got {value:g}")
    return value


def _open_unit(name: str, value: float) -> float:
    value = _finite(name, value)
    if not 0 < value < 1:
        raise InvalidArgument(name, f"must be strictly between 0 and 1, got {value:g}")
    return value


def _raters(value: int) -> int:
    whole = isinstance(value, (int, np.integer)) or (isinstance(value, float) and value.is_integer())
    if isinstance(value, bool) or not whole:
        raise InvalidArgument("raters", f"must be a whole number, got {value!r}")
    if value < 1:
        raise InvalidArgument("raters", f"must be at least 1, got {int(value)}")
    return int(value)


def _score_inputs(sd: float, icc: float, corr: float, raters: int) -> tuple[float, float, float, int]:
    sd = _positive("sd", sd)
    icc = _finite("icc", icc)
    if not 0 <= icc <= 1:
        raise InvalidArgument("icc", f"must be within [0, 1], got {icc:g}")
    corr = _finite("corr", corr)
    if not -1 <= corr < 1:
        raise InvalidArgument("corr", f"must be within [-1, 1), got {corr:g}")
    return sd, icc, corr, _raters(raters)


def difference_variance(*, sd: float, icc: float, corr: float, raters: int) -> float:
    """V = 2σ²(ρ(1−c) + (1−ρ)/R): variance of one item's difference of the systems' mean ratings."""
    sd, icc, corr, raters = _score_inputs(sd, icc, corr, raters)
    return 2 * sd**2 * (icc * (1 - corr) + (1 - icc) / raters)


def items_normal(*, delta: float, sd: float, icc: float, corr: float, raters: int,
                 power: float = 0.8, alpha: float = 0.05) -> float:
    """Items by the normal approximation (not rounded)."""
    delta = _positive("delta", delta)
    power, alpha = _open_unit("power", power), _open_unit("alpha", alpha)
    v = difference_variance(sd=sd, icc=icc, corr=corr, raters=raters)
    return float((norm.ppf(1 - alpha / 2) + norm.ppf(power)) ** 2 * v / delta**2)


def paired_power(n: int, *, delta: float, sd: float, icc: float, corr: float, raters: int,
                 alpha: float = 0.05) -> float:
    """Power of the two-sided paired t-test on n items (noncentral t, df n−1).

    Reference: Cohen (1988), Statistical Power Analysis, ch. 2 (noncentral t).
    """
    delta, alpha = _positive("delta", delta), _open_unit("alpha", alpha)
    if n < MIN_ITEMS:
        raise InvalidArgument("n", f"a paired t-test needs at least {MIN_ITEMS} items, got {n}")
    v = difference_variance(sd=sd, icc=icc, corr=corr, raters=raters)
    return _t_power(int(n), delta / math.sqrt(v), alpha)


def _t_power(n: int, effect: float, alpha: float) -> float:
    return float(_t_power_array(np.asarray(n), effect, alpha))


def _t_power_array(n: np.ndarray, effect: float, alpha: float) -> np.ndarray:
    df, nc = n - 1, effect * np.sqrt(n)
    crit = t_dist.ppf(1 - alpha / 2, df)
    return nct.sf(crit, df, nc) + nct.cdf(-crit, df, nc)


def paired_power_curve(ns: Iterable[int], *, delta: float, sd: float, icc: float, corr: float, raters: int,
                       alpha: float = 0.05) -> np.ndarray:
    """paired_power for many n at once (each n ≥ 2), for plots."""
    delta, alpha = _positive("delta", delta), _open_unit("alpha", alpha)
    n = np.asarray(list(ns), dtype=np.int64)
    if n.size and n.min() < MIN_ITEMS:
        raise InvalidArgument("n", f"a paired t-test needs at least {MIN_ITEMS} items")
    v = difference_variance(sd=sd, icc=icc, corr=corr, raters=raters)
    return _t_power_array(n, delta / math.sqrt(v), alpha)


def items_needed(*, delta: float, sd: float, icc: float, corr: float, raters: int,
                 power: float = 0.8, alpha: float = 0.05) -> int:
    """The smallest n ≥ 2 whose exact paired t-test power reaches `power`.

    Reference: Cohen (1988), Statistical Power Analysis, ch. 2.
    """
    approx = items_normal(delta=delta, sd=sd, icc=icc, corr=corr, raters=raters, power=power, alpha=alpha)
    effect = delta / math.sqrt(difference_variance(sd=sd, icc=icc, corr=corr, raters=raters))
    if approx > MAX_SEARCH:
        raise InvalidArgument("delta", f"needs about {approx:.3g} items, more than {MAX_SEARCH:,}: "
                                       "the difference is too small to plan for")
    # The t answer sits a little above the normal one; step from there (power rises with n).
    n = max(MIN_ITEMS, math.ceil(approx))
    if _t_power(n, effect, alpha) >= power:
        while n > MIN_ITEMS and _t_power(n - 1, effect, alpha) >= power:
            n -= 1
        return n
    lo, hi = n, n + 1
    while _t_power(hi, effect, alpha) < power:  # gallop, then bisect
        lo, hi = hi, hi + 2 * (hi - lo)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if _t_power(mid, effect, alpha) >= power else (mid, hi)
    return hi


def items_table(*, delta: float, sd: float, icc: float, corr: float, power: float = 0.8,
                alpha: float = 0.05, raters: Iterable[int] = TABLE_RATERS) -> list[dict[str, Any]]:
    """Items needed per number of raters per output: one row per R with the variance V, the
    normal and exact item counts, the power reached and the total ratings R·n·2.

    Reference: Cohen (1988); Shrout & Fleiss (1979) for the rater-noise share.
    """
    rows = []
    for r in raters:
        kw = dict(delta=delta, sd=sd, icc=icc, corr=corr, raters=r)
        n = items_needed(**kw, power=power, alpha=alpha)
        rows.append({
            "raters": int(r),
            "variance": difference_variance(sd=sd, icc=icc, corr=corr, raters=r),
            "items_normal": items_normal(**kw, power=power, alpha=alpha),
            "items": n,
            "power": paired_power(n, **kw, alpha=alpha),
            "total_ratings": int(r) * n * 2,
        })
    return rows


def scores_plan(*, delta: float, sd: float, icc: float, corr: float, raters: int = 3,
                power: float = 0.8, alpha: float = 0.05) -> dict[str, Any]:
    """The whole absolute-score plan: inputs, the chosen R's answer, the R = 1..6 table, the formula.

    Reference: Cohen (1988); Shrout & Fleiss (1979).
    """
    kw = dict(delta=delta, sd=sd, icc=icc, corr=corr)
    n = items_needed(**kw, raters=raters, power=power, alpha=alpha)
    return {
        "inputs": {**kw, "raters": raters, "power": power, "alpha": alpha},
        "items_normal": items_normal(**kw, raters=raters, power=power, alpha=alpha),
        "items": n,
        "power_reached": paired_power(n, **kw, raters=raters, alpha=alpha),
        "total_ratings": raters * n * 2,
        "table": items_table(**kw, power=power, alpha=alpha),
        "formula": SCORES_FORMULA,
    }


# ------------------------------------------------------------------ pairwise comparisons


def bt_win_prob(bt_diff: float) -> float:
    """Bradley–Terry: the win probability of a log-strength difference d, 1/(1+e^{−d})."""
    d = _finite("bt_diff", bt_diff)
    if d == 0:
        raise InvalidArgument("bt_diff", "must not be 0 (equal strengths: p = 0.5, nothing to detect)")
    return float(1 / (1 + math.exp(-d)))


def _win_prob(p: float) -> float:
    p = _open_unit("win_prob", p)
    if p == 0.5:
        raise InvalidArgument("win_prob", "must differ from 0.5 (no difference to detect)")
    return p


def _ties(t: float) -> float:
    t = _finite("ties", t)
    if not 0 <= t < 1:
        raise InvalidArgument("ties", f"must be within [0, 1), got {t:g}")
    return t


def judgements_normal(*, win_prob: float, power: float = 0.8, alpha: float = 0.05) -> float:
    """Decided judgements by the normal approximation (not rounded)."""
    p = _win_prob(win_prob)
    power, alpha = _open_unit("power", power), _open_unit("alpha", alpha)
    num = norm.ppf(1 - alpha / 2) * 0.5 + norm.ppf(power) * math.sqrt(p * (1 - p))
    return float((num / (p - 0.5)) ** 2)


def binomial_power(n: int | np.ndarray, *, win_prob: float, alpha: float = 0.05) -> float | np.ndarray:
    """Exact power of the two-sided binomial test of H0 p = 1/2 on n decided judgements
    (rejecting when the test's p-value, twice the smaller tail, is ≤ α). Vectorised over n.

    Reference: Chernick & Liu (2002), The American Statistician 56(2) (the saw-toothed exact binomial power).
    """
    p = _win_prob(win_prob)
    alpha = _open_unit("alpha", alpha)
    n_arr = np.asarray(n, dtype=np.int64)
    if np.any(n_arr < 1):
        raise InvalidArgument("n", "needs at least one judgement")
    # k_lo: the largest k with 2·P(X ≤ k | 1/2) ≤ α (−1 when none); by symmetry the region is
    # X ≤ k_lo or X ≥ n − k_lo.
    k = binom.ppf(alpha / 2, n_arr, 0.5)
    k_lo = np.where(binom.cdf(k, n_arr, 0.5) <= alpha / 2, k, k - 1)
    out = binom.cdf(k_lo, n_arr, p) + binom.sf(n_arr - k_lo - 1, n_arr, p)
    out = np.where(k_lo < 0, 0.0, out)
    return float(out) if np.ndim(n) == 0 else out


def judgements_needed(*, win_prob: float, power: float = 0.8, alpha: float = 0.05) -> int:
    """The smallest number of decided judgements from which the exact binomial power stays
    ≥ `power` for the next STAY_ABOVE values.

    Reference: Chernick & Liu (2002), The American Statistician 56(2).
    """
    approx = judgements_normal(win_prob=win_prob, power=power, alpha=alpha)
    if approx > MAX_SEARCH:
        raise InvalidArgument("win_prob", f"needs about {approx:.3g} judgements, more than {MAX_SEARCH:,}: "
                                          "too close to 0.5 to plan for")
    top = max(64, 2 * math.ceil(approx) + 4 * STAY_ABOVE)
    while True:
        ns = np.arange(1, top + 1)
        ok = binomial_power(ns, win_prob=win_prob, alpha=alpha) >= power
        windows = np.lib.stride_tricks.sliding_window_view(ok, STAY_ABOVE + 1).all(axis=1)
        hits = np.flatnonzero(windows)
        if hits.size:
            return int(ns[hits[0]])
        top *= 2


def pairwise_plan(*, win_prob: float | None = None, bt_diff: float | None = None, ties: float = 0.0,
                  power: float = 0.8, alpha: float = 0.05) -> dict[str, Any]:
    """Judgements per pair of systems: decided ones (normal and exact) and all, ties included.
    Give either `win_prob` or `bt_diff` (a Bradley–Terry log-strength difference).

    Reference: Bradley & Terry (1952); Chernick & Liu (2002).
    """
    if (win_prob is None) == (bt_diff is None):
        raise InvalidArgument("win_prob", "give either a win probability or a Bradley–Terry difference")
    p = bt_win_prob(bt_diff) if bt_diff is not None else _win_prob(win_prob)
    ties = _ties(ties)
    n = judgements_needed(win_prob=p, power=power, alpha=alpha)
    return {
        "inputs": {"win_prob": win_prob, "bt_diff": bt_diff, "ties": ties, "power": power, "alpha": alpha},
        "win_prob": p,
        "decided_normal": judgements_normal(win_prob=p, power=power, alpha=alpha),
        "decided": n,
        "power_reached": float(binomial_power(n, win_prob=p, alpha=alpha)),
        "judgements": math.ceil(n / (1 - ties) - 1e-9),
        "formula": PAIRWISE_FORMULA,
    }
