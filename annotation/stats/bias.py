"""Bias probes for judges and humans alike: verbosity, length-controlled system scores and
self-preference. Each gives its size, an interval and a test.

- verbosity: Spearman's ρ between score and output length (Fisher-z interval, its p-value) and
  the OLS slope of score on length per 100 words;
- length-controlled scores: OLS of score on system (treatment coding) and centred length, so
  each system's score is read at the average length (the idea of AlpacaEval's
  length-controlled win rate, for absolute scores);
- self-preference: how much higher a judge scores outputs of its own model family than the
  others (Welch's t interval and test).
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np
from scipy.stats import norm, spearmanr, t as t_dist


def _ols(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    """Coefficients, their covariance (classical, σ² (X'X)⁻¹) and the residual degrees of freedom."""
    beta, *_ = np.linalg.lstsq(x, y, rcond=None)
    df = x.shape[0] - x.shape[1]
    resid = y - x @ beta
    sigma2 = float(resid @ resid) / df
    return beta, sigma2 * np.linalg.pinv(x.T @ x), df


def verbosity(scores: Sequence[float], lengths: Sequence[float], level: float = 0.95) -> dict[str, Any]:
    """Does the score rise with the output's length (in words)?

    Reference: Dubois et al. (2024), Length-Controlled AlpacaEval, COLM.
    """
    s, n_words = np.asarray(scores, float), np.asarray(lengths, float)
    keep = np.isfinite(s) & np.isfinite(n_words)
    s, n_words = s[keep], n_words[keep]
    if s.size < 4 or np.ptp(n_words) == 0 or np.ptp(s) == 0:
        return {"n": int(s.size), "spearman": None, "spearman_ci": None, "p": None, "slope_per_100_words": None,
                "slope_ci": None, "reason": "needs 4 or more outputs whose lengths and scores vary"}
    rho, p = spearmanr(s, n_words)
    z, half = np.arctanh(np.clip(rho, -0.999999, 0.999999)), norm.ppf((1 + level) / 2) / np.sqrt(s.size - 3)
    x = np.column_stack([np.ones_like(n_words), n_words / 100.0])
    beta, cov, df = _ols(x, s)
    t_half = t_dist.ppf((1 + level) / 2, df) * np.sqrt(cov[1, 1])
    return {"n": int(s.size), "spearman": float(rho), "spearman_ci": [float(np.tanh(z - half)), float(np.tanh(z + half))],
            "p": float(p), "slope_per_100_words": float(beta[1]),
            "slope_ci": [float(beta[1] - t_half), float(beta[1] + t_half)]}


def length_controlled(scores: Sequence[float], lengths: Sequence[float], systems: Sequence[str],
                      level: float = 0.95) -> dict[str, Any]:
    """Per system: the raw mean and the score predicted at the average length, with its interval.

    Reference: Dubois et al. (2024), Length-Controlled AlpacaEval, COLM.
    """
    s, n_words = np.asarray(scores, float), np.asarray(lengths, float)
    names = sorted(set(systems))
    if len(names) < 1 or s.size < len(names) + 2:
        return {"systems": {}, "reason": "too few outputs for the number of systems"}
    sys_arr = np.asarray(systems)
    centred = (n_words - n_words.mean()) / 100.0
    columns = [np.ones_like(s)] + [(sys_arr == name).astype(float) for name in names[1:]] + [centred]
    x = np.column_stack(columns)
    beta, cov, df = _ols(x, s)
    q = t_dist.ppf((1 + level) / 2, df)
    out = {}
    for k, name in enumerate(names):
        contrast = np.zeros(x.shape[1])
        contrast[0] = 1.0
        if k > 0:
            contrast[k] = 1.0
        value, se = float(contrast @ beta), float(np.sqrt(contrast @ cov @ contrast))
        mask = sys_arr == name
        out[name] = {"mean": float(s[mask].mean()), "length_controlled": value, "ci": [value - q * se, value + q * se],
                     "mean_words": float(n_words[mask].mean()), "n": int(mask.sum())}
    return {"systems": out, "slope_per_100_words": float(beta[-1])}


def self_preference(own: Sequence[float], others: Sequence[float], level: float = 0.95) -> dict[str, Any]:
    """Mean score of the judge's own family's outputs minus the others', Welch's interval and test.

    Reference: Panickssery, Bowman & Feng (2024), LLM Evaluators Recognize and Favor Their Own Generations; Welch (1947).
    """
    a, b = np.asarray(own, float), np.asarray(others, float)
    if a.size < 2 or b.size < 2:
        return {"difference": None, "ci": None, "p": None, "n_own": int(a.size), "n_others": int(b.size),
                "reason": "needs 2 or more outputs of the judge's family and of the others"}
    va, vb = a.var(ddof=1) / a.size, b.var(ddof=1) / b.size
    diff, se = float(a.mean() - b.mean()), float(np.sqrt(va + vb))
    if se == 0:
        return {"difference": diff, "ci": None, "p": None, "n_own": int(a.size), "n_others": int(b.size),
                "reason": "no spread in the scores"}
    df = (va + vb) ** 2 / (va ** 2 / (a.size - 1) + vb ** 2 / (b.size - 1))
    half = float(t_dist.ppf((1 + level) / 2, df) * se)
    p = float(2 * t_dist.sf(abs(diff / se), df))  # Welch's test, as scipy's ttest_ind(equal_var=False)
    return {"difference": diff, "ci": [diff - half, diff + half], "p": p,
            "n_own": int(a.size), "n_others": int(b.size)}
