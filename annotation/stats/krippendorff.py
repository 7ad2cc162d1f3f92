"""Krippendorff's alpha for items x raters matrices with missing values (NaN).

Vectorised over the coincidence matrix without ever materialising it densely:
alpha = 1 - (n - 1) * sum(o_ck * d_ck) / sum(n_c * n_k * d_ck), where o_ck counts
value pairs inside items (each item weighted 1/(m_u - 1)) and n_c counts pairable values.
Nominal, interval and ordinal have closed forms (ordinal = interval on the mid-ranks
R_c = N_<=c - n_c/2 of Krippendorff's ordinal metric); ratio sums over the sparse
coincidence matrix and, for the expectation, over value pairs.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
from scipy import sparse

from .grouping import unique_ints
from .result import Stat

Level = Literal["nominal", "ordinal", "interval", "ratio"]
LEVELS: tuple[Level, ...] = ("nominal", "ordinal", "interval", "ratio")


class Pairable:
    """The pairable values of a matrix: items with >= 2 ratings, flattened, coded by value."""

    def __init__(self, matrix: np.ndarray):
        x = np.asarray(matrix, dtype=float)
        if x.ndim != 2:
            raise ValueError("expected a 2-D items x raters matrix")
        mask = ~np.isnan(x)
        m = mask.sum(axis=1)
        keep = m >= 2
        self.x = x[keep]
        self.mask = mask[keep]
        self.m = m[keep].astype(float)
        self.item, _ = np.nonzero(self.mask)  # row-major, so aligned with x[mask]
        self.values = self.x[self.mask]
        self.n = self.values.size
        self.uniq, self.codes = unique_ints(self.values)
        self.n_values = self.uniq.size
        self.n_c = np.bincount(self.codes, minlength=self.n_values).astype(float)
        self._counts: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None

    def item_value_counts(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Sparse (item, value code, count) triples: n_uc of the coincidence construction, in
        (item, code) order. Computed once per matrix (each level asks for them)."""
        if self._counts is None:
            v = max(self.n_values, 1)
            key = self.item.astype(np.int64) * v + self.codes
            span = self.m.size * v
            if span <= 4 * key.size + 1_000_000:  # a count per possible key: no sort of the keys
                counts = np.bincount(key, minlength=span)
                ukey = np.flatnonzero(counts)
                cnt = counts[ukey]
            else:
                ukey, cnt = np.unique(key, return_counts=True)
            self._counts = (ukey // v, ukey % v, cnt.astype(float))
        return self._counts


def _interval_sums(x: np.ndarray, mask: np.ndarray, m: np.ndarray,
                   vals: np.ndarray, n: int) -> tuple[float, float]:
    # Within item: sum over ordered pairs (x_i - x_j)^2 = 2 m SS; overall likewise with n.
    xz = np.where(mask, x, 0.0)
    mean = xz.sum(axis=1) / m
    ss = (np.where(mask, x - mean[:, None], 0.0) ** 2).sum(axis=1)
    observed = float(np.sum(2.0 * m * ss / (m - 1.0)))
    expected = float(2.0 * n * np.sum((vals - vals.mean()) ** 2))
    return observed, expected


def _ratio_sums(p: Pairable) -> tuple[float, float]:
    u = p.uniq
    items, codes, cnt = p.item_value_counts()
    n_items = p.m.size
    counts = sparse.csr_matrix((cnt, (items, codes)), shape=(n_items, p.n_values))
    weighted = sparse.diags(1.0 / (p.m - 1.0)) @ counts
    coinc = (counts.T @ weighted).tocoo()  # diagonal is harmless: d_cc = 0
    c, k = u[coinc.row], u[coinc.col]
    observed = float(np.sum(coinc.data * _ratio_delta(c, k)))
    expected = 0.0
    step = max(1, 4_000_000 // max(p.n_values, 1))  # bounded memory for many distinct values
    for start in range(0, p.n_values, step):
        block = _ratio_delta(u[start:start + step, None], u[None, :])
        expected += float(p.n_c[start:start + step] @ block @ p.n_c)
    return observed, expected


def _ratio_delta(c: np.ndarray, k: np.ndarray) -> np.ndarray:
    s = c + k
    with np.errstate(invalid="ignore", divide="ignore"):
        d = ((c - k) / s) ** 2
    return np.where(s == 0, 0.0, d)


def krippendorff_alpha(matrix: np.ndarray | Pairable, level: Level = "interval") -> Stat:
    """Krippendorff's alpha of an items x raters matrix (NaN = missing) at one level of measurement.

    Reference: Krippendorff (2011), Computing Krippendorff's alpha-reliability; Hayes & Krippendorff (2007).
    """
    if level not in LEVELS:
        raise ValueError(f"unknown level {level!r}; expected one of {LEVELS}")
    p = matrix if isinstance(matrix, Pairable) else Pairable(matrix)
    if p.n < 2:
        return Stat.undefined("no item has two or more ratings")
    if p.n_values < 2:
        return Stat.undefined("all pairable ratings have the same value (no variation)")
    if level == "nominal":
        items, _, cnt = p.item_value_counts()
        sq = np.bincount(items, weights=cnt * cnt, minlength=p.m.size)
        observed = float(np.sum((p.m * p.m - sq) / (p.m - 1.0)))
        expected = float(p.n * p.n - np.sum(p.n_c * p.n_c))
    elif level == "interval":
        observed, expected = _interval_sums(p.x, p.mask, p.m, p.values, p.n)
    elif level == "ordinal":
        ranks = np.cumsum(p.n_c) - p.n_c / 2.0  # Krippendorff's ordinal metric as a distance on ranks
        xr = np.full(p.x.shape, np.nan)
        xr[p.mask] = ranks[p.codes]
        observed, expected = _interval_sums(xr, p.mask, p.m, ranks[p.codes], p.n)
    else:
        if p.uniq[0] < 0:
            return Stat.undefined("ratio level needs non-negative values")
        observed, expected = _ratio_sums(p)
    if expected <= 0:
        return Stat.undefined("no expected disagreement (no variation)")
    return Stat.of(1.0 - (p.n - 1) * observed / expected)


def krippendorff_all(matrix: np.ndarray) -> dict[str, Stat]:
    """Alpha at all four levels, sharing the preparation of the pairable values.

    Reference: Krippendorff (2011), Computing Krippendorff's alpha-reliability.
    """
    p = Pairable(matrix)
    return {level: krippendorff_alpha(p, level) for level in LEVELS}
