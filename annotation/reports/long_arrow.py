"""The long format as Arrow record batches (LONG_SCHEMA), for Parquet: ratings read with ids, named here.

PostgreSQL reads each rating with its assignment only, as ids; the item's external id, the
output's position and system, the rater's name, the criterion's kind and the shown position are
looked up in Arrow from small per-study tables. Joining those in SQL and writing their text for
every row was half of PostgreSQL's work per row of an export (1.1 s instead of 2.0 s of its CPU
at a million ratings). The rows and their order are those of `ratings.long_sql`.
"""

from __future__ import annotations

import json
import re
from typing import Callable, Iterator

import numpy as np
import psycopg
import pyarrow as pa
import pyarrow.compute as pc

from annotation.models import Assignment, Study
from annotation.reports import parallel_copy
from annotation.reports.ratings import (_A, _I, _O, _R, _U, _VALUE_TEXT, LONG_NAMES, LONG_SCHEMA, _arrow_table,
                                        _long_parts, _range_where, arrow_batches, copy_statement)

# (name, SQL, type), one row per rating of a submitted assignment (one with nulls for an assignment
# without ratings), in long_sql's order.
_ID_COLUMNS = (
    ("item_id", "a.item_id", pa.int64()),
    ("output_id", "r.output_id", pa.int64()),
    ("rater_id", "a.rater_id", pa.int64()),
    ("criterion", "r.criterion", pa.string()),
    ("raw_value", _VALUE_TEXT, pa.string()),  # the value, or a highlight criterion's spans, as text
    ("score", "r.score", pa.float64()),
    ("reasoning", "r.reasoning", pa.string()),
    ("ignored", "a.ignored", pa.bool_()),
    ("ignore_reason", "a.ignore_reason", pa.string()),
    ("comment", "a.comment", pa.string()),
    ("time_on_task_ms", "a.time_on_task_ms", pa.int64()),
    ("permutation", "a.permutation::text", pa.string()),
    ("is_attention_check", "a.is_attention_check", pa.bool_()),
    ("submitted_at", "a.submitted_at", pa.timestamp("us", tz="UTC")),
)
_ID_SCHEMA = pa.schema([(name, kind) for name, _, kind in _ID_COLUMNS])


def _ids_sql(study: Study, id_range: tuple[int, int] | None = None, columns=_ID_COLUMNS) -> tuple[str, list]:
    params: list = [study.pk, Assignment.Status.SUBMITTED]
    where = _range_where(params, id_range=id_range)
    cols = ", ".join(sql for _, sql, _ in columns)
    return (f"SELECT {cols} FROM {_A} a LEFT JOIN {_R} r ON r.assignment_id = a.id"
            f" WHERE a.study_id = %s AND a.status = %s{where} ORDER BY a.id, r.output_id, r.criterion"), params


