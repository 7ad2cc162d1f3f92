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
from typing import Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from django.db import connection

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
    """The study's ids -> names, read once per export: items, outputs, raters, criterion kinds."""

    def __init__(self, study: Study):
        self.items = _Lookup(f"SELECT id, external_id FROM {_I} WHERE study_id = %s ORDER BY id", [study.pk])
        self.outputs = _Lookup(f"SELECT o.id, o.system, o.position FROM {_O} o JOIN {_I} i ON i.id = o.item_id"
                               " WHERE i.study_id = %s ORDER BY o.id", [study.pk], extra=pa.int16())
        self.raters = _Lookup(f"SELECT DISTINCT u.id, u.username FROM {_A} a JOIN {_U} u ON u.id = a.rater_id"
                              " WHERE a.study_id = %s ORDER BY u.id", [study.pk])
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


class _Lookup:
    """Sorted ids with their names (and a number, when `extra` types one), read with COPY:
    index() finds ids' places, null where an id is null or unknown."""

    def __init__(self, sql: str, params: list, *, extra: pa.DataType | None = None):
        fields = [("id", pa.int64()), ("name", pa.string())] + ([("extra", extra)] if extra else [])
        schema = pa.schema(fields)
        table = pa.Table.from_batches(list(arrow_batches(sql, params, schema)), schema=schema)
        self.ids = table["id"].to_numpy()
        self.names = table["name"].combine_chunks()
        self.extra = table["extra"].combine_chunks() if extra else None

    def index(self, ids: pa.ChunkedArray) -> pa.Array:
        values = ids.combine_chunks()
        wanted = values.fill_null(0).to_numpy(zero_copy_only=False)
        found = np.minimum(np.searchsorted(self.ids, wanted), max(len(self.ids) - 1, 0))
        known = values.is_valid().to_numpy(zero_copy_only=False)
        known &= (self.ids[found] == wanted) if len(self.ids) else False
        return pa.array(found, pa.int64(), mask=~known)


def shown_positions(permutations: pa.ChunkedArray, positions: pa.Array) -> pa.Array:
    """Each row's 1-based place of its output's position in its assignment's permutation (a JSON
    list of positions), null where the row has no output or the permutation does not hold it. A
    study has few distinct permutations: each is parsed once."""
    encoded = permutations.combine_chunks().dictionary_encode()
    orders = [json.loads(text) for text in encoded.dictionary.to_pylist()]
    width = max((max(order, default=-1) for order in orders), default=-1) + 1
    place = np.zeros((len(orders), max(width, 1)), dtype=np.int64)  # 0: not shown
    for row, order in enumerate(orders):
        for shown, position in enumerate(order, start=1):
            if 0 <= position < width and place[row, position] == 0:
                place[row, position] = shown
    which = encoded.indices.fill_null(0).to_numpy(zero_copy_only=False)
    pos = positions.fill_null(-1).to_numpy(zero_copy_only=False)
    inside = (pos >= 0) & (pos < place.shape[1])
    shown = np.zeros(len(pos), dtype=np.int64)
    shown[inside] = place[which[inside], pos[inside]]
    return pa.array(shown, pa.int16(), mask=shown == 0)


def _per_assignment(sql: str) -> bool:
    """Whether a column reads the assignment alone (every rating row of the assignment repeats it)."""
    return re.search(r"\br\.", sql) is None


def _split_sql(study: Study, id_range: tuple[int, int], columns) -> list[tuple[str, list]]:
    """Two reads of an assignment range: its rating rows (long_sql's rows, with the assignment's
    id) and its assignments, once each."""
    params: list = [study.pk, Assignment.Status.SUBMITTED]
    where = "a.study_id = %s AND a.status = %s" + _range_where(params, id_range=id_range)
    per_rating = ", ".join(sql for _, sql, _ in columns if not _per_assignment(sql))
    per_assignment = ", ".join(sql for _, sql, _ in columns if _per_assignment(sql))
    return [(f"SELECT a.id, {per_rating} FROM {_A} a LEFT JOIN {_R} r ON r.assignment_id = a.id"
             f" WHERE {where} ORDER BY a.id, r.output_id, r.criterion", params),
            (f"SELECT a.id, {per_assignment} FROM {_A} a WHERE {where} ORDER BY a.id", list(params))]


def _split_schemas(columns) -> list[pa.Schema]:
    key = [("assignment_id", pa.int64())]
    return [pa.schema(key + [(name, kind) for name, sql, kind in columns if not _per_assignment(sql)]),
            pa.schema(key + [(name, kind) for name, sql, kind in columns if _per_assignment(sql)])]


def _joined(ratings: pa.Table, assignments: pa.Table, columns) -> pa.Table:
    """The rating rows with their assignments' columns, in `columns` order."""
    ids = assignments["assignment_id"].to_numpy()
    wanted = ratings["assignment_id"].to_numpy()
    at = np.minimum(np.searchsorted(ids, wanted), max(len(ids) - 1, 0))
    if len(wanted) and not (len(ids) and np.array_equal(ids[at], wanted)):  # one snapshot: cannot happen
        raise RuntimeError("a rating row without its assignment in the same read")
    at = pa.array(at)
    return pa.table({name: ratings[name] if not _per_assignment(sql) else pc.take(assignments[name], at)
                     for name, sql, _ in columns})


def id_tables(study: Study, columns=_ID_COLUMNS) -> Iterator[tuple[_Names, pa.Table]]:
    """(the study's names, a table of `columns`) per batch of rows, in long_sql's order.

    On several connections, each assignment range is read twice: its rating rows, and its
    assignments once each (joined here). Writing the assignments' text (times, permutations,
    comments) on every rating row was half of PostgreSQL's work and of the bytes parsed."""
    parts = _long_parts(study, lambda r=None: _split_sql(study, r, columns))
    if parts is None:  # one query on this connection (in a transaction: it sees what the names see)
        names = _Names(study)
        schema = pa.schema([(name, kind) for name, _, kind in columns])
        for batch in arrow_batches(*_ids_sql(study, columns=columns), schema):
            yield names, pa.Table.from_batches([batch])
        return
    schemas = _split_schemas(columns)
    statements = [(copy_statement(sql), params) for pair in parts for sql, params in pair]
    parsers = [lambda data, schema=schema: _arrow_table(data, schema) for _ in parts for schema in schemas]
    names = None  # read once the ranges' snapshot is taken, so that they know every id it holds
    read = parallel_copy.copy_in_parallel(statements, parse=parsers)
    for ratings in read:
        names = names or _Names(study)
        yield names, _joined(ratings, next(read), columns)


def rating_batches(study: Study) -> Iterator[pa.RecordBatch]:
    """The long format as Arrow record batches (LONG_SCHEMA), in long_sql's order."""
    for names, ids in id_tables(study):
        yield from names.long_table(ids).to_batches()
