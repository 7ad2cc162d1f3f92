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
import io
import itertools
from dataclasses import dataclass
from typing import Iterable, Iterator, Sequence

import pandas as pd
import pyarrow as pa
import pyarrow.csv as pacsv
from django.db import connection

from annotation.models import Assignment, Item, Output, Rating, Study
from annotation.reports import parallel_copy
from annotation.reports.parallel_copy import copy_chunks
from annotation.reports.rating_changes import study_changes

CHUNK_ROWS = 20_000
# A bulk read's unit of parallel work, in assignments (x ratings each): smaller ranges cost more per
# row; the largest bounds memory (a reader holds up to workers + 1 ranges, 50k x 5 rows ~ 100 MB of JSON).
MIN_RANGE_ASSIGNMENTS, MAX_RANGE_ASSIGNMENTS = 5_000, 50_000
ARROW_BLOCK_BYTES = 4 << 20  # pyarrow parses COPY output in blocks of this size

_A, _R, _I, _O = (m._meta.db_table for m in (Assignment, Rating, Item, Output))
_U = Assignment._meta.get_field("rater").related_model._meta.db_table

# The output's index in the permutation, 1-based; NULL for item-level ratings. The permutation
# is unpacked once per assignment (PostgreSQL memoizes it per distinct permutation), not per rating.
_PERM_JOIN = ("LEFT JOIN LATERAL (SELECT array_agg(v::int ORDER BY ord) AS perm"
              " FROM jsonb_array_elements_text(a.permutation) WITH ORDINALITY AS t(v, ord)) p ON true")
_SHOWN = "array_position(p.perm, o.position::int)"
# Scalars as plain text (ACCEPT, not "ACCEPT"); lists and objects as JSON text.
_VALUE_TEXT = "(r.value #>> '{}')"


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


_VALUE_SQL = f"CASE WHEN k.kind = 'spans' THEN NULL ELSE {_VALUE_TEXT} END"
_IS_JSON_STRING = "jsonb_typeof(r.value) = 'string'"

LONG_COLUMNS: tuple[Column, ...] = (
    _text("item", "i.external_id"),
    Column("output", "o.position", pa.int16()),
    _text("system", "o.system"),
    _text("rater", "u.username"),
    Column("criterion", "r.criterion", pa.string()),
    Column("criterion_kind", "k.kind", pa.string()),
    # A value is free text when it is a JSON string (text answers, labels); numbers stay numbers.
    Column("value", _VALUE_SQL, pa.string(), "CASE WHEN k.kind = 'spans' THEN NULL ELSE r.value END",
           f"CASE WHEN k.kind = 'spans' THEN NULL ELSE "
           f"{_spreadsheet_safe_sql(_VALUE_TEXT, guard=_IS_JSON_STRING)} END"),
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
)
LONG_NAMES = [c.name for c in LONG_COLUMNS]
LONG_SCHEMA = pa.schema([(c.name, c.arrow) for c in LONG_COLUMNS])


def _kinds_join(study: Study) -> tuple[str, list]:
    """A VALUES list criterion key -> kind from the study's pinned rubric."""
    criteria = study.rubric_version.criteria
    rows = ", ".join(["(%s, %s)"] * len(criteria)) or "(NULL, NULL)"
    params: list = [v for c in criteria for v in (c["key"], c["kind"])]
    return f"LEFT JOIN (VALUES {rows}) AS k(key, kind) ON k.key = r.criterion", params


def _long_from(study: Study, *, item_range: tuple[int, int] | None = None,
               id_range: tuple[int, int] | None = None) -> tuple[str, list]:
    kinds, params = _kinds_join(study)
    where = "a.study_id = %s AND a.status = %s"
    params += [study.pk, Assignment.Status.SUBMITTED]
    where += _range_where(params, item_range=item_range, id_range=id_range)
    # Assignment order, then the rating_unique index's order: no full sort of the ratings.
    # The permutation joins the assignment before its ratings: unpacked (or found in the memo) once
    # per assignment rather than once per rating.
    sql = (f" FROM {_A} a {_PERM_JOIN} JOIN {_I} i ON i.id = a.item_id JOIN {_U} u ON u.id = a.rater_id"
           f" LEFT JOIN {_R} r ON r.assignment_id = a.id LEFT JOIN {_O} o ON o.id = r.output_id {kinds}"
           f" WHERE {where} ORDER BY a.id, r.output_id, r.criterion")
    return sql, params


