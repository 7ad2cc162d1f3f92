"""Intervals valid at any look: confidence sequences. A 95% confidence sequence covers the truth at
every time at once with probability 95%, so a report checked after every rating keeps its error
rate; a fixed-sample interval checked as often does not.

- confidence_sequence: a mean of values in [lower, upper], the predictable plug-in empirical
  Bernstein CS (Waudby-Smith & Ramdas 2023, JRSS B, Theorem 2), α/2 on each side as in confseq's
  predmix_empbern_twosided_cs (checked against it in tests/stats/test_sequential.py).
- asymptotic_cs: any mean with finite variance, the Gaussian-mixture asymptotic CS
  (Waudby-Smith, Arbour, Sinha, Kennedy & Ramdas 2023, "Time-uniform central limit theory and
  asymptotic confidence sequences", Theorem 2.2); it is the CS of the PPI/IPW summands.

All take observations along the last axis (..., t) and return arrays of the same shape: the
interval after each observation.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy.stats import norm

from annotation.stats.active import ipw_design, ipw_parts


def _observations(x: Any, lower: float, upper: float) -> np.ndarray:
    arr = np.asarray(x, dtype=float)
    if arr.ndim == 0 or arr.shape[-1] == 0:
        raise ValueError("x must hold at least one observation")
    if not np.all(np.isfinite(arr)):
        raise ValueError("x has a missing or infinite value")
    if not lower < upper:
        raise ValueError(f"lower must be below upper (got {lower}, {upper})")
    if np.any((arr < lower) | (arr > upper)):
        raise ValueError(f"x must lie in [{lower}, {upper}]")
    return (arr - lower) / (upper - lower)


def _shift(values: np.ndarray, first: float) -> np.ndarray:
    """values at t−1 along the last axis, `first` at t = 1 (what was known before each observation)."""
    out = np.empty_like(values)
    out[..., 0] = first
    out[..., 1:] = values[..., :-1]
    return out


def _empbern_lower(x: np.ndarray, alpha: float, truncation: float) -> np.ndarray:
    t = np.arange(1, x.shape[-1] + 1)
    # Predictable bets from a regularised mean and variance (one fake observation at 1/2, 1/4).
    mu_reg = np.minimum((0.5 + np.cumsum(x, axis=-1)) / (t + 1), 1)
    sigma2 = (0.25 + np.cumsum((x - mu_reg) ** 2, axis=-1)) / (t + 1)
    lam = np.minimum(truncation, np.sqrt(2 * np.log(1 / alpha) / (t * np.log(1 + t) * _shift(sigma2, 0.25))))
    v = (x - _shift(np.cumsum(x, axis=-1) / t, 0.0)) ** 2
    psi = -np.log(1 - lam) - lam
    centre = np.cumsum(lam * x, axis=-1) / np.cumsum(lam, axis=-1)
    margin = (np.log(1 / alpha) + np.cumsum(v * psi, axis=-1)) / np.cumsum(lam, axis=-1)
    return np.maximum(centre - margin, 0)


def confidence_sequence(x: Any, *, alpha: float = 0.05, lower: float = 0.0, upper: float = 1.0,
                        truncation: float = 0.5, running_intersection: bool = True) -> dict[str, np.ndarray]:
    """{"lower", "upper", "mean"} after each observation of values in [lower, upper]: the
    predictable plug-in empirical Bernstein confidence sequence at level 1 − alpha.

    Reference: Waudby-Smith & Ramdas (2023), Estimating means of bounded random variables by betting,
    JRSS B 86(1), Theorem 2; Howard, Ramdas, McAuliffe & Sekhon (2021), Annals of Statistics 49(2).
    """
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    x01 = _observations(x, lower, upper)
    lo = _empbern_lower(x01, alpha / 2, truncation)
    hi = 1 - _empbern_lower(1 - x01, alpha / 2, truncation)
    if running_intersection:
        lo, hi = np.maximum.accumulate(lo, axis=-1), np.minimum.accumulate(hi, axis=-1)
    t = np.arange(1, x01.shape[-1] + 1)
    scale = upper - lower
    return {"lower": lower + scale * lo, "upper": lower + scale * hi,
            "mean": lower + scale * np.cumsum(x01, axis=-1) / t}


def asymptotic_rho(t_opt: float, alpha: float = 0.05) -> float:
    """The mixture width ρ that makes asymptotic_cs tightest after t_opt observations.

    Reference: Waudby-Smith, Arbour, Sinha, Kennedy & Ramdas (2023), Time-uniform central limit theory
    and asymptotic confidence sequences, Annals of Statistics (eq. for ρ(t*)).
    """
    if t_opt <= 0:
        raise ValueError(f"t_opt must be positive, got {t_opt}")
    a = -2 * np.log(alpha)
    return float(np.sqrt((a + np.log(a + 1)) / t_opt))


def asymptotic_cs(z: Any, *, alpha: float = 0.05, t_opt: float = 100,
                  running_intersection: bool = False) -> dict[str, np.ndarray]:
    """{"lower", "upper", "mean"} after each observation: mean ± σ̂·sqrt(2(tρ²+1)/(t²ρ²)·log(sqrt(tρ²+1)/α)),
    σ̂ the running standard deviation (ddof 0), ρ from asymptotic_rho(t_opt). Valid as t grows for
    any i.i.d. (or martingale-difference) values with finite variance; NaN before two observations.

    Reference: Waudby-Smith, Arbour, Sinha, Kennedy & Ramdas (2023), Time-uniform central limit theory
    and asymptotic confidence sequences, Annals of Statistics, Theorem 2.2.
    """
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    arr = np.asarray(z, dtype=float)
    if arr.ndim == 0 or arr.shape[-1] == 0 or not np.all(np.isfinite(arr)):
        raise ValueError("z must hold finite observations")
    t = np.arange(1, arr.shape[-1] + 1)
    mean = np.cumsum(arr, axis=-1) / t
    var = np.maximum(np.cumsum(arr ** 2, axis=-1) / t - mean ** 2, 0)
    rho2 = asymptotic_rho(t_opt, alpha) ** 2
    half = np.sqrt(var) * np.sqrt(2 * (t * rho2 + 1) / (t ** 2 * rho2) * np.log(np.sqrt(t * rho2 + 1) / alpha))
    half = np.where(t >= 2, half, np.nan)
    lo, hi = mean - half, mean + half
    if running_intersection:
        lo = np.fmax.accumulate(lo, axis=-1)
        hi = np.fmin.accumulate(hi, axis=-1)
    return {"lower": lo, "upper": hi, "mean": mean}


def ipw_ppi_confidence_sequence(y: Any, yhat: Any, pi: Any, rated: Any, *, lam: float = 1.0,
                                alpha: float = 0.05, t_opt: float = 100) -> dict[str, np.ndarray]:
    """The asymptotic CS of the PPI/IPW mean as items are drawn in order (each with its recorded π):
    asymptotic_cs of the summands λ·f + (Y − λ·f)·ξ/π. λ must be fixed in advance (or predictable).

    Reference: Waudby-Smith et al. (2023), Annals of Statistics, Theorem 2.2; Zrnic & Candès (2024), ICML.
    """
    a, b = ipw_parts(*ipw_design(y, yhat, pi, rated))
    return asymptotic_cs(a - lam * b, alpha=alpha, t_opt=t_opt)


def fixed_sample_interval(x: Any, *, level: float = 0.95) -> dict[str, np.ndarray]:
    """The usual normal interval mean ± z·sd/sqrt(t) after each observation: valid at one planned
    look only (shown beside the CS to show what peeking does).

    Reference: the classical CLT interval; Armitage, McPherson & Rowe (1969), JRSS A 132(2) (repeated looks).
    """
    arr = np.asarray(x, dtype=float)
    t = np.arange(1, arr.shape[-1] + 1)
    mean = np.cumsum(arr, axis=-1) / t
    var = np.maximum(np.cumsum(arr ** 2, axis=-1) / t - mean ** 2, 0)
    half = norm.ppf((1 + level) / 2) * np.sqrt(var / t)
    half = np.where(t >= 2, half, np.nan)
    return {"lower": mean - half, "upper": mean + half, "mean": mean}
