"""Ratings read as ids and named in Arrow: the study's ids -> names lookups, readers of a query on
Django's connection or on a parallel snapshot connection, shown positions from permutations, and
one assignment range's read (its assignments once each, then their ratings, joined on the worker
thread).

Shared by the exports' long format (long_arrow) and the statistics' read (stats_ids).
"""

from __future__ import annotations

import json
import re
from typing import Callable

import numpy as np
import psycopg
import pyarrow as pa
import pyarrow.compute as pc

from annotation.models import Assignment, Study
from annotation.reports import parallel_copy
from annotation.reports.rating_sql import (
    ASSIGNMENTS as _A, RATINGS as _R, arrow_batches, arrow_table, copy_statement, range_where,
)

Reader = Callable[[str, list, pa.Schema], pa.Table]  # (SELECT, parameters, schema) -> its rows


def read_here(sql: str, params: list, schema: pa.Schema) -> pa.Table:
    """A query's rows on Django's connection."""
    return pa.Table.from_batches(list(arrow_batches(sql, params, schema)), schema=schema)


def reader_on(conn: psycopg.Connection) -> Reader:
    """Reads on one of parallel_copy's snapshot connections."""
    def read(sql: str, params: list, schema: pa.Schema) -> pa.Table:
        return arrow_table(b"".join(parallel_copy.copy_bytes(conn, (copy_statement(sql), params))), schema)
    return read


DENSE_SPAN = 8  # Lookup: slots an id at most in its table of places (8 bytes each)


class Lookup:
    """Sorted ids with their names (and a number, when `extra` types one), read with COPY:
    index() finds ids' places, null where an id is null or unknown."""

    def __init__(self, sql: str, params: list, *, extra: pa.DataType | None = None, read: Reader | None = None):
        fields = [("id", pa.int64()), ("name", pa.string())] + ([("extra", extra)] if extra else [])
        schema = pa.schema(fields)
        table = (read or read_here)(sql, params, schema)
        self.ids = table["id"].to_numpy()
        self.names = table["name"].combine_chunks()
        self.extra = table["extra"].combine_chunks() if extra else None
        self._place: np.ndarray | None = None

    def index(self, ids: pa.ChunkedArray) -> pa.Array:
        values = ids.combine_chunks()
        wanted = values.fill_null(0).to_numpy(zero_copy_only=False)
        known = values.is_valid().to_numpy(zero_copy_only=False)
        place = self._places()
        if place is not None:  # one gather per id: a binary search each was 1.2 s at ten million
            at = wanted - self.ids[0]
            inside = (at >= 0) & (at < len(place))
            found = place[np.where(inside, at, 0)]
            known &= inside & (found >= 0)
            return pa.array(found, pa.int64(), mask=~known)
        found = np.minimum(np.searchsorted(self.ids, wanted), max(len(self.ids) - 1, 0))
        known &= (self.ids[found] == wanted) if len(self.ids) else False
        return pa.array(found, pa.int64(), mask=~known)

    def _places(self) -> np.ndarray | None:
        """Each id's place by the id's offset from the first, -1 for ids between that are not here; None
        where the ids are sparse (more than DENSE_SPAN slots an id: a study's own ids mostly are not)."""
        if self._place is None and len(self.ids) and self.ids[-1] - self.ids[0] < DENSE_SPAN * len(self.ids):
            self._place = np.full(int(self.ids[-1] - self.ids[0]) + 1, -1, dtype=np.int64)
            self._place[self.ids - self.ids[0]] = np.arange(len(self.ids))
        return self._place


def shown_positions(permutations: pa.ChunkedArray, positions: pa.Array) -> pa.Array:
    """Each row's 1-based place of its output's position in its assignment's permutation (a JSON
    list of positions), null where the row has no output or the permutation does not hold it. A
    study has few distinct permutations: each is parsed once."""
    encoded = permutations.combine_chunks().dictionary_encode()
    which = encoded.indices.fill_null(0).to_numpy(zero_copy_only=False)
    return shown_positions_coded(encoded.dictionary.to_pylist(), which, positions)


def shown_positions_coded(texts: list[str], which: np.ndarray, positions: pa.Array) -> pa.Array:
    """shown_positions of rows whose permutations are given as codes: row k's is texts[which[k]]."""
    orders = [json.loads(text) for text in texts]
    width = max((max(order, default=-1) for order in orders), default=-1) + 1
    place = np.zeros((len(orders), max(width, 1)), dtype=np.int64)  # 0: not shown
    for row, order in enumerate(orders):
        for shown, position in enumerate(order, start=1):
            if 0 <= position < width and place[row, position] == 0:
                place[row, position] = shown
    pos = positions.fill_null(-1).to_numpy(zero_copy_only=False)
    inside = (pos >= 0) & (pos < place.shape[1])
    shown = np.zeros(len(pos), dtype=np.int64)
    shown[inside] = place[which[inside], pos[inside]]
    return pa.array(shown, pa.int16(), mask=shown == 0)


