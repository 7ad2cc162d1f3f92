"""Correlations: Pearson, Spearman, Kendall tau-b, and their pairwise means over raters."""

from __future__ import annotations

from itertools import combinations

import numpy as np
from scipy.stats import kendalltau, rankdata

from .grouping import small_whole_numbers
from .kappa import common_items, rater_columns
from .result import Stat

MIN_N = 3  # with two points any correlation is +-1: not information


def pearson(x: np.ndarray, y: np.ndarray) -> Stat:
    """Reference: Pearson (1896), Phil. Trans. R. Soc. A 187."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if x.size < MIN_N:
        return Stat.undefined(f"fewer than {MIN_N} paired values")
    dx, dy = x - x.mean(), y - y.mean()
    # einsum, not BLAS: on small vectors BLAS threads cost more than they save on a busy machine
    sxx, syy = float(np.einsum("i,i", dx, dx)), float(np.einsum("i,i", dy, dy))
    if sxx <= 0 or syy <= 0:
        return Stat.undefined("constant scores (zero variance)")
    r = float(np.einsum("i,i", dx, dy)) / np.sqrt(sxx * syy)
    return Stat.of(max(-1.0, min(1.0, r)))


def spearman(x: np.ndarray, y: np.ndarray) -> Stat:
    """Reference: Spearman (1904), American Journal of Psychology 15(1)."""
    if np.asarray(x).size < MIN_N:
        return Stat.undefined(f"fewer than {MIN_N} paired values")
    return pearson(average_ranks(x), average_ranks(y))


def average_ranks(x: np.ndarray) -> np.ndarray:
    """scipy.stats.rankdata(x) (ties share their average rank), counted over the values present
    when they are scale points (small whole numbers): no sort of millions of them per rater pair.
    The same floats: a tie's rank is half the integer sum of the places around it either way."""
    x = np.asarray(x)
    if x.ndim != 1 or not x.size or x.dtype.kind not in "fiu" or not small_whole_numbers(x.astype(float)):
        return rankdata(x)
    counts = np.bincount(x.astype(np.int64))
    after = np.cumsum(counts)  # places up to and including each value
    return 0.5 * (after + (after - counts) + 1)[x.astype(np.int64)]


def kendall_tau_b(x: np.ndarray, y: np.ndarray) -> Stat:
    """Reference: Kendall (1945), Biometrika 33(3), the treatment of ties."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if x.size < MIN_N:
        return Stat.undefined(f"fewer than {MIN_N} paired values")
    if np.ptp(x) == 0 or np.ptp(y) == 0:
        return Stat.undefined("constant scores (zero variance)")
    return Stat.of(kendalltau(x, y, variant="b").statistic)


def pairwise_correlations(matrix: np.ndarray) -> dict[str, dict[tuple[int, int], Stat]]:
    """Pearson and Spearman of every pair of raters (columns) over the items both rated."""
    x = np.asarray(matrix, dtype=float)
    cols = rater_columns(x)
    out: dict[str, dict[tuple[int, int], Stat]] = {"pearson": {}, "spearman": {}}
    for i, j in combinations(range(x.shape[1]), 2):
        rows = common_items(cols, i, j)
        a, b = x[rows, i], x[rows, j]
        out["pearson"][(i, j)] = pearson(a, b)
        out["spearman"][(i, j)] = spearman(a, b)
    return out
