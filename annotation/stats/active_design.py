"""The sampling design of active statistical inference, calibrated on the humans' ratings so far.

The variance of the IPW PPI mean (annotation/stats/active.py) is, up to terms no design changes,
(1/n²)·Σ E[r²|u_i]/π_i with r = Y − λ·f the residual of the human value on the judges' score. Under
the budget Σπ = B it is smallest at π ∝ sqrt(E[r²|u]) (Zrnic & Candès 2024, Active Statistical
Inference, §3): what matters is not the uncertainty u itself but the expected squared residual at
that u. residual_map learns that map from the rated items (binned by u, monotone, a light pull
towards the overall mean); calibrated_probabilities mixes it with a uniform floor so that a map
that says nothing costs little; predicted_saving says what a design should save before humans
rate, from the judges' scores alone or from a pilot.

Whether π may depend on earlier ratings: yes, as long as each item's π is fixed before its own
draw and recorded; the IPW estimate stays unbiased (each term has conditional mean zero given the
past), which is how simulate_active uses it, one batch of items after another.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from annotation.stats.active import active_probabilities

ROUND = 9  # jury spreads that differ only in floating-point noise fall in one bin


def _bins(uncertainty: np.ndarray, min_share: float) -> tuple[np.ndarray, int]:
    """The smallest u of each bin: distinct values of u (a jury's spread takes few), neighbours merged
    until each bin holds at least `min_share` of the items (the last one joins the one before)."""
    values, counts = np.unique(np.round(uncertainty, ROUND), return_counts=True)
    starts, held = [values[0]], 0
    for value, count in zip(values, counts):
        if held >= min_share * uncertainty.size:
            starts.append(value)
            held = 0
        held += count
    if len(starts) > 1 and held < min_share * uncertainty.size:
        starts.pop()
    return np.asarray(starts), len(starts)


def _bin_of(starts: np.ndarray, u: np.ndarray) -> np.ndarray:
    return np.clip(np.searchsorted(starts, np.round(u, ROUND), side="right") - 1, 0, starts.size - 1)


def _monotone(means: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Pool-adjacent-violators: the non-decreasing fit of `means` weighted by `weights`."""
    blocks: list[list[float]] = []  # [mean, weight, count]
    for m, w in zip(means.tolist(), weights.tolist()):
        blocks.append([m, w, 1])
        while len(blocks) > 1 and blocks[-2][0] > blocks[-1][0]:
            (m2, w2, c2), (m1, w1, c1) = blocks.pop(), blocks.pop()
            blocks.append([(m1 * w1 + m2 * w2) / (w1 + w2), w1 + w2, c1 + c2])
    return np.concatenate([np.full(c, m) for m, _, c in blocks])


def residual_map(uncertainty: Any, rated_uncertainty: Any, squared_residual: Any, *, min_share: float = 0.05,
                 prior: float = 1.0, monotone: bool = True) -> np.ndarray:
    """Each item's expected squared residual E[r² | u], learned from the rated items.

    `uncertainty`: u of every item (judge_uncertainty); `rated_uncertainty`, `squared_residual`: u and
    r² of the items humans rated, where each was drawn with a probability that depended on u alone
    (so a bin's rated items are a fair sample of it). Items are grouped by their value of u, neighbouring
    values merged until a bin holds at least `min_share` of the items; each bin's mean r² counts `prior` pseudo-ratings at the overall mean (a bin with few
    ratings leans on the rest), and with `monotone` the map is made non-decreasing in u (more
    disagreement never predicts a smaller error), which steadies it on small pilots. Rated items outside the range of `uncertainty` join the nearest bin.

    Reference: Zrnic & Candès (2024), Active Statistical Inference, ICML (π ∝ sqrt(E[(Y − f)² | X])).
    """
    u = np.asarray(uncertainty, dtype=float)
    ru = np.asarray(rated_uncertainty, dtype=float)
    r2 = np.asarray(squared_residual, dtype=float)
    if u.ndim != 1 or u.size == 0 or not np.all(np.isfinite(u)):
        raise ValueError("uncertainty must be one finite value per item")
    if ru.shape != r2.shape or ru.ndim != 1:
        raise ValueError("rated_uncertainty and squared_residual must pair the same rated items")
    if ru.size < 2:
        raise ValueError("the map needs at least two rated items")
    if not (np.all(np.isfinite(r2)) and np.all(r2 >= 0) and np.all(np.isfinite(ru))):
        raise ValueError("squared_residual must be finite and >= 0, rated_uncertainty finite")
    if not 0 < min_share <= 1 or prior < 0:
        raise ValueError(f"min_share must be in (0, 1] and prior >= 0, got {min_share}, {prior}")
    starts, k = _bins(u, min_share)
    rated_bin = _bin_of(starts, ru)
    counts = np.bincount(rated_bin, minlength=k)
    sums = np.bincount(rated_bin, weights=r2, minlength=k)
    overall = float(r2.mean())
    with np.errstate(invalid="ignore"):
        means = np.where(counts + prior > 0, (sums + prior * overall) / np.maximum(counts + prior, 1e-300), overall)
    if monotone:
        means = _monotone(means, counts + prior)
    return means[_bin_of(starts, u)]


def calibrated_probabilities(uncertainty: Any, budget: float, rated_uncertainty: Any, residual: Any, *,
                             floor: float = 0.2, min_share: float = 0.05, prior: float = 1.0) -> np.ndarray:
    """Sampling probabilities ∝ the predicted residual size sqrt(E[r²|u]) (residual_map of the rated
    items' residuals r = human − λ·judge), mixed with the uniform share `floor`, summing to `budget`.

    Reference: Zrnic & Candès (2024), Active Statistical Inference, ICML.
    """
    r = np.asarray(residual, dtype=float)
    size = np.sqrt(residual_map(uncertainty, rated_uncertainty, r ** 2, min_share=min_share, prior=prior))
    return active_probabilities(size, budget, floor)


def predicted_saving(expected_sq_residual: Any, budget: float, *, floor: float = 0.2) -> dict[str, float]:
    """What π ∝ sqrt(m) with that floor should save against uniform sampling, for the same width, if
    m (each item's E[r²]) is right: the residual term's variance is mean(m/π) against mean(m)·n/B,
    and the ratings uniform sampling needs scale with it. Also the best any design could do, with
    the oracle π ∝ sqrt(m) and no floor: 1 − mean(sqrt m)²/mean(m) (before the cap π ≤ 1).

    The terms no design changes (the spread of the judge's score over the items) are left out: they
    are the same under both designs, so they change the width but not the ratings that match it.

    Reference: Zrnic & Candès (2024), Active Statistical Inference, ICML (the variance of the design).
    """
    m = np.asarray(expected_sq_residual, dtype=float)
    if m.ndim != 1 or m.size == 0 or not np.all(np.isfinite(m)) or np.any(m < 0):
        raise ValueError("expected_sq_residual must be one finite value >= 0 per item")
    n = m.size
    if float(m.mean()) == 0:
        return {"saving": 0.0, "oracle_saving": 0.0}
    pi = active_probabilities(np.sqrt(m), budget, floor)
    ratio = float(np.mean(m / pi) * budget / n / m.mean())
    return {"saving": 1 - ratio, "oracle_saving": float(1 - np.mean(np.sqrt(m)) ** 2 / m.mean())}
