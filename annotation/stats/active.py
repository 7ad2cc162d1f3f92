"""Humans where the judges are unsure: active statistical inference (Zrnic & Candès, "Active
Statistical Inference", ICML 2024).

Every item has the judges' score f and a probability π of going to a human, drawn independently
(ξ ~ Bernoulli(π)). The paper's estimator of the mean human value is

    θ = mean over ALL items of  λ·f + (Y − λ·f)·ξ/π          se² = var(those summands)/n

unbiased for any π > 0 however biased the judge is (inverse-probability weighting); ipw_ppi_mean
by default divides the correction by Σξ/π instead (see there). λ is the
PPI++-style power-tuning weight that minimises the estimated variance. The variance is smallest
when π grows with the size of the judge's error, so π grows with the judges' uncertainty, scaled
to the budget (the expected number of human ratings), with a floor so no item has π = 0.
tests/stats/test_active.py checks both forms against the paper's formulas and ppi_py.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy.stats import norm


def _array(name: str, values: Any, *, finite: bool = True) -> np.ndarray:
    arr = np.asarray(values, dtype=float)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be one value per item (got shape {arr.shape})")
    if finite and not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} has a missing or infinite value at item {int(np.flatnonzero(~np.isfinite(arr))[0])}")
    return arr


def judge_uncertainty(jury: Any = None, probability: Any = None, calibration_error: Any = None) -> np.ndarray:
    """Per item, the judges' expected error size: sqrt(jury variance + p(1−p) + calibration error²).

    `jury`: items x judges scores (NaN = that judge did not score it); their spread across judges.
    `probability`: the judge's probability of the positive answer (its own expected squared error is
    p(1−p) when calibrated). `calibration_error`: per item, the |observed − predicted| of the item's
    calibration bin (calibration()'s bins), which adds to the squared error when the judge is not
    calibrated. The optimal sampling probability is proportional to sqrt(E[(Y − f)² | x]), hence
    the sum of squares under one root.

    Reference: Zrnic & Candès (2024), Active Statistical Inference, ICML (π ∝ sqrt(E[(Y−f)²|X])).
    """
    parts = []
    if jury is not None:
        scores = np.asarray(jury, dtype=float)
        if scores.ndim != 2 or scores.shape[1] < 2:
            raise ValueError("jury must be items x judges with at least two judges")
        counts = np.sum(~np.isnan(scores), axis=1)
        if np.any(counts < 2):
            raise ValueError(f"jury: item {int(np.flatnonzero(counts < 2)[0])} has fewer than two judges' scores")
        parts.append(np.nanvar(scores, axis=1, ddof=1))
    if probability is not None:
        p = _array("probability", probability)
        if np.any((p < 0) | (p > 1)):
            raise ValueError(f"probability must be in [0, 1] (item {int(np.flatnonzero((p < 0) | (p > 1))[0])})")
        parts.append(p * (1 - p))
    if calibration_error is not None:
        parts.append(_array("calibration_error", calibration_error) ** 2)
    if not parts:
        raise ValueError("give at least one of jury, probability, calibration_error")
    sizes = {part.size for part in parts}
    if len(sizes) > 1:
        raise ValueError(f"jury, probability and calibration_error cover different numbers of items: {sorted(sizes)}")
    return np.sqrt(np.sum(parts, axis=0))


def active_probabilities(uncertainty: Any, budget: float, floor: float = 0.1) -> np.ndarray:
    """Each item's probability of a human rating: min(1, floor·budget/n + κ·uncertainty), with κ set
    so that the probabilities sum to `budget` (the expected number of human ratings).

    `floor` in (0, 1] is the share of the budget spread evenly, so every item keeps a positive
    probability (1 = uniform sampling); one per row when rows are given. Items whose probability
    would pass 1 are capped at 1 and the rest of the budget goes to the others. Works on (..., n) arrays, one design per row.

    Reference: Zrnic & Candès (2024), Active Statistical Inference, ICML (π = (1−τ)·η·u + τ·budget).
    """
    u = np.asarray(uncertainty, dtype=float)
    if u.ndim == 0 or u.shape[-1] == 0:
        raise ValueError("uncertainty must have one value per item")
    if not np.all(np.isfinite(u)) or np.any(u < 0):
        raise ValueError("uncertainty must be finite and >= 0 for every item")
    n = u.shape[-1]
    if not 0 < budget <= n:
        raise ValueError(f"budget must be in (0, {n}] (the expected number of human ratings of {n} items), "
                         f"got {budget}")
    floor = np.asarray(floor, dtype=float)
    if np.any(floor <= 0) or np.any(floor > 1):
        raise ValueError(f"floor must be in (0, 1], got {floor}")
    base = (floor[..., None] if floor.ndim else floor) * budget / n
    capped = np.zeros(u.shape, dtype=bool)
    for _ in range(n + 1):  # each pass caps at least one more item or stops
        free_u = np.where(capped, 0.0, u).sum(axis=-1, keepdims=True)
        left = budget - capped.sum(axis=-1, keepdims=True) - base * (~capped).sum(axis=-1, keepdims=True)
        with np.errstate(divide="ignore", invalid="ignore"):
            kappa = np.where(free_u > 0, np.maximum(left, 0) / free_u, 0.0)
        pi = np.where(capped, 1.0, base + kappa * u)
        over = (pi > 1) & ~capped
        if not over.any():
            break
        capped |= over
    # All uncertainty zero (or none left uncapped): the remaining budget is spread evenly.
    spare = budget - pi.sum(axis=-1, keepdims=True)
    if np.any(spare > 1e-9 * budget):
        room = np.where(capped, 0.0, 1.0)
        pi = np.minimum(1.0, pi + spare * room / np.maximum(room.sum(axis=-1, keepdims=True), 1))
    return pi


def ipw_design(y: Any, yhat: Any, pi: Any, rated: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    yhat = _array("yhat", yhat)
    pi = _array("pi", pi)
    rated = np.asarray(rated, dtype=bool)
    y = np.asarray(y, dtype=float)
    if not (y.shape == yhat.shape == pi.shape == rated.shape):
        raise ValueError(f"y, yhat, pi and rated must be one value per item (lengths {y.size}, {yhat.size}, "
                         f"{pi.size}, {rated.size})")
    if np.any((pi <= 0) | (pi > 1)):
        raise ValueError(f"pi must be in (0, 1] (item {int(np.flatnonzero((pi <= 0) | (pi > 1))[0])})")
    missing = rated & ~np.isfinite(y)
    if missing.any():
        raise ValueError(f"y is missing for rated item {int(np.flatnonzero(missing)[0])}")
    return np.where(rated, y, 0.0), yhat, pi, rated.astype(float)


def ipw_parts(y, yhat, pi, xi) -> tuple[np.ndarray, np.ndarray]:
    """Horvitz–Thompson summand a − λ·b with a = Y·ξ/π and b = f·(ξ/π − 1) (the paper's form)."""
    w = xi / pi
    return y * w, yhat * (w - 1)


def _hajek_parts(y, yhat, pi, xi) -> tuple[np.ndarray, np.ndarray, float, float]:
    """The linearised self-normalised summand a − λ·b (+ a constant) and the weighted means of Y and f."""
    w = xi / pi
    if w.sum() == 0:
        raise ValueError("no item was rated by a human")
    y_bar, f_bar = float(np.sum(w * y) / w.sum()), float(np.sum(w * yhat) / w.sum())
    return w * (y - y_bar), w * (yhat - f_bar) - yhat, y_bar, f_bar


def _tuned(a: np.ndarray, b: np.ndarray) -> float:
    var_b = float(np.var(b))
    if var_b == 0:
        return 0.0
    return float(np.clip(np.mean((a - a.mean()) * (b - b.mean())) / var_b, 0.0, 1.0))


def ipw_ppi_lambda(y: Any, yhat: Any, pi: Any, rated: Any, *, normalise: bool = True) -> float:
    """The power-tuning weight λ in [0, 1] minimising the estimated variance of ipw_ppi_mean's
    summands a − λ·b: cov(a, b) / var(b).

    Reference: Zrnic & Candès (2024), Active Statistical Inference, ICML; Angelopoulos, Duchi & Zrnic
    (2023), PPI++ (power tuning).
    """
    design = ipw_design(y, yhat, pi, rated)
    a, b = _hajek_parts(*design)[:2] if normalise else ipw_parts(*design)
    return _tuned(a, b)


def ipw_ppi_mean(y: Any, yhat: Any, pi: Any, rated: Any, *, lam: float | None = None,
                 normalise: bool = True, level: float = 0.95) -> dict[str, Any]:
    """Mean human value from the judges' scores on every item and the humans' on the rated ones,
    inverse-probability weighted, with its CLT interval.

    `y`: human value per item (ignored, may be NaN, where not rated); `yhat`: the judges' score of
    every item; `pi`: each item's sampling probability as recorded when it was drawn; `rated`: whether
    it went to a human. `lam=None` tunes λ (ipw_ppi_lambda); 1 is plain PPI, 0 the human-only
    inverse-probability-weighted mean.

    normalise=False is the paper's estimator, mean of λf + (Y − λf)ξ/π over all items. The default
    divides the correction by Σξ/π instead of n (a Hájek ratio), so a judge's constant bias costs no
    width; its interval is the variance of the linearised summands. With uniform π its point
    estimate is ppi_py's PPI++ mean, and for any π ppi_py's with weights 1/π (which it normalises).

    Reference: Zrnic & Candès (2024), Active Statistical Inference, ICML; Hájek (1971), the ratio form.
    """
    y, yhat, pi, xi = ipw_design(y, yhat, pi, rated)
    n = y.size
    if n < 2:
        raise ValueError("ipw_ppi_mean needs at least two items")
    if normalise:
        a, b, y_bar, f_bar = _hajek_parts(y, yhat, pi, xi)
    else:
        a, b = ipw_parts(y, yhat, pi, xi)
    if lam is None:
        lam = _tuned(a, b)
    z = a - lam * b
    mean = float(lam * yhat.mean() + y_bar - lam * f_bar) if normalise else float(z.mean())
    se = float(z.std() / np.sqrt(n))
    half = float(norm.ppf((1 + level) / 2) * se)
    return {"mean": mean, "ci": [mean - half, mean + half], "se": se, "lambda": float(lam), "n_items": n,
            "n_rated": int(xi.sum()), "expected_rated": float(pi.sum())}


def hajek_mean(x: Any, w: Any, *, level: float = 0.95) -> dict[str, Any]:
    """Hájek's weighted mean Σwx / Σw of values sampled with unequal probabilities (w = 1/π of each
    value's unit), with the linearised standard error sqrt(n/(n−1)·Σw²(x−m)²) / Σw and a normal
    interval; `effective_n` = (Σw)² / Σw². The human-only estimate of a population mean under an
    active design, where the plain mean over-counts the units drawn more often.

    Reference: Hájek (1971); Särndal, Swensson & Wretman (1992), Model Assisted Survey Sampling, §5.7.
    """
    x, w = _array("x", x), _array("w", w)
    if x.size != w.size or np.any(w <= 0):
        raise ValueError("hajek_mean needs one positive weight per value")
    n = x.size
    if n == 0:
        return {"mean": None, "ci": None, "se": None, "n": 0, "effective_n": 0.0}
    total = float(w.sum())
    mean = float(np.sum(w * x) / total)
    out = {"mean": mean, "ci": None, "se": None, "n": n, "effective_n": total ** 2 / float(np.sum(w ** 2))}
    if n >= 2:
        se = float(np.sqrt(n / (n - 1) * np.sum(w ** 2 * (x - mean) ** 2)) / total)
        half = float(norm.ppf((1 + level) / 2) * se)
        out.update(se=se, ci=[mean - half, mean + half])
    return out


def ipw_ppi_systems(system: Any, y: Any, yhat: Any, pi: Any, rated: Any, *, level: float = 0.95) -> dict[str, Any]:
    """{system: ipw_ppi_mean(...)} over parallel per-output arrays, λ tuned per system.

    Reference: Zrnic & Candès (2024), Active Statistical Inference, ICML.
    """
    names = np.asarray(system).astype(str)
    arrays = [np.asarray(v) for v in (y, yhat, pi, rated)]
    if any(a.shape != names.shape for a in arrays):
        raise ValueError("system, y, yhat, pi and rated must have one value per output")
    return {str(s): ipw_ppi_mean(*(a[names == s] for a in arrays), level=level) for s in np.unique(names)}


def choose_design(uncertainty: Any, budget: float, pilot_uncertainty: Any, pilot_residual: Any, *,
                  floors: Any = (0.1, 0.3, 0.5, 0.7, 0.9, 1.0),
                  powers: Any = (0.5, 1.0)) -> tuple[Any, Any]:
    """(power, floor) whose probabilities active_probabilities(uncertainty**power, budget, floor)
    minimise the estimated variance mean(r²/π) over a pilot of uniformly sampled items (r = human −
    λ·judge there; NaN = not rated): floor 1 (uniform) when the uncertainty says nothing about the
    error, a power below 1 when it is heavy-tailed. Works on (..., n) rows, one design per row.

    Reference: Zrnic & Candès (2024), Active Statistical Inference, ICML (τ tuned on held-out data;
    the optimal π ∝ sqrt(E[(Y − f)² | u])).
    """
    u = np.asarray(uncertainty, dtype=float)
    pu = np.asarray(pilot_uncertainty, dtype=float)
    r2 = np.asarray(pilot_residual, dtype=float) ** 2
    if pu.shape != r2.shape or pu.shape[:-1] != u.shape[:-1]:
        raise ValueError("pilot_uncertainty and pilot_residual must pair the same pilot items, row by row")
    rated = np.isfinite(r2)
    if np.any(rated.sum(axis=-1) < 2):
        raise ValueError("the pilot needs at least two rated items")
    base_share = budget / u.shape[-1]
    scores, designs = [], []
    for power in powers:
        up, pup = u ** power, pu ** power
        for floor in floors:
            pi = active_probabilities(up, budget, floor)
            # The pilot items' probabilities under this design: the same floor and scale κ.
            free = (pi < 1) & (up > 0)
            with np.errstate(divide="ignore", invalid="ignore"):
                ratio = np.where(free, (pi - floor * base_share) / np.where(up > 0, up, 1), np.nan)
                kappa = np.nan_to_num(np.nanmedian(ratio, axis=-1, keepdims=True)) if free.any() else 0.0
            pilot_pi = np.clip(floor * base_share + kappa * pup, 1e-12, 1.0)
            scores.append(np.nanmean(np.where(rated, r2, np.nan) / pilot_pi, axis=-1))
            designs.append((power, floor))
    best = np.argmin(np.stack(scores), axis=0)
    power = np.array([d[0] for d in designs])[best]
    floor = np.array([d[1] for d in designs])[best]
    return (float(power), float(floor)) if power.ndim == 0 else (power, floor)
