"""A judge (or any single scorer) against the human mean per item.

Exact and within-1 agreement compare the judge's score with the human mean rounded half
up to the scale's integer points (both rounded), since a mean of raters is rarely integral.
The bias is mean(judge - human) with a t-based CI over items.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.stats import t as t_dist

from .pairwise import MIN_N, kendall_tau_b, pearson, spearman
from .result import Stat


def lin_ccc(x: np.ndarray, y: np.ndarray) -> Stat:
    """Lin's (1989) concordance correlation coefficient, with population (1/n) moments."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if x.size < MIN_N:
        return Stat.undefined(f"fewer than {MIN_N} paired values")
    mx, my = x.mean(), y.mean()
    sxy = float(np.mean((x - mx) * (y - my)))
    denom = float(np.var(x) + np.var(y) + (mx - my) ** 2)
    if denom <= 0:
        return Stat.undefined("both score vectors are the same constant")
    return Stat.of(2 * sxy / denom)


def mean_difference(judge: np.ndarray, human: np.ndarray, level: float = 0.95) -> Stat:
    """Bias: mean(judge - human) with its t-based CI.

    Reference: Bland & Altman (1986), The Lancet 327(8476).
    """
    d = np.asarray(judge, dtype=float) - np.asarray(human, dtype=float)
    if d.size < 2:
        return Stat.undefined("fewer than two paired values")
    with np.errstate(over="ignore", invalid="ignore"):
        mean = float(d.mean())
        half = float(t_dist.ppf((1 + level) / 2, d.size - 1) * d.std(ddof=1) / np.sqrt(d.size))
    ci = (mean - half, mean + half) if math.isfinite(half) else None
    return Stat.of(mean, "the scores overflow double precision", ci)


def _round_half_up(x: np.ndarray) -> np.ndarray:
    return np.floor(x + 0.5)


def judge_vs_humans(judge: np.ndarray, human_mean: np.ndarray) -> dict[str, Stat]:
    """All agreement measures of a judge's scores with the human mean, per item (aligned arrays).

    Reference: Lin (1989), Biometrics 45(1); Kendall (1945); Bland & Altman (1986).
    """
    j = np.asarray(judge, dtype=float)
    h = np.asarray(human_mean, dtype=float)
    ok = ~(np.isnan(j) | np.isnan(h))
    j, h = j[ok], h[ok]
    if j.size == 0:
        empty = Stat.undefined("no item scored by the judge and by a human")
        return {k: empty for k in ("pearson", "spearman", "kendall_tau_b", "lin_ccc", "mae",
                                   "exact_agreement", "within_1_agreement", "bias")}
    diff = np.abs(_round_half_up(j) - _round_half_up(h))
    return {
        "pearson": pearson(j, h),
        "spearman": spearman(j, h),
        "kendall_tau_b": kendall_tau_b(j, h),
        "lin_ccc": lin_ccc(j, h),
        "mae": Stat.of(float(np.mean(np.abs(j - h)))),
        "exact_agreement": Stat.of(float(np.mean(diff == 0))),
        "within_1_agreement": Stat.of(float(np.mean(diff <= 1))),
        "bias": mean_difference(j, h),
    }
