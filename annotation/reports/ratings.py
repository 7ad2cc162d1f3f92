"""Reads of a study's ratings in bulk: one SQL query, streamed, never an ORM object per row.

Three ways out of the same query, all with flat memory as studies grow:
- `iter_rating_rows`: tuples in chunks from a server-side cursor (Python consumers);
- `copy_ratings`: PostgreSQL COPY bytes (CSV, or one JSON object per line) for downloads;
- `long_arrow.rating_batches`: Arrow record batches (the same rows read by id, named in Arrow).

The long format has one row per rating of a submitted assignment, in assignment order; a
submitted assignment without ratings (an item the rater ignored) appears once with an empty
criterion.
`shown_position` is the 1-based place at which the rater saw the output (its index in the
assignment's stored permutation), so position effects can be measured.
"""

from __future__ import annotations

import contextlib
import contextvars
from dataclasses import dataclass
from typing import Iterator, Sequence

import pandas as pd
import pyarrow as pa
from django.db import connection

from annotation.models import Assignment, Study
from annotation.reports import parallel_copy
from annotation.reports.rating_changes import study_changes
from annotation.reports.rating_sql import (
    ASSIGNMENTS as _A, ITEMS as _I, OUTPUTS as _O, RATINGS as _R, USERS as _U, EXPORT_VALUE, EXPORT_VALUE_TEXT,
    copy_query, copy_statement, range_parts, range_where,
)
from annotation.reports.stats_ids import stats_table

CHUNK_ROWS = 20_000

# The output's index in the permutation, 1-based; NULL for item-level ratings. The permutation
# is unpacked once per assignment (PostgreSQL memoizes it per distinct permutation), not per rating.
_PERM_JOIN = ("LEFT JOIN LATERAL (SELECT array_agg(v::int ORDER BY ord) AS perm"
              " FROM jsonb_array_elements_text(a.permutation) WITH ORDINALITY AS t(v, ord)) p ON true")
_SHOWN = "array_position(p.perm, o.position::int)"


# CSV only: text that a spreadsheet would run as a formula (=, +, -, @ first) gets a leading
# single quote (OWASP CSV injection; annotation.datasets.spreadsheet does the same in Python).
# ascii() of the first character is the cheapest test PostgreSQL has (0 for '', NULL for NULL).
_FORMULA_CODES = ", ".join(str(ord(c)) for c in "=+-@")


def _spreadsheet_safe_sql(expr: str, guard: str | None = None) -> str:
    cond = (f"{guard} AND " if guard else "") + f"ascii({expr}) IN ({_FORMULA_CODES})"
    return f"CASE WHEN {cond} THEN '''' || {expr} ELSE {expr} END"


@dataclass(frozen=True)
class Column:
    name: str
    sql: str          # expression for Parquet (parsed from COPY CSV), Python readers and CSV (text-friendly)
    arrow: pa.DataType
    json_sql: str | None = None  # expression inside the JSONL object, when it differs
    csv_sql: str | None = None   # expression in the CSV download, when it differs (neutralised free text)


def _text(name: str, sql: str) -> Column:
    """A column of free text from raters, judges or uploads: neutralised in CSV, raw elsewhere."""
    return Column(name, sql, pa.string(), csv_sql=_spreadsheet_safe_sql(sql))


_VALUE_SQL = f"CASE WHEN k.kind = 'spans' THEN NULL ELSE {EXPORT_VALUE_TEXT} END"
_IS_JSON_STRING = "jsonb_typeof(r.value) = 'string'"

LONG_COLUMNS: tuple[Column, ...] = (
    _text("item", "i.external_id"),
    Column("output", "o.position", pa.int16()),
    _text("system", "o.system"),
    _text("rater", "u.username"),
    Column("criterion", "r.criterion", pa.string()),
    Column("criterion_kind", "k.kind", pa.string()),
    # A value is free text when it is a JSON string (text answers, labels); numbers stay numbers.
    Column("value", _VALUE_SQL, pa.string(), f"CASE WHEN k.kind = 'spans' THEN NULL ELSE {EXPORT_VALUE} END",
           f"CASE WHEN k.kind = 'spans' THEN NULL ELSE "
           f"{_spreadsheet_safe_sql(EXPORT_VALUE_TEXT, guard=_IS_JSON_STRING)} END"),
    Column("score", "r.score", pa.float64()),
    _text("reasoning", "r.reasoning"),
    Column("spans", "CASE WHEN k.kind = 'spans' THEN r.value::text END", pa.string(),
           "CASE WHEN k.kind = 'spans' THEN r.value END"),
    # Booleans in the CSV as true/false (bool::text; COPY itself writes t/f).
    Column("ignored", "a.ignored", pa.bool_(), csv_sql="a.ignored::text"),
    _text("ignore_reason", "a.ignore_reason"),
    _text("comment", "a.comment"),
    Column("time_on_task_ms", "a.time_on_task_ms", pa.int64()),
    Column("shown_position", f"{_SHOWN}::smallint", pa.int16()),
    Column("is_attention_check", "a.is_attention_check", pa.bool_(), csv_sql="a.is_attention_check::text"),
    Column("submitted_at", "a.submitted_at", pa.timestamp("us", tz="UTC")),
    # Active comparisons (annotation.services.sampling_policy): how the pair was drawn and its probability,
    # so that an estimate can be reweighted outside Concord; null under the uniform design.
    Column("sampling", "NULLIF(a.sampling, '')", pa.string()),
    Column("sampling_probability", "a.sampling_probability", pa.float64()),
)
LONG_NAMES = [c.name for c in LONG_COLUMNS]
LONG_SCHEMA = pa.schema([(c.name, c.arrow) for c in LONG_COLUMNS])


