"""Bulk reads split in ranges and run by several PostgreSQL connections at once, in order.

One big `COPY (query) TO STDOUT` keeps one server process busy while the others idle: at a
million ratings the server's per-row work (joins, text and JSON formatting) is most of an
export's time. Here each range of the query runs on its own connection, every connection
reading the same snapshot (`pg_export_snapshot`, as `pg_dump --jobs` does), so the parts
join into exactly what one query would have given at that moment. Results come back in
range order; only a window of `workers + 1` ranges is held in memory. A range may also be a job
that runs several statements on its connection (`run_in_parallel`): long_arrow reads a range's
assignments, then their ratings, and joins them on the worker thread.

Only possible outside a transaction: other connections cannot see a transaction's own
uncommitted rows, so inside one (tests, an atomic block) `parallel_possible()` is false and
callers read with one query.
"""

from __future__ import annotations

import queue
import select
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from functools import partial
from typing import Callable, Iterator, Sequence, TypeVar

import psycopg
from django.conf import settings
from django.db import connection, transaction
from psycopg import errors, pq
from psycopg import sql as pgsql

T = TypeVar("T")
Statement = tuple[str, Sequence]  # (COPY statement, parameters)
Job = Callable[[psycopg.Connection], T]  # what one worker does on its snapshot connection
CHUNK_BYTES = 1 << 20


def workers() -> int:
    return max(1, int(getattr(settings, "BULK_READ_WORKERS", 1)))


def parallel_possible() -> bool:
    return workers() > 1 and not connection.in_atomic_block


def copy_chunks(cursor: psycopg.Cursor, statement: str, params: Sequence, *, unescape: bool = False) -> Iterator[bytes]:
    """The bytes of one COPY ... TO STDOUT, in chunks of about CHUNK_BYTES made of whole rows.
    With unescape, COPY text format's doubled backslashes are undone (one-column JSON lines:
    JSON text never holds raw tabs or newlines, so that is the only escape COPY adds).

    Rows are taken from libpq as they arrive (PostgreSQL sends one message per row): psycopg's
    own read() costs a generator and a wait per row, a third of a bulk read's Python time.
    psycopg still starts the COPY, and on an early exit (a dropped download) cancels it."""
    with cursor.copy(statement, params):
        pgconn = cursor.connection.pgconn
        take = pgconn.get_copy_data
        buf = bytearray()
        while True:
            nbytes, data = take(1)  # without blocking: 0 when no whole row has arrived yet
            if nbytes > 0:
                # Copied straight into the chunk: a bytes object per row, joined later, cost a fifth
                # more of this loop's CPU; holding libpq's buffers until then, far more.
                buf += data
                if len(buf) >= CHUNK_BYTES:
                    yield _chunk(buf, unescape)
                    buf = bytearray()
            elif nbytes == 0:
                _wait_readable(pgconn)
            else:  # -1: the COPY is over (-2, an error, is reported by its result)
                break
        _copy_result(pgconn, cursor.connection.info.encoding)
    if buf:
        yield _chunk(buf, unescape)


def _wait_readable(pgconn) -> None:
    select.select([pgconn.socket], [], [])
    pgconn.consume_input()


def _copy_result(pgconn, encoding: str) -> None:
    """Read the COPY's final results, as psycopg would, up to the end; an error is raised then."""
    failed = None
    while True:
        while pgconn.is_busy():
            _wait_readable(pgconn)
        result = pgconn.get_result()
        if result is None:
            break
        if result.status != pq.ExecStatus.COMMAND_OK and failed is None:
            failed = result
    if failed is not None:
        raise errors.error_from_result(failed, encoding=encoding)


def _chunk(buf: bytearray, unescape: bool) -> bytes:
    data = bytes(buf)
    return data.replace(b"\\\\", b"\\") if unescape else data


