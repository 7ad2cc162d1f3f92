"""Grouping ten million rows by several keys as integer codes.

`group_index(a, b, c)` numbers the groups of `DataFrame.groupby([a, b, c], sort=True,
observed=True)` in the same order (categoricals by their categories' order, other columns
sorted; rows with a missing key in no group), from each column's codes rather than its
values: a pandas groupby on three keys of ten million strings or categoricals spent seconds
building and sorting its keys. Aggregates over these codes still go through pandas (one
integer key), so every mean and sd is summed in the same order by the same algorithm as
before, and so equal to the last bit.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd


def group_index(*columns: Any) -> tuple[np.ndarray, list[np.ndarray], list[pd.Index]]:
    """(group code per row, -1 where a key is missing; per column, the code of each group's key;
    per column, its values in group order). Groups are numbered 0..G-1 in sort order."""
    codes, uniques = [], []
    for col in columns:
        c, values = pd.factorize(col, sort=True)
        codes.append(c)
        uniques.append(values)
    group, parts = group_codes(codes, [len(u) for u in uniques])
    return group, parts, uniques


def group_codes(codes: list[np.ndarray], sizes: list[int]) -> tuple[np.ndarray, list[np.ndarray]]:
    """group_index of columns already coded 0..size-1 (-1: missing), codes sorting as the keys do."""
    n = len(codes[0])
    key = np.zeros(n, dtype=np.int64)
    ok = np.ones(n, dtype=bool)
    sizes = [max(int(s), 1) for s in sizes]
    if float(np.prod(sizes, dtype=float)) >= 2.0 ** 62:
        raise OverflowError("too many key combinations for one int64 code")
    for c, size in zip(codes, sizes):
        ok &= c >= 0
        key = key * size + c
    group = np.full(n, -1, dtype=np.int64)
    found, seen = pd.factorize(key[ok])  # hashing, then sorting only the distinct keys
    order = np.argsort(seen, kind="stable")
    rank = np.empty(order.size, dtype=np.int64)
    rank[order] = np.arange(order.size)
    group[ok] = rank[found]
    keys = seen[order]
    parts = []
    for size in reversed(sizes):
        parts.append(keys % size)
        keys = keys // size
    return group, parts[::-1]


def group_agg(values: np.ndarray, group: np.ndarray, n_groups: int, how: str = "mean") -> np.ndarray:
    """pandas' `how` ("mean", "std", "count", "sum") of `values` per group code (rows with code -1
    left out), as an array over 0..n_groups-1 (NaN or 0 for a group with no row)."""
    ok = group >= 0
    out = pd.Series(values[ok]).groupby(group[ok], sort=True).agg(how)
    return out.reindex(np.arange(n_groups)).to_numpy(dtype=float)