class _Names:
    """The study's ids -> names, read once per export: items, outputs, raters, criterion kinds;
    `read` reads a query into a table (default: on Django's connection)."""

    def __init__(self, study: Study, read: Reader | None = None):
        self.items = _Lookup(f"SELECT id, external_id FROM {_I} WHERE study_id = %s ORDER BY id", [study.pk],
                             read=read)
        self.outputs = _Lookup(f"SELECT o.id, o.system, o.position FROM {_O} o JOIN {_I} i ON i.id = o.item_id"
                               " WHERE i.study_id = %s ORDER BY o.id", [study.pk], extra=pa.int16(), read=read)
        # Users with an assignment here: one probe of the (study, rater) index per user, where a join
        # from the assignments read all of them (0.5 s of PostgreSQL's CPU at 2M assignments).
        self.raters = _Lookup(f"SELECT u.id, u.username FROM {_U} u WHERE u.id IN"
                              f" (SELECT a.rater_id FROM {_A} a WHERE a.study_id = %s) ORDER BY u.id", [study.pk],
                              read=read)
        criteria = study.rubric_version.criteria
        self.kind_keys = pa.array([c["key"] for c in criteria], pa.string())
        self.kinds = pa.array([c["kind"] for c in criteria], pa.string())

    def long_table(self, ids: pa.Table) -> pa.Table:
        item = self.items.index(ids["item_id"])
        output = self.outputs.index(ids["output_id"])
        position = pc.take(self.outputs.extra, output)
        kind = pc.take(self.kinds, pc.index_in(ids["criterion"], value_set=self.kind_keys))
        spans = pc.fill_null(pc.equal(kind, "spans"), False)  # a criterion the rubric no longer has: a value
        no_value = pa.nulls(len(ids), pa.string())
        columns = {
            "item": pc.take(self.items.names, item),
            "output": position,
            "system": pc.take(self.outputs.names, output),
            "rater": pc.take(self.raters.names, self.raters.index(ids["rater_id"])),
            "criterion": ids["criterion"],
            "criterion_kind": kind,
            "value": pc.if_else(spans, no_value, ids["raw_value"]),
            "score": ids["score"],
            "reasoning": ids["reasoning"],
            "spans": pc.if_else(spans, ids["raw_value"], no_value),
            "ignored": ids["ignored"],
            "ignore_reason": ids["ignore_reason"],
            "comment": ids["comment"],
            "time_on_task_ms": ids["time_on_task_ms"],
            "shown_position": shown_positions(ids["permutation"], position),
            "is_attention_check": ids["is_attention_check"],
            "submitted_at": ids["submitted_at"],
        }
        return pa.Table.from_arrays([columns[name] for name in LONG_NAMES], schema=LONG_SCHEMA)


Reader = Callable[[str, list, pa.Schema], pa.Table]  # (SELECT, parameters, schema) -> its rows


def _read_here(sql: str, params: list, schema: pa.Schema) -> pa.Table:
    """A query's rows on Django's connection."""
    return pa.Table.from_batches(list(arrow_batches(sql, params, schema)), schema=schema)


def _reader_on(conn: psycopg.Connection) -> Reader:
    """Reads on one of parallel_copy's snapshot connections."""
    def read(sql: str, params: list, schema: pa.Schema) -> pa.Table:
        return _arrow_table(b"".join(parallel_copy.copy_bytes(conn, (copy_statement(sql), params))), schema)
    return read


DENSE_SPAN = 8  # _Lookup: slots an id at most in its table of places (8 bytes each)


class _Lookup:
    """Sorted ids with their names (and a number, when `extra` types one), read with COPY:
    index() finds ids' places, null where an id is null or unknown."""

    def __init__(self, sql: str, params: list, *, extra: pa.DataType | None = None, read: Reader | None = None):
        fields = [("id", pa.int64()), ("name", pa.string())] + ([("extra", extra)] if extra else [])
        schema = pa.schema(fields)
        table = (read or _read_here)(sql, params, schema)
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


def _per_assignment(sql: str) -> bool:
    """Whether a column reads the assignment alone (every rating row of the assignment repeats it)."""
    return re.search(r"\br\.", sql) is None


def _assignments_sql(study: Study, id_range: tuple[int, int], columns) -> tuple[str, list]:
    """The assignments of a range (their own columns, once each), in id order."""
    params: list = [study.pk, Assignment.Status.SUBMITTED]
    where = "a.study_id = %s AND a.status = %s" + _range_where(params, id_range=id_range)
    per_assignment = ", ".join(sql for _, sql, _ in columns if _per_assignment(sql))
    return f"SELECT a.id, {per_assignment} FROM {_A} a WHERE {where} ORDER BY a.id", params


