"""The long format as Arrow record batches (LONG_SCHEMA), for Parquet: ratings read with ids, named here.

PostgreSQL reads each rating with its assignment only, as ids; the item's external id, the
output's position and system, the rater's name, the criterion's kind and the shown position are
looked up in Arrow from small per-study tables. Joining those in SQL and writing their text for
every row was half of PostgreSQL's work per row of an export (1.1 s instead of 2.0 s of its CPU
at a million ratings). The rows and their order are those of `ratings.long_sql`.
"""

from __future__ import annotations

import re
from typing import Iterator

import pyarrow as pa
import pyarrow.compute as pc

from annotation.models import Assignment, Study
from annotation.reports import parallel_copy
from annotation.reports.rating_ids import Lookup, Reader, per_assignment, range_job, reader_on, shown_positions
from annotation.reports.rating_sql import (
    ASSIGNMENTS as _A, ITEMS as _I, OUTPUTS as _O, RATINGS as _R, USERS as _U, EXPORT_VALUE_TEXT, arrow_batches,
    range_parts, range_where,
)
from annotation.reports.ratings import LONG_NAMES, LONG_SCHEMA

# (name, SQL, type), one row per rating of a submitted assignment (one with nulls for an assignment
# without ratings), in long_sql's order.
_ID_COLUMNS = (
    ("item_id", "a.item_id", pa.int64()),
    ("output_id", "r.output_id", pa.int64()),
    ("rater_id", "a.rater_id", pa.int64()),
    ("criterion", "r.criterion", pa.string()),
    ("raw_value", EXPORT_VALUE_TEXT, pa.string()),  # the value, or a highlight criterion's spans, as text
    ("score", "r.score", pa.float64()),
    ("reasoning", "r.reasoning", pa.string()),
    ("ignored", "a.ignored", pa.bool_()),
    ("ignore_reason", "a.ignore_reason", pa.string()),
    ("comment", "a.comment", pa.string()),
    ("time_on_task_ms", "a.time_on_task_ms", pa.int64()),
    ("permutation", "a.permutation::text", pa.string()),
    ("is_attention_check", "a.is_attention_check", pa.bool_()),
    ("submitted_at", "a.submitted_at", pa.timestamp("us", tz="UTC")),
    ("sampling", "NULLIF(a.sampling, '')", pa.string()),
    ("sampling_probability", "a.sampling_probability", pa.float64()),
)
_ID_SCHEMA = pa.schema([(name, kind) for name, _, kind in _ID_COLUMNS])


def _ids_sql(study: Study, id_range: tuple[int, int] | None = None, columns=_ID_COLUMNS) -> tuple[str, list]:
    params: list = [study.pk, Assignment.Status.SUBMITTED]
    where = range_where(params, id_range=id_range)
    cols = ", ".join(sql for _, sql, _ in columns)
    return (f"SELECT {cols} FROM {_A} a LEFT JOIN {_R} r ON r.assignment_id = a.id"
            f" WHERE a.study_id = %s AND a.status = %s{where} ORDER BY a.id, r.output_id, r.criterion"), params


def criterion_keys(criterion):
    """The rubric key of each rating's criterion: a per-step one's `<key>@<step>` read as `<key>`
    (most studies have none: then the column as it is, without a regex over every row)."""
    if not pc.any(pc.match_substring(criterion, "@")).as_py():
        return criterion
    return pc.replace_substring_regex(criterion, pattern="@.*$", replacement="")


class _Names:
    """The study's ids -> names, read once per export: items, outputs, raters, criterion kinds;
    `read` reads a query into a table (default: on Django's connection)."""

    def __init__(self, study: Study, read: Reader | None = None):
        self.items = Lookup(f"SELECT id, external_id FROM {_I} WHERE study_id = %s ORDER BY id", [study.pk],
                             read=read)
        self.outputs = Lookup(f"SELECT o.id, o.system, o.position FROM {_O} o JOIN {_I} i ON i.id = o.item_id"
                               " WHERE i.study_id = %s ORDER BY o.id", [study.pk], extra=pa.int16(), read=read)
        # Users with an assignment here: one probe of the (study, rater) index per user, where a join
        # from the assignments read all of them (0.5 s of PostgreSQL's CPU at 2M assignments).
        self.raters = Lookup(f"SELECT u.id, u.username FROM {_U} u WHERE u.id IN"
                              f" (SELECT a.rater_id FROM {_A} a WHERE a.study_id = %s) ORDER BY u.id", [study.pk],
                              read=read)
        criteria = study.rubric_version.criteria
        self.kind_keys = pa.array([c["key"] for c in criteria], pa.string())
        self.kinds = pa.array([c["kind"] for c in criteria], pa.string())

    def long_table(self, ids: pa.Table) -> pa.Table:
        item = self.items.index(ids["item_id"])
        output = self.outputs.index(ids["output_id"])
        position = pc.take(self.outputs.extra, output)
        kind = pc.take(self.kinds, pc.index_in(criterion_keys(ids["criterion"]), value_set=self.kind_keys))
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
            "sampling": ids["sampling"],
            "sampling_probability": ids["sampling_probability"],
        }
        return pa.Table.from_arrays([columns[name] for name in LONG_NAMES], schema=LONG_SCHEMA)


def id_tables(study: Study, columns=_ID_COLUMNS) -> Iterator[tuple[_Names, pa.Table]]:
    """(the study's names, a table of `columns`) per batch of rows, in long_sql's order.

    On several connections, per assignment range: its assignments (once each), then their
    ratings, joined in Arrow on the worker thread (pyarrow releases the GIL). Writing the
    assignments' text (times, permutations, comments) on every rating row was half of
    PostgreSQL's work and of the bytes parsed. The names are read first, on the same snapshot."""
    for _, sql, _ in columns:
        if not per_assignment(sql) and re.search(r"\ba\.", sql):
            raise ValueError(f"a column reads both a rating and its assignment: {sql}")
    parts = range_parts(study, lambda r=None: r)
    if parts is None:  # one query on this connection (in a transaction: it sees what the names see)
        names = _Names(study)
        schema = pa.schema([(name, kind) for name, _, kind in columns])
        for batch in arrow_batches(*_ids_sql(study, columns=columns), schema):
            yield names, pa.Table.from_batches([batch])
        return
    jobs = [lambda conn: _Names(study, reader_on(conn))] + [range_job(study, r, columns) for r in parts]
    read = parallel_copy.run_in_parallel(jobs)
    names = next(read)
    for table in read:
        yield names, table


def rating_batches(study: Study) -> Iterator[pa.RecordBatch]:
    """The long format as Arrow record batches (LONG_SCHEMA), in long_sql's order."""
    for names, ids in id_tables(study):
        yield from names.long_table(ids).to_batches()
