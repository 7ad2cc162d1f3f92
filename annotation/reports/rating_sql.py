"""What every bulk read of a study's ratings is built from: the tables' names, SQL pieces, the
assignment ranges a read is split into to run on several connections, and PostgreSQL's COPY
output parsed into Arrow.

Shared by the long format (ratings, long_arrow, long_json), the statistics' read (stats_ids) and
the pairwise reads (pairwise_sums, pairwise_blocks); it imports none of them.
"""

from __future__ import annotations

import contextlib
from typing import Iterable, Iterator, Sequence

import pyarrow as pa
import pyarrow.csv as pacsv
from django.db import connection

from annotation.models import Assignment, Item, Output, Rating, Study
from annotation.reports import parallel_copy
from annotation.reports.parallel_copy import copy_chunks

# A bulk read's unit of parallel work, in assignments (x ratings each): smaller ranges cost more per
# row; the largest bounds memory (a reader holds up to workers + 1 ranges, 50k x 5 rows ~ 100 MB of JSON).
MIN_RANGE_ASSIGNMENTS, MAX_RANGE_ASSIGNMENTS = 5_000, 50_000
ARROW_BLOCK_BYTES = 4 << 20  # pyarrow parses COPY output in blocks of this size
MAX_BLOCK_BYTES = (1 << 31) - 1  # pyarrow's largest block (an int32)

ASSIGNMENTS, RATINGS, ITEMS, OUTPUTS = (m._meta.db_table for m in (Assignment, Rating, Item, Output))
USERS = Assignment._meta.get_field("rater").related_model._meta.db_table

# Scalars as plain text (ACCEPT, not "ACCEPT"); lists and objects as JSON text.
VALUE_TEXT = "(r.value #>> '{}')"
# The value as the exports write it: a comparative answer (docs/rubric-format.md) is stored by output id, which
# means nothing outside the database; the exports add `systems`, the system of each `shown` id in its order, so
# the file alone gives every judgement by system (the `comparisons` command reads it so). Other rows pay one test
# (1M rows: 0.85 s either way); a comparative row pays a subquery, about 10-25 us (2026-12-06, loaded 2-core VM).
EXPORT_VALUE = (
    "CASE WHEN r.output_id IS NULL AND jsonb_typeof(r.value -> 'shown') = 'array' THEN r.value || jsonb_build_object("
    f"'systems', (SELECT jsonb_agg(eo.system ORDER BY t.ord) FROM jsonb_array_elements_text(r.value -> 'shown')"
    f" WITH ORDINALITY AS t(v, ord) JOIN {OUTPUTS} eo ON eo.id = t.v::bigint)) ELSE r.value END")
EXPORT_VALUE_TEXT = f"(({EXPORT_VALUE}) #>> '{{}}')"


def range_where(params: list, *, item_range: tuple[int, int] | None = None,
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


def assignment_id_ranges(study: Study, *, parts: int, smallest: int | None = None,
                         largest: int | None = None) -> list[tuple[int, int]]:
    """Half-open ranges of the study's submitted assignment ids covering all of them in id order
    (the long format's order): about `parts` ranges, each of `smallest` to `largest` assignments
    (fewer, larger ranges cost less per row; the largest bounds what a reader holds in memory)."""
    with connection.cursor() as cursor:
        where = "study_id = %s AND status = %s"
        cursor.execute(f"SELECT count(*) FROM {ASSIGNMENTS} WHERE {where}", [study.pk, Assignment.Status.SUBMITTED])
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
                       f" min(id) FROM {ASSIGNMENTS} WHERE study_id = %s",
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


def range_parts(study: Study, build) -> list[tuple[str, list]] | None:
    """One statement per assignment range when the read can run on several connections."""
    if not parallel_copy.parallel_possible():
        return None
    ranges = assignment_id_ranges(study, parts=2 * parallel_copy.workers())
    if len(ranges) < 2:
        return None
    return [build(r) for r in ranges]


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


def _csv_options(schema: pa.Schema, block_size: int = ARROW_BLOCK_BYTES) -> dict:
    """How pyarrow reads COPY's CSV: `schema`'s names and types, t/f booleans, empty = NULL."""
    return {
        "read_options": pacsv.ReadOptions(column_names=schema.names, block_size=block_size, use_threads=False),
        "parse_options": pacsv.ParseOptions(newlines_in_values=True),
        "convert_options": pacsv.ConvertOptions(
            column_types=schema, true_values=["t"], false_values=["f"], null_values=[""],
            strings_can_be_null=True, quoted_strings_can_be_null=False),
    }


def arrow_batches(sql: str, params: Sequence, schema: pa.Schema) -> Iterator[pa.RecordBatch]:
    """Record batches of a query's rows, typed by `schema` (column order = the SELECT's).

    COPY's chunks hold whole rows (copy_chunks): about ARROW_BLOCK_BYTES of them are parsed at a
    time by arrow_table, which reads a row of any size. (pyarrow's streaming reader cuts its input
    in blocks and fails on a row longer than one: one rater's long comment failed the export.) Read
    on the caller's connection, so the rows are those its transaction sees."""
    pending: list[bytes] = []
    held = 0
    for chunk in copy_query(sql, params):
        pending.append(chunk)
        held += len(chunk)
        if held >= ARROW_BLOCK_BYTES:
            yield from arrow_table(b"".join(pending), schema).to_batches()
            pending, held = [], 0
    if pending:
        yield from arrow_table(b"".join(pending), schema).to_batches()


def arrow_table(data: bytes, schema: pa.Schema) -> pa.Table:
    """Whole rows of COPY's CSV as a table. Parsed in blocks of ARROW_BLOCK_BYTES; where a row is
    longer than a block (pyarrow refuses a row across two blocks), again in one block of it all."""
    if not data:
        return schema.empty_table()
    try:
        return pacsv.read_csv(pa.BufferReader(data), **_csv_options(schema))
    except pa.ArrowInvalid as exc:
        if "straddl" not in str(exc) or len(data) < ARROW_BLOCK_BYTES:
            raise
    return pacsv.read_csv(pa.BufferReader(data), **_csv_options(schema, min(len(data) + 1, MAX_BLOCK_BYTES)))


def arrow_parts(parts: list[tuple[str, list]], schema: pa.Schema) -> Iterator[pa.RecordBatch]:
    """arrow_batches of several range queries, read and parsed in parallel, in order."""
    statements = [(copy_statement(sql), params) for sql, params in parts]
    for table in parallel_copy.copy_in_parallel(statements, parse=lambda data: arrow_table(data, schema)):
        yield from table.to_batches()