def _ratings_sql(study: Study, assignment_ids: np.ndarray, columns) -> tuple[str, list]:
    """The rating rows of a range's assignments (found in `assignment_ids`, sorted), in long_sql's order.

    Where the range's ids are dense (most ids from the first to the last are this study's submitted
    assignments), the ratings are read alone, walking rating_unique from the first id to the last:
    half of PostgreSQL's CPU of a join that looks each assignment up and re-sorts its ratings
    (0.5 instead of 1.0 s a million ratings). Ratings of other assignments in between are dropped
    by `_joined`. Where the ids are sparse (studies whose assignments interleave), the join with
    the study's assignments reads only theirs."""
    per_rating = ", ".join(sql for _, sql, _ in columns if not _per_assignment(sql))
    lo, hi = int(assignment_ids[0]), int(assignment_ids[-1])
    order = "ORDER BY r.assignment_id, r.output_id, r.criterion"
    if 2 * len(assignment_ids) >= hi - lo + 1:
        return (f"SELECT r.assignment_id, {per_rating} FROM {_R} r"
                f" WHERE r.assignment_id >= %s AND r.assignment_id <= %s {order}"), [lo, hi]
    params: list = [study.pk, Assignment.Status.SUBMITTED]
    where = "a.study_id = %s AND a.status = %s" + _range_where(params, id_range=(lo, hi + 1))
    return (f"SELECT a.id, {per_rating} FROM {_A} a LEFT JOIN {_R} r ON r.assignment_id = a.id"
            f" WHERE {where} ORDER BY a.id, r.output_id, r.criterion"), params


def _split_schemas(columns) -> list[pa.Schema]:
    """The schemas of the two reads of a range: its rating rows, its assignments."""
    key = [("assignment_id", pa.int64())]
    return [pa.schema(key + [(name, kind) for name, sql, kind in columns if not _per_assignment(sql)]),
            pa.schema(key + [(name, kind) for name, sql, kind in columns if _per_assignment(sql)])]


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
    return pa.table({name: ratings[name] if not _per_assignment(sql) else pc.take(assignments[name], at)
                     for name, sql, _ in columns})


def range_job(study: Study, id_range: tuple[int, int], columns, combine=None) -> parallel_copy.Job:
    """A range read on one snapshot connection: its assignments, then their ratings, joined by
    `combine(ratings, assignments)` (default: `_joined` on `columns`, long_sql's rows)."""
    rating_schema, assignment_schema = _split_schemas(columns)
    if combine is None:
        def combine(ratings: pa.Table, assignments: pa.Table) -> pa.Table:
            return _joined(ratings, assignments, columns)

    def read(conn: psycopg.Connection):
        reader = _reader_on(conn)
        assignments = reader(*_assignments_sql(study, id_range, columns), assignment_schema)
        ids = assignments["assignment_id"].to_numpy()
        if not len(ids):
            return combine(rating_schema.empty_table(), assignments)
        return combine(reader(*_ratings_sql(study, ids, columns), rating_schema), assignments)
    return read


def id_tables(study: Study, columns=_ID_COLUMNS) -> Iterator[tuple[_Names, pa.Table]]:
    """(the study's names, a table of `columns`) per batch of rows, in long_sql's order.

    On several connections, per assignment range: its assignments (once each), then their
    ratings, joined in Arrow on the worker thread (pyarrow releases the GIL). Writing the
    assignments' text (times, permutations, comments) on every rating row was half of
    PostgreSQL's work and of the bytes parsed. The names are read first, on the same snapshot."""
    for _, sql, _ in columns:
        if not _per_assignment(sql) and re.search(r"\ba\.", sql):
            raise ValueError(f"a column reads both a rating and its assignment: {sql}")
    parts = _long_parts(study, lambda r=None: r)
    if parts is None:  # one query on this connection (in a transaction: it sees what the names see)
        names = _Names(study)
        schema = pa.schema([(name, kind) for name, _, kind in columns])
        for batch in arrow_batches(*_ids_sql(study, columns=columns), schema):
            yield names, pa.Table.from_batches([batch])
        return
    jobs = [lambda conn: _Names(study, _reader_on(conn))] + [range_job(study, r, columns) for r in parts]
    read = parallel_copy.run_in_parallel(jobs)
    names = next(read)
    for table in read:
        yield names, table


def rating_batches(study: Study) -> Iterator[pa.RecordBatch]:
    """The long format as Arrow record batches (LONG_SCHEMA), in long_sql's order."""
    for names, ids in id_tables(study):
        yield from names.long_table(ids).to_batches()
