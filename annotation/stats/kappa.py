"""Fleiss' kappa, percent agreement and Cohen's kappa (unweighted, linear, quadratic).

Cohen's kappa follows sklearn.metrics.cohen_kappa_score: categories are the sorted union
of both raters' values and the linear/quadratic weights are distances between category
positions. It is computed from marginals in O(n) instead of a confusion matrix:
E|I - J| = sum_t F_a(t)(1 - F_b(t)) + F_b(t)(1 - F_a(t)), E(I - J)^2 from moments.
"""

from __future__ import annotations

from itertools import combinations
from typing import Literal, Sequence

import numpy as np

from .grouping import unique_ints
from .krippendorff import Pairable
from .result import Stat

Weights = Literal["unweighted", "linear", "quadratic"]


def _fleiss_core(n_i: np.ndarray, sum_sq: np.ndarray, col_totals: np.ndarray) -> tuple[Stat, Stat]:
    """(kappa, percent agreement) from ratings per item, sum of squared counts per item, totals."""
    keep = n_i >= 2
    if not keep.any():
        reason = "no item has two or more ratings"
        return Stat.undefined(reason), Stat.undefined(reason)
    n_i, sum_sq = n_i[keep], sum_sq[keep]
    p_i = (sum_sq - n_i) / (n_i * (n_i - 1))
    p_bar = float(p_i.mean())
    p_j = col_totals / col_totals.sum()
    p_e = float(np.sum(p_j * p_j))
    agreement = Stat.of(p_bar)
    if p_e >= 1.0:
        return Stat.undefined("a single category was used (no variation)"), agreement
    return Stat.of((p_bar - p_e) / (1 - p_e)), agreement


def fleiss_kappa(counts: np.ndarray) -> Stat:
    """Fleiss' kappa from an items x categories table of counts (items with < 2 ratings ignored).

    With unequal numbers of ratings per item, P_i uses each item's own n_i (the usual generalisation).

    Reference: Fleiss (1971), Psychological Bulletin 76(5).
    """
    t = np.asarray(counts, dtype=float)
    n_i = t.sum(axis=1)
    keep = n_i >= 2
    return _fleiss_core(n_i, (t * t).sum(axis=1), t[keep].sum(axis=0))[0]


def fleiss_and_agreement(matrix: np.ndarray | Pairable) -> tuple[Stat, Stat]:
    """Fleiss' kappa and percent agreement (mean pairwise agreement over items with >= 2 ratings)."""
    p = matrix if isinstance(matrix, Pairable) else Pairable(matrix)
    if p.n == 0:
        reason = "no item has two or more ratings"
        return Stat.undefined(reason), Stat.undefined(reason)
    items, _, cnt = p.item_value_counts()
    sum_sq = np.bincount(items, weights=cnt * cnt, minlength=p.m.size)
    return _fleiss_core(p.m, sum_sq, p.n_c)


def percent_agreement(matrix: np.ndarray) -> Stat:
    """Reference: Fleiss (1971): the mean pairwise agreement P-bar."""
    return fleiss_and_agreement(matrix)[1]


def cohen_kappa(a: np.ndarray, b: np.ndarray, weights: Weights = "unweighted") -> Stat:
    """Cohen's kappa of two raters over the same items (no missing values).

    Reference: Cohen (1960), Educational and Psychological Measurement 20(1); weighted: Cohen (1968).
    """
    return cohen_kappas(a, b, (weights,))[weights]


def cohen_kappas(a: np.ndarray, b: np.ndarray, weights: Sequence[Weights]) -> dict[str, Stat]:
    """cohen_kappa for several weightings of the same two raters: the categories are found once."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    n = a.size
    if n < 2:
        return {w: Stat.undefined("fewer than two items rated by both raters") for w in weights}
    for w in weights:
        if w not in ("unweighted", "linear", "quadratic"):
            raise ValueError(f"unknown weights {w!r}")
    labels, inv = unique_ints(np.concatenate([a, b]))
    ia, ib = inv[:n].astype(float), inv[n:].astype(float)
    size = labels.size
    pa = np.bincount(inv[:n], minlength=size) / n
    pb = np.bincount(inv[n:], minlength=size) / n
    out = {}
    for w in weights:
        if w == "unweighted":
            observed = float(np.mean(ia != ib))
            expected = 1.0 - float(np.sum(pa * pb))
        elif w == "linear":
            observed = float(np.mean(np.abs(ia - ib)))
            fa, fb = np.cumsum(pa)[:-1], np.cumsum(pb)[:-1]
            expected = float(np.sum(fa * (1 - fb) + fb * (1 - fa)))
        else:
            observed = float(np.mean((ia - ib) ** 2))
            pos = np.arange(size, dtype=float)
            ma, mb = float(pa @ pos), float(pb @ pos)
            expected = float(pa @ pos**2) - ma * ma + float(pb @ pos**2) - mb * mb + (ma - mb) ** 2
        if expected <= 1e-15:
            out[w] = Stat.undefined("no expected disagreement (both raters used one and the same category)")
        else:
            out[w] = Stat.of(1.0 - observed / expected)
    return out


def rater_columns(matrix: np.ndarray) -> np.ndarray:
    """Items x raters: True where the rater (column) rated the item."""
    return ~np.isnan(np.asarray(matrix, dtype=float))


def common_items(present: np.ndarray, i: int, j: int) -> np.ndarray:
    """Row indices (ascending) of the items raters i and j both rated: one pass over two boolean
    columns (an intersection of their index lists sorted their concatenation, per pair)."""
    return np.flatnonzero(present[:, i] & present[:, j])


def mean_of(stats: list[Stat], what: str) -> Stat:
    """Mean of the defined values; undefined (with the first reason) when none is defined."""
    values = [s.value for s in stats if s.value is not None]
    if values:
        return Stat.of(float(np.mean(values)))
    if not stats:
        return Stat.undefined(f"no pair of raters for {what}")
    return Stat.undefined(f"{what} undefined for every rater pair: {stats[0].reason}")


def pairwise_cohen(matrix: np.ndarray, weights: Weights = "unweighted") -> dict[tuple[int, int], Stat]:
    """Cohen's kappa of every pair of raters (columns) over the items both rated."""
    return pairwise_cohens(matrix, (weights,))[weights]


def pairwise_cohens(matrix: np.ndarray, weights: Sequence[Weights]) -> dict[str, dict[tuple[int, int], Stat]]:
    """pairwise_cohen for several weightings: each pair's shared items and categories found once."""
    x = np.asarray(matrix, dtype=float)
    cols = rater_columns(x)
    out: dict[str, dict[tuple[int, int], Stat]] = {w: {} for w in weights}
    for i, j in combinations(range(x.shape[1]), 2):
        rows = common_items(cols, i, j)
        for w, value in cohen_kappas(x[rows, i], x[rows, j], weights).items():
            out[w][(i, j)] = value
    return out