def per_assignment(sql: str) -> bool:
    """Whether a column reads the assignment alone (every rating row of the assignment repeats it)."""
    return re.search(r"\br\.", sql) is None


def _assignments_sql(study: Study, id_range: tuple[int, int], columns) -> tuple[str, list]:
    """The assignments of a range (their own columns, once each), in id order."""
    params: list = [study.pk, Assignment.Status.SUBMITTED]
    where = "a.study_id = %s AND a.status = %s" + range_where(params, id_range=id_range)
    own = ", ".join(sql for _, sql, _ in columns if per_assignment(sql))
    return f"SELECT a.id, {own} FROM {_A} a WHERE {where} ORDER BY a.id", params


def _ratings_sql(study: Study, assignment_ids: np.ndarray, columns) -> tuple[str, list]:
    """The rating rows of a range's assignments (found in `assignment_ids`, sorted), in long_sql's order.

    Where the range's ids are dense (most ids from the first to the last are this study's submitted
    assignments), the ratings are read alone, walking rating_unique from the first id to the last:
    half of PostgreSQL's CPU of a join that looks each assignment up and re-sorts its ratings
    (0.5 instead of 1.0 s a million ratings). Ratings of other assignments in between are dropped
    by `_joined`. Where the ids are sparse (studies whose assignments interleave), the join with
    the study's assignments reads only theirs."""
    per_rating = ", ".join(sql for _, sql, _ in columns if not per_assignment(sql))
    lo, hi = int(assignment_ids[0]), int(assignment_ids[-1])
    order = "ORDER BY r.assignment_id, r.output_id, r.criterion"
    if 2 * len(assignment_ids) >= hi - lo + 1:
        return (f"SELECT r.assignment_id, {per_rating} FROM {_R} r"
                f" WHERE r.assignment_id >= %s AND r.assignment_id <= %s {order}"), [lo, hi]
    params: list = [study.pk, Assignment.Status.SUBMITTED]
    where = "a.study_id = %s AND a.status = %s" + range_where(params, id_range=(lo, hi + 1))
    return (f"SELECT a.id, {per_rating} FROM {_A} a LEFT JOIN {_R} r ON r.assignment_id = a.id"
            f" WHERE {where} ORDER BY a.id, r.output_id, r.criterion"), params


def _split_schemas(columns) -> list[pa.Schema]:
    """The schemas of the two reads of a range: its rating rows, its assignments."""
    key = [("assignment_id", pa.int64())]
    return [pa.schema(key + [(name, kind) for name, sql, kind in columns if not per_assignment(sql)]),
            pa.schema(key + [(name, kind) for name, sql, kind in columns if per_assignment(sql)])]


def _joined(ratings: pa.Table, assignments: pa.Table, columns) -> pa.Table:
    """The rating rows with their assignments' columns, in `columns` order, as long_sql's LEFT JOIN
    gives them: rows of assignments not in `assignments` dropped, an assignment without ratings
    as one row of nulls. Both tables are sorted by assignment id."""
    ids = assignments["assignment_id"].to_numpy()
    wanted = ratings["assignment_id"].to_numpy()
    at = np.minimum(np.searchsorted(ids, wanted), max(len(ids) - 1, 0))
    ours = (ids[at] == wanted) if len(ids) else np.zeros(len(wanted), dtype=bool)
    if not ours.all():
        ratings, at = ratings.filter(pa.array(ours)), at[ours]
    counts = np.bincount(at, minlength=len(ids))
    bare = counts == 0
    if bare.any():  # assignments without ratings: a row of nulls each, in id order
        rows = counts + bare
        place = np.arange(len(at)) + (np.cumsum(bare) - bare)[at]  # a rating moves down past earlier bare ones
        taken = np.full(int(rows.sum()), -1, dtype=np.int64)
        taken[place] = np.arange(len(at))
        ratings = ratings.take(pa.array(taken, mask=taken < 0))
        at = np.repeat(np.arange(len(ids)), rows)
    at = pa.array(at)
    return pa.table({name: ratings[name] if not per_assignment(sql) else pc.take(assignments[name], at)
                     for name, sql, _ in columns})


def range_job(study: Study, id_range: tuple[int, int], columns, combine=None) -> parallel_copy.Job:
    """A range read on one snapshot connection: its assignments, then their ratings, joined by
    `combine(ratings, assignments)` (default: `_joined` on `columns`, long_sql's rows)."""
    rating_schema, assignment_schema = _split_schemas(columns)
    if combine is None:
        def combine(ratings: pa.Table, assignments: pa.Table) -> pa.Table:
            return _joined(ratings, assignments, columns)

    def read(conn: psycopg.Connection):
        reader = reader_on(conn)
        assignments = reader(*_assignments_sql(study, id_range, columns), assignment_schema)
        ids = assignments["assignment_id"].to_numpy()
        if not len(ids):
            return combine(rating_schema.empty_table(), assignments)
        return combine(reader(*_ratings_sql(study, ids, columns), rating_schema), assignments)
    return read