def _open_on_snapshot(snapshot: str) -> psycopg.Connection:
    conn = psycopg.connect(**connection.get_connection_params())
    conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
    conn.execute(pgsql.SQL("SET TRANSACTION SNAPSHOT {}").format(pgsql.Literal(snapshot)))
    conn.execute(pgsql.SQL("SET TIME ZONE {}").format(pgsql.Literal(connection.timezone_name)))
    conn.execute("SET jit = off")  # a quarter second of compiling per query, nothing saved on these plans
    conn.execute("SET max_parallel_workers_per_gather = 0")  # the parallelism is ours: one process per range
    # A range is a slice of assignments: walk it through the indexes. Hash joins would read every
    # rating and item of the table for each range (the planner's choice at a quarter of a study).
    conn.execute("SET enable_hashjoin = off")
    conn.execute("SET enable_mergejoin = off")
    return conn


def copy_in_parallel(statements: Sequence[Statement], *, unescape: bool = False,
                     parse: Callable[[bytes], T] | Sequence[Callable[[bytes], T]] | None = None,
                     ) -> Iterator[list[bytes] | T]:
    """Per statement, in order: its COPY bytes as a list of chunks, or `parse(bytes)` of them
    when given (run on the worker thread: pyarrow's parsers release the GIL); `parse` may also
    be one function per statement."""
    parsers = parse if isinstance(parse, Sequence) else [parse] * len(statements)
    return run_in_parallel([partial(_copy_job, statement, parser, unescape)
                            for statement, parser in zip(statements, parsers)])


def _copy_job(statement: Statement, parser: Callable[[bytes], T] | None, unescape: bool,
              conn: psycopg.Connection) -> list[bytes] | T:
    chunks = copy_bytes(conn, statement, unescape=unescape)
    return parser(b"".join(chunks)) if parser else chunks


def copy_bytes(conn: psycopg.Connection, statement: Statement, *, unescape: bool = False) -> list[bytes]:
    """One COPY's bytes read on `conn`, as a list of chunks."""
    with conn.cursor() as cur:
        return list(copy_chunks(cur, statement[0], statement[1], unescape=unescape))


def run_in_parallel(jobs: Sequence[Job]) -> Iterator[T]:
    """Per job, in order: `job(connection)`, run on one of several connections that all read the
    snapshot taken when this starts (a job may run several statements on its connection)."""
    n = min(workers(), len(jobs))
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_export_snapshot()")
            snapshot = cursor.fetchone()[0]
        # Every worker imports the snapshot while the exporting transaction is still open.
        pool: queue.SimpleQueue[psycopg.Connection] = queue.SimpleQueue()
        opened = []
        try:
            for _ in range(n):
                opened.append(_open_on_snapshot(snapshot))
                pool.put(opened[-1])
        except BaseException:
            for conn in opened:
                _end(conn)
            raise

    def run(job: Job) -> T:
        conn = pool.get()
        try:
            return job(conn)
        finally:
            pool.put(conn)

    executor = ThreadPoolExecutor(max_workers=n, thread_name_prefix="concord-copy")
    pending: deque[Future] = deque()
    todo = iter(jobs)
    try:
        for job in todo:
            pending.append(executor.submit(run, job))
            if len(pending) > n:
                break
        while pending:
            result = pending.popleft().result()
            nxt = next(todo, None)
            if nxt is not None:
                pending.append(executor.submit(run, nxt))
            yield result
    finally:
        executor.shutdown(wait=True, cancel_futures=True)
        for conn in opened:
            _end(conn)


def _end(conn: psycopg.Connection) -> None:
    """End the snapshot transaction, then close. The rollback is a round trip, so the server's session
    is idle when this returns; a bare close only sends Terminate, and the backend may still show the
    export's transaction open for a moment after the download has ended."""
    try:
        conn.rollback()
    except psycopg.Error:
        pass  # a broken connection (the server went away): closing it is all there is to do
    finally:
        conn.close()