def _kinds_join(study: Study) -> tuple[str, list]:
    """A VALUES list criterion key -> kind from the study's pinned rubric."""
    criteria = study.rubric_version.criteria
    rows = ", ".join(["(%s, %s)"] * len(criteria)) or "(NULL, NULL)"
    params: list = [v for c in criteria for v in (c["key"], c["kind"])]
    # A per-step rating's criterion is <key>@<step> (annotation.step_questions): its kind is the key's.
    return f"LEFT JOIN (VALUES {rows}) AS k(key, kind) ON k.key = split_part(r.criterion, '@', 1)", params


def _long_from(study: Study, *, item_range: tuple[int, int] | None = None,
               id_range: tuple[int, int] | None = None) -> tuple[str, list]:
    kinds, params = _kinds_join(study)
    where = "a.study_id = %s AND a.status = %s"
    params += [study.pk, Assignment.Status.SUBMITTED]
    where += range_where(params, item_range=item_range, id_range=id_range)
    # Assignment order, then the rating_unique index's order: no full sort of the ratings.
    # The permutation joins the assignment before its ratings: unpacked (or found in the memo) once
    # per assignment rather than once per rating.
    sql = (f" FROM {_A} a {_PERM_JOIN} JOIN {_I} i ON i.id = a.item_id JOIN {_U} u ON u.id = a.rater_id"
           f" LEFT JOIN {_R} r ON r.assignment_id = a.id LEFT JOIN {_O} o ON o.id = r.output_id {kinds}"
           f" WHERE {where} ORDER BY a.id, r.output_id, r.criterion")
    return sql, params


def long_sql(study: Study, *, item_range: tuple[int, int] | None = None, id_range: tuple[int, int] | None = None,
             spreadsheet_safe: bool = False) -> tuple[str, list]:
    """SELECT of the long format (LONG_COLUMNS) for a study's submitted ratings; with
    spreadsheet_safe, free text that starts like a formula is neutralised (CSV downloads)."""
    body, params = _long_from(study, item_range=item_range, id_range=id_range)
    cols = ", ".join(f"{(c.csv_sql or c.sql) if spreadsheet_safe else c.sql} AS {c.name}" for c in LONG_COLUMNS)
    return f"SELECT {cols}{body}", params


def long_json_sql(study: Study, *, id_range: tuple[int, int] | None = None) -> tuple[str, list]:
    """SELECT of one JSON object per row (keys in LONG_COLUMNS order; value/spans nested JSON)."""
    body, params = _long_from(study, id_range=id_range)
    pairs = ", ".join(f"'{c.name}', {c.json_sql or c.sql}" for c in LONG_COLUMNS)
    return f"SELECT json_build_object({pairs})::text{body}", params


def count_rating_rows(study: Study) -> int:
    """Rows of the long format (ratings, plus one per submitted assignment without ratings)."""
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT count(*) FROM {_A} a LEFT JOIN {_R} r ON r.assignment_id = a.id"
            " WHERE a.study_id = %s AND a.status = %s", [study.pk, Assignment.Status.SUBMITTED])
        return int(cursor.fetchone()[0])


def count_item_rows(study: Study) -> int:
    """Rows of the items downloads: one per output, one per item without outputs."""
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT count(*) FROM {_I} i LEFT JOIN {_O} o ON o.item_id = i.id WHERE i.study_id = %s",
                       [study.pk])
        return int(cursor.fetchone()[0])


def iter_rating_rows(study: Study, *, chunk_size: int = CHUNK_ROWS) -> Iterator[list[tuple]]:
    """The long format as lists of tuples (LONG_NAMES order), fetched from a server-side cursor."""
    sql, params = long_sql(study)
    # chunked_cursor() is Django's named (server-side) cursor, the one QuerySet.iterator() uses.
    cursor = connection.chunked_cursor()
    try:
        cursor.execute(sql, params)
        while rows := cursor.fetchmany(chunk_size):
            yield rows
    finally:
        cursor.close()