def _range_where(params: list, *, item_range: tuple[int, int] | None = None,
                 id_range: tuple[int, int] | None = None) -> str:
    """SQL conditions for half-open ranges of item ids and assignment ids (params appended)."""
    where = ""
    if item_range is not None:
        where += " AND a.item_id >= %s AND a.item_id < %s"
        params += list(item_range)
    if id_range is not None:
        where += " AND a.id >= %s AND a.id < %s"
        params += list(id_range)
    return where


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


def copy_statement(sql: str, fmt: str = "csv") -> str:
    """`COPY (sql) TO STDOUT` as CSV, or "lines": a one-column query's text values one per line."""
    if fmt == "csv":
        return f"COPY ({sql}) TO STDOUT (FORMAT csv)"
    if fmt == "lines":
        return f"COPY ({sql}) TO STDOUT"
    raise ValueError(f"unknown COPY format {fmt!r}")


def copy_query(sql: str, params: Sequence, *, csv_header: Sequence[str] | None = None,
               fmt: str = "csv") -> Iterator[bytes]:
    """Stream `COPY (sql) TO STDOUT` as bytes. fmt "csv" (with an optional header line) or
    "lines": a one-column query whose text values are written one per line, unescaped."""
    statement = copy_statement(sql, fmt)
    with connection.cursor() as cursor, _no_jit(cursor):
        if csv_header is not None:
            yield (",".join(csv_header) + "\n").encode()
        yield from copy_chunks(cursor.cursor, statement, params, unescape=fmt == "lines")


@contextlib.contextmanager
def _no_jit(cursor):
    """JIT compilation costs a quarter second per bulk read and saves nothing on these plans."""
    cursor.execute("SET jit = off")
    try:
        yield
    finally:
        cursor.execute("RESET jit")


