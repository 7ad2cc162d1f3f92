"""rating_ids.Lookup.index: ids' places in a study's table of ids, by a table of places where the ids
are dense and by binary search where they are sparse; the same answer either way."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from annotation.reports import rating_ids


def _lookup(ids: list[int]) -> rating_ids.Lookup:
    def read(sql, params, schema):
        return pa.table({"id": pa.array(ids, pa.int64()), "name": pa.array([f"n{i}" for i in ids])}, schema=schema)
    return rating_ids.Lookup("", [], read=read)


def _searched(ids: list[int], wanted: list[int | None]) -> list[int | None]:
    return [ids.index(w) if w in ids else None for w in wanted]


@pytest.mark.parametrize("ids", [[5, 6, 7, 9, 12], [3, 1_000, 50_000, 10**9], [7], []])
def test_places_of_known_ids_null_for_others(ids):
    wanted = [None, 0, 4, 5, 6, 8, 9, 12, 13, 1_000, 10**9, 10**9 + 1, -3, 7, 3]
    lookup = _lookup(ids)
    found = lookup.index(pa.chunked_array([pa.array(wanted[:6], pa.int64()), pa.array(wanted[6:], pa.int64())]))
    assert found.to_pylist() == _searched(ids, wanted)
    dense = len(ids) > 0 and ids[-1] - ids[0] < rating_ids.DENSE_SPAN * len(ids)
    assert (lookup._place is not None) == dense  # both ways taken by these cases


def test_random_ids_either_way(monkeypatch):
    rng = np.random.default_rng(0)
    ids = sorted(set(rng.integers(100, 400, 200).tolist()))
    wanted = rng.integers(0, 500, 2_000).tolist()
    dense = _lookup(ids).index(pa.chunked_array([pa.array(wanted, pa.int64())])).to_pylist()
    monkeypatch.setattr(rating_ids, "DENSE_SPAN", 0)  # binary search only
    sparse = _lookup(ids).index(pa.chunked_array([pa.array(wanted, pa.int64())])).to_pylist()
    assert dense == sparse == _searched(ids, wanted)
