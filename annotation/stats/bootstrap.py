"""Percentile bootstrap confidence intervals, resampling items (rows), seeded.

`statistic` gets arrays whose first axis is items. With `vectorized=True` it is called
once on arrays of shape (n_boot, n_items, ...) and must return n_boot values (the fast
path, e.g. `lambda x: x.mean(axis=1)`); otherwise it is called per resample.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from .result import Stat


def bootstrap_ci(
    statistic: Callable[..., float | np.ndarray],
    *data: np.ndarray,
    n_boot: int = 2000,
    level: float = 0.95,
    seed: int | None = 0,
    vectorized: bool = False,
    batch: int = 256,
) -> Stat:
    """Statistic on the data with its percentile CI; undefined when it is or all resamples are.

    Reference: Efron & Tibshirani (1993), An Introduction to the Bootstrap, ch. 13.
    """
    arrays = [np.asarray(d) for d in data]
    n = arrays[0].shape[0]
    if any(a.shape[0] != n for a in arrays):
        raise ValueError("all arrays must have the same number of items (first axis)")
    if n < 2:
        return Stat.undefined("fewer than two items to resample")
    estimate = _scalar(statistic(*[a[None] for a in arrays])[0] if vectorized else statistic(*arrays))
    rng = np.random.default_rng(seed)
    draws = np.empty(n_boot)
    for start in range(0, n_boot, batch):
        idx = rng.integers(0, n, size=(min(batch, n_boot - start), n))
        if vectorized:
            draws[start:start + idx.shape[0]] = statistic(*[a[idx] for a in arrays])
        else:
            draws[start:start + idx.shape[0]] = [_scalar(statistic(*[a[i] for a in arrays])) for i in idx]
    draws = draws[np.isfinite(draws)]
    if estimate is None:
        return Stat.undefined("the statistic is undefined on these data")
    if draws.size == 0:
        return Stat(estimate, "the statistic is undefined on every resample")
    tail = (1 - level) / 2 * 100
    lo, hi = np.percentile(draws, [tail, 100 - tail])
    return Stat(estimate, None, (float(lo), float(hi)))


def _scalar(value: object) -> float | None:
    if isinstance(value, Stat):
        return value.value
    v = float(value)  # type: ignore[arg-type]
    return v if np.isfinite(v) else None
