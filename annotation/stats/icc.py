"""Intraclass correlations, the six Shrout & Fleiss (1979) forms, with McGraw & Wong F-based CIs.

Uses complete cases only: items rated by every rater (columns) of the matrix, as the
two-way ANOVA needs a balanced design (the same choice as pingouin's listwise deletion).
The CIs follow pingouin.intraclass_corr exactly (McGraw & Wong 1996, Table 7).
"""

from __future__ import annotations

import math

import numpy as np
from scipy.stats import f as f_dist

from .result import Stat

FORMS = ("ICC1", "ICC2", "ICC3", "ICC1k", "ICC2k", "ICC3k")


def mean_squares(complete: np.ndarray) -> dict[str, float]:
    """Two-way ANOVA mean squares of an n items x k raters matrix without missing values."""
    n, k = complete.shape
    grand = complete.mean()
    ssr = k * float(np.sum((complete.mean(axis=1) - grand) ** 2))
    ssc = n * float(np.sum((complete.mean(axis=0) - grand) ** 2))
    sst = float(np.sum((complete - grand) ** 2))
    sse = max(sst - ssr - ssc, 0.0)
    return {
        "msb": ssr / (n - 1),
        "msj": ssc / (k - 1),
        "mse": sse / ((n - 1) * (k - 1)),
        "msw": (ssc + sse) / (n * (k - 1)),
    }


def _ci(lo: float, hi: float) -> tuple[float, float] | None:
    """A CI, or None when the formula gave no interval (non-finite or inverted bounds)."""
    return (float(lo), float(hi)) if math.isfinite(lo) and math.isfinite(hi) and lo <= hi else None


def _spearman_brown_ci(lo: float, hi: float, k: int) -> tuple[float, float] | None:
    """Step single-rater bounds up to k raters; r*k/(1+r(k-1)) has a pole at -1/(k-1), and
    across it the stepped-up bounds are meaningless (pingouin returns them anyway)."""
    if not lo > -1 / (k - 1):
        return None
    return _ci(lo * k / (1 + lo * (k - 1)), hi * k / (1 + hi * (k - 1)))


def icc(matrix: np.ndarray, *, alpha: float = 0.05) -> dict[str, Stat]:
    """All six ICC forms (ICC1 = ICC(1,1) ... ICC3k = ICC(3,k)) with (1 - alpha) CIs.

    Reference: Shrout & Fleiss (1979), Psychological Bulletin 86(2); McGraw & Wong (1996), Psychological Methods 1(1).
    """
    x = np.asarray(matrix, dtype=float)
    if x.ndim != 2 or x.shape[1] < 2:
        return {f: Stat.undefined("needs at least two raters") for f in FORMS}
    x = x[~np.isnan(x).any(axis=1)]
    n, k = x.shape
    if n < 2:
        return {f: Stat.undefined(f"needs at least two items rated by all {k} raters (complete cases)")
                for f in FORMS}
    ms = mean_squares(x)
    msb, msj, mse, msw = ms["msb"], ms["msj"], ms["mse"], ms["msw"]
    if msb == 0 and msw == 0:
        return {f: Stat.undefined("all ratings are equal (no variance)") for f in FORMS}
    with np.errstate(all="ignore"):
        return _icc_forms(n, k, msb, msj, mse, msw, alpha)


def _icc_forms(n: int, k: int, msb: float, msj: float, mse: float, msw: float,
               alpha: float) -> dict[str, Stat]:
    def div(a: float, b: float) -> float:
        return a / b if b != 0 else math.nan

    icc1 = div(msb - msw, msb + (k - 1) * msw)
    icc2 = div(msb - mse, msb + (k - 1) * mse + k * (msj - mse) / n)
    icc3 = div(msb - mse, msb + (k - 1) * mse)
    icc1k = div(msb - msw, msb)
    icc2k = div(msb - mse, msb + (msj - mse) / n)
    icc3k = div(msb - mse, msb)

    q = 1 - alpha / 2
    df1, df1kd, df2kd = n - 1, n * (k - 1), (n - 1) * (k - 1)
    f1k, f3k = div(msb, msw), div(msb, mse)
    f1l = f1k / f_dist.ppf(q, df1, df1kd)
    f1u = f1k * f_dist.ppf(q, df1kd, df1)
    f3l = f3k / f_dist.ppf(q, df1, df2kd)
    f3u = f3k * f_dist.ppf(q, df2kd, df1)
    l1, u1 = div(f1l - 1, f1l + k - 1), div(f1u - 1, f1u + k - 1)
    l3, u3 = div(f3l - 1, f3l + k - 1), div(f3u - 1, f3u + k - 1)
    fj = div(msj, mse)
    vn = df2kd * (k * icc2 * fj + n * (1 + (k - 1) * icc2) - k * icc2) ** 2
    vd = df1 * k**2 * icc2**2 * fj**2 + (n * (1 + (k - 1) * icc2) - k * icc2) ** 2
    v = div(vn, vd)
    f2u = f_dist.ppf(q, n - 1, v)
    f2l = f_dist.ppf(q, v, n - 1)
    l2 = div(n * (msb - f2u * mse), f2u * (k * msj + (k * n - k - n) * mse) + n * msb)
    u2 = div(n * (f2l * msb - mse), k * msj + (k * n - k - n) * mse + n * f2l * msb)

    reason = "undefined for these data (a zero mean square)"
    return {
        "ICC1": Stat.of(icc1, reason, _ci(l1, u1)),
        "ICC2": Stat.of(icc2, reason, _ci(l2, u2)),
        "ICC3": Stat.of(icc3, reason, _ci(l3, u3)),
        "ICC1k": Stat.of(icc1k, reason, _ci(div(f1l - 1, f1l), div(f1u - 1, f1u))),
        "ICC2k": Stat.of(icc2k, reason, _spearman_brown_ci(l2, u2, k)),
        "ICC3k": Stat.of(icc3k, reason, _ci(div(f3l - 1, f3l), div(f3u - 1, f3u))),
    }


def raters_for_reliability(single: float, target: float) -> int | None:
    """Raters per item whose mean reaches reliability `target`, from the single-rater ICC by the
    Spearman–Brown prophecy k = t(1 − ρ) / (ρ(1 − t)), rounded up; None when ρ ≤ 0 (no number
    of raters gets there) or the target is not in (0, 1)."""
    if not 0 < target < 1 or single is None or not math.isfinite(single) or single <= 0:
        return None
    if single >= target:
        return 1
    return math.ceil(target * (1 - single) / (single * (1 - target)) - 1e-9)