def copy_ratings(study: Study, *, fmt: str = "csv") -> Iterator[bytes]:
    """The long format as CSV (with header; free text neutralised for spreadsheets) or JSON
    lines (raw), straight from PostgreSQL."""
    if fmt == "csv":
        def build(r=None):
            return long_sql(study, id_range=r, spreadsheet_safe=True)
        header, copy_fmt = LONG_NAMES, "csv"
    elif fmt == "jsonl":
        def build(r=None):
            return long_json_sql(study, id_range=r)
        header, copy_fmt = None, "lines"
    else:
        raise ValueError(f"unknown format {fmt!r}")
    parts = range_parts(study, build)
    if parts is None:
        return copy_query(*build(), csv_header=header, fmt=copy_fmt)
    return _joined_parts(parts, header, copy_fmt)


def _joined_parts(parts: list[tuple[str, list]], header: Sequence[str] | None, fmt: str) -> Iterator[bytes]:
    if header is not None:
        yield (",".join(header) + "\n").encode()
    statements = [(copy_statement(sql, fmt), params) for sql, params in parts]
    for chunks in parallel_copy.copy_in_parallel(statements, unescape=fmt == "lines"):
        yield from chunks


CATEGORICAL_STATS_COLUMNS = ("system", "criterion", "label")


def stats_frame(study: Study, criteria: Sequence[str], *,
                item_range: tuple[int, int] | None = None) -> pd.DataFrame:
    """One row per rating of `criteria` in submitted, not ignored assignments (STATS_SCHEMA),
    optionally only of items with ids in the half-open `item_range`.

    `item` is the item's external id and `gold` its gold answer for the criterion as text (both
    categoricals); `label` is the value as text (for choices); `seconds` the assignment's time on task.
    """
    kept = _kept_frames.get()
    key = (study.pk, tuple(criteria), item_range)
    if kept is not None and key in kept:
        return kept[key]
    table = stats_table(study, criteria, item_range=item_range)
    # Few distinct values, many rows: as categoricals, the report's groupbys and filters on them
    # work on integer codes instead of strings.
    for name in CATEGORICAL_STATS_COLUMNS:
        i = table.schema.get_field_index(name)
        table = table.set_column(i, name, table.column(name).dictionary_encode())
    # Each column's Arrow memory is freed once converted: the table and the frame are never held whole together.
    frame = table.to_pandas(split_blocks=True, self_destruct=True)
    del table
    # pyarrow's allocator keeps what the read freed (0.77 GB at ten million ratings); the report's
    # arrays come from numpy's, so that memory would only sit on top of their peak.
    pa.default_memory_pool().release_unused()
    if kept is not None:
        kept[key] = frame
    return frame


_kept_frames: contextvars.ContextVar[dict | None] = contextvars.ContextVar("concord_kept_frames", default=None)


@contextlib.contextmanager
def frames_kept() -> Iterator[None]:
    """Within the block, `stats_frame` reads each (study, criteria) once and hands every caller the
    same frame, which callers must not change (`add_analysis_value` returns a new one). The report's
    sections from other apps read the same ratings: at ten million that is ten seconds a section."""
    token = _kept_frames.set({})
    try:
        yield
    finally:
        _kept_frames.reset(token)


def rater_names(study: Study) -> dict[int, str]:
    """rater_id -> username for everyone with a submitted assignment in the study."""
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT DISTINCT u.id, u.username FROM {_A} a JOIN {_U} u ON u.id = a.rater_id"
                       " WHERE a.study_id = %s AND a.status = %s", [study.pk, Assignment.Status.SUBMITTED])
        return dict(cursor.fetchall())


def item_id_ranges(study: Study, *, items_per_chunk: int) -> list[tuple[int, int]]:
    """Half-open item id ranges of about `items_per_chunk` items each, for chunked processing."""
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT id FROM {_I} WHERE study_id = %s ORDER BY id", [study.pk])
        ids = [row[0] for row in cursor.fetchall()]
    return [(ids[k], ids[k + items_per_chunk] if k + items_per_chunk < len(ids) else ids[-1] + 1)
            for k in range(0, len(ids), items_per_chunk)]


def ratings_fingerprint(study: Study) -> str:
    """Changes whenever a rating of the study is added, changed or removed, or an assignment submitted,
    changed or removed (cache keys): the triggers' change count, a few rows per block, not a read of
    every rating."""
    return f"{study.pk}:{study.created_at.timestamp()}:{study_changes(study)}"