def assignment_id_ranges(study: Study, *, parts: int, smallest: int | None = None,
                         largest: int | None = None) -> list[tuple[int, int]]:
    """Half-open ranges of the study's submitted assignment ids covering all of them in id order
    (the long format's order): about `parts` ranges, each of `smallest` to `largest` assignments
    (fewer, larger ranges cost less per row; the largest bounds what a reader holds in memory)."""
    with connection.cursor() as cursor:
        where = "study_id = %s AND status = %s"
        cursor.execute(f"SELECT count(*) FROM {_A} WHERE {where}", [study.pk, Assignment.Status.SUBMITTED])
        total = cursor.fetchone()[0]
        per_range = min(max(-(-total // max(parts, 1)), smallest or MIN_RANGE_ASSIGNMENTS),
                        largest or MAX_RANGE_ASSIGNMENTS)
        if not total:
            return []
        # Every per_range-th id, from the 0th: percentile_disc(f) is the value at 1-based place
        # ceil(f * total), so f = (k + 0.5) / total is place k + 1 whatever the rounding. Half the
        # CPU of numbering every row with a window function (0.5 instead of 0.9 s at 2M assignments).
        fractions = [(k + 0.5) / total for k in range(0, total, per_range)]
        cursor.execute(f"SELECT percentile_disc(%s::float8[]) WITHIN GROUP (ORDER BY id) FILTER (WHERE status = %s),"
                       f" min(id) FROM {_A} WHERE study_id = %s",
                       [fractions, Assignment.Status.SUBMITTED, study.pk])
        found, first = cursor.fetchone()
        starts = sorted(set(found or []))  # rows may have changed since the count
    if not starts:
        return []
    # The ranges are drawn before the readers' snapshot is taken. An assignment submitted in between
    # is in that snapshot: a newer one falls in the last range (open above); an older one, given
    # before the first submitted id, would fall below every range, so the first starts at the
    # study's first assignment of any status.
    starts[0] = min(starts[0], first)
    return [(lo, hi) for lo, hi in zip(starts, starts[1:] + [2**63 - 1])]


def _long_parts(study: Study, build) -> list[tuple[str, list]] | None:
    """One statement per assignment range when the read can run on several connections."""
    if not parallel_copy.parallel_possible():
        return None
    ranges = assignment_id_ranges(study, parts=2 * parallel_copy.workers())
    if len(ranges) < 2:
        return None
    return [build(r) for r in ranges]


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
    parts = _long_parts(study, build)
    if parts is None:
        return copy_query(*build(), csv_header=header, fmt=copy_fmt)
    return _joined_parts(parts, header, copy_fmt)


def _joined_parts(parts: list[tuple[str, list]], header: Sequence[str] | None, fmt: str) -> Iterator[bytes]:
    if header is not None:
        yield (",".join(header) + "\n").encode()
    statements = [(copy_statement(sql, fmt), params) for sql, params in parts]
    for chunks in parallel_copy.copy_in_parallel(statements, unescape=fmt == "lines"):
        yield from chunks


class _ChunkStream(io.RawIOBase):
    """A read-only file over an iterator of byte chunks, for pyarrow's streaming CSV reader."""

    def __init__(self, chunks: Iterable[bytes]):
        self._chunks = iter(chunks)
        self._rest = b""

    def readable(self) -> bool:
        return True

    def readinto(self, b) -> int:
        while not self._rest:
            try:
                self._rest = next(self._chunks)
            except StopIteration:
                return 0
        n = min(len(b), len(self._rest))
        b[:n] = self._rest[:n]
        self._rest = self._rest[n:]
        return n


def _csv_options(schema: pa.Schema) -> dict:
    """How pyarrow reads COPY's CSV: `schema`'s names and types, t/f booleans, empty = NULL."""
    return {
        "read_options": pacsv.ReadOptions(column_names=schema.names, block_size=ARROW_BLOCK_BYTES,
                                          use_threads=False),
        "parse_options": pacsv.ParseOptions(newlines_in_values=True),
        "convert_options": pacsv.ConvertOptions(
            column_types=schema, true_values=["t"], false_values=["f"], null_values=[""],
            strings_can_be_null=True, quoted_strings_can_be_null=False),
    }


def arrow_batches(sql: str, params: Sequence, schema: pa.Schema) -> Iterator[pa.RecordBatch]:
    """Record batches of a query's rows, typed by `schema` (column order = the SELECT's)."""
    chunks = copy_query(sql, params)
    # pyarrow reads on its own I/O thread, where Django would hand out another connection
    # (one that cannot see this transaction): open the COPY here, on the caller's connection.
    first = next(chunks, b"")
    if not first:
        return
    stream = io.BufferedReader(_ChunkStream(itertools.chain([first], chunks)), buffer_size=1 << 20)
    yield from pacsv.open_csv(stream, **_csv_options(schema))


def _arrow_table(data: bytes, schema: pa.Schema) -> pa.Table:
    if not data:
        return schema.empty_table()
    return pacsv.read_csv(pa.BufferReader(data), **_csv_options(schema))


def arrow_parts(parts: list[tuple[str, list]], schema: pa.Schema) -> Iterator[pa.RecordBatch]:
    """arrow_batches of several range queries, read and parsed in parallel, in order."""
    statements = [(copy_statement(sql), params) for sql, params in parts]
    for table in parallel_copy.copy_in_parallel(statements, parse=lambda data: _arrow_table(data, schema)):
        yield from table.to_batches()


# Compact numeric view for statistics: ids instead of names, no free text; the items' names and
# gold answers as codes into the study's few (or per-item) distinct texts.
_CODED_TEXT = pa.dictionary(pa.int32(), pa.string())
STATS_SCHEMA = pa.schema([
    ("item_id", pa.int64()), ("item", _CODED_TEXT), ("output", pa.int16()), ("system", pa.string()),
    ("rater_id", pa.int64()), ("criterion", pa.string()), ("score", pa.float64()), ("label", pa.string()),
    ("seconds", pa.float64()), ("shown_position", pa.int16()), ("is_attention_check", pa.bool_()),
    ("gold", _CODED_TEXT),
])


CATEGORICAL_STATS_COLUMNS = ("system", "criterion", "label")


def stats_frame(study: Study, criteria: Sequence[str], *,
                item_range: tuple[int, int] | None = None) -> pd.DataFrame:
    """One row per rating of `criteria` in submitted, not ignored assignments (STATS_SCHEMA),
    optionally only of items with ids in the half-open `item_range`.

    `item` is the item's external id and `gold` its gold answer for the criterion as text (both
    categoricals); `label` is the value as text (for choices); `seconds` the assignment's time on task.
    """
    from annotation.reports.stats_ids import stats_table  # (it reads with this module's helpers)

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
