"""Grouping ten million rows by several keys as integer codes.

`group_index(a, b, c)` numbers the groups of `DataFrame.groupby([a, b, c], sort=True,
observed=True)` in the same order (categoricals by their categories' order, other columns
sorted; rows with a missing key in no group), from each column's codes rather than its
values: a pandas groupby on three keys of ten million strings or categoricals spent seconds
building and sorting its keys. Aggregates over these codes still go through pandas (one
categorical key, whose codes are the group numbers), so every mean and sd is summed in the
same order by the same algorithm as before, and so equal to the last bit.

Where the keys' range is small (a few times the number of rows), codes come from a table of
the keys present rather than from a hash table: ten million mostly distinct keys hashed cost
seconds in cache misses, a pass over a boolean table a fraction of that.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd


SMALL_RANGE = 1 << 16  # unique_ints: the largest whole float counted in a table


def _dense_enough(span: int, n: int) -> bool:
    return span <= 4 * n + 1_000_000


def _rank_codes(key: np.ndarray, span: int) -> tuple[np.ndarray, np.ndarray]:
    """(rank of each key among the distinct keys, the distinct keys ascending) for keys in 0..span-1."""
    present = np.zeros(span, dtype=bool)
    present[key] = True
    keys = np.flatnonzero(present)
    rank = np.cumsum(present, dtype=np.int64) - 1
    return rank[key], keys


def _sorted_codes(column: Any) -> tuple[np.ndarray, Any]:
    """pd.factorize(column, sort=True), by a table of the values present for integers in a small range."""
    if isinstance(getattr(column, "dtype", None), pd.CategoricalDtype):  # in category order, as groupby
        cat = column.array if isinstance(column, (pd.Series, pd.Index)) else column
        codes = np.asarray(cat.codes, dtype=np.int64)
        known = codes >= 0
        out = np.full(codes.size, -1, dtype=np.int64)
        out[known], present = _rank_codes(codes[known], max(len(cat.categories), 1))
        return out, pd.CategoricalIndex(pd.Categorical.from_codes(present, dtype=cat.dtype))
    values = column.to_numpy() if isinstance(column, (pd.Series, pd.Index)) else column
    if isinstance(values, np.ndarray) and values.dtype.kind in "iu" and values.size:
        low, high = int(values.min()), int(values.max())
        if _dense_enough(high - low + 1, values.size):
            codes, present = _rank_codes(values.astype(np.int64) - low, high - low + 1)
            return codes, pd.Index((present + low).astype(values.dtype))
    return pd.factorize(column, sort=True)


def group_index(*columns: Any) -> tuple[np.ndarray, list[np.ndarray], list[pd.Index]]:
    """(group code per row, -1 where a key is missing; per column, the code of each group's key;
    per column, its values in group order). Groups are numbered 0..G-1 in sort order."""
    codes, uniques = [], []
    for col in columns:
        c, values = _sorted_codes(col)
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
    span = float(np.prod(sizes, dtype=float))
    if span >= 2.0 ** 62:
        raise OverflowError("too many key combinations for one int64 code")
    for c, size in zip(codes, sizes):
        ok &= c >= 0
        key = key * size + c
    group = np.full(n, -1, dtype=np.int64)
    if _dense_enough(int(span), n):
        group[ok], keys = _rank_codes(key[ok], int(span))
    else:
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
    left out), as an array over 0..n_groups-1 (NaN or 0 for a group with no row). The codes go
    to pandas as a categorical's, so it does not hash them again."""
    ok = group >= 0
    key = pd.Categorical.from_codes(group[ok], categories=pd.RangeIndex(max(n_groups, 1)))
    out = pd.Series(values[ok]).groupby(key, sort=True, observed=False).agg(how)
    return out.to_numpy(dtype=float)[:n_groups]


def unique_ints(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """np.unique(values, return_inverse=True) (sorted distinct values, each value's place among
    them), by a table of the values present when they are non-negative integers in a small range,
    or floats that are such integers (scale points: np.unique sorted millions of them per call)."""
    if values.size and values.dtype.kind == "f" and small_whole_numbers(values):
        inverse, present = _rank_codes(values.astype(np.int64), int(values.max()) + 1)
        return present.astype(values.dtype), inverse
    if values.size and values.dtype.kind in "iu" and int(values.min()) >= 0 \
            and _dense_enough(int(values.max()) + 1, values.size):
        inverse, present = _rank_codes(values.astype(np.int64), int(values.max()) + 1)
        return present.astype(values.dtype), inverse
    return np.unique(values, return_inverse=True)


def small_whole_numbers(values: np.ndarray) -> bool:
    """Floats all in 0..SMALL_RANGE and whole, none -0.0 (whose place np.unique shares with 0.0 but
    whose sign it may keep) and none NaN (min and max are NaN then, and the test fails)."""
    low, high = values.min(), values.max()
    return bool(low >= 0 and high <= SMALL_RANGE and (values == np.floor(values)).all()
                and not np.signbit(values).any())
