"""copy_chunks reads COPY rows from libpq itself: every row once, in order; a server error raised
even after rows have arrived; a reader that stops early cancels the COPY; the connection stays usable."""

from __future__ import annotations

import psycopg
import pytest
from django.db import connection, transaction

from annotation.reports.parallel_copy import CHUNK_BYTES, copy_chunks

pytestmark = pytest.mark.django_db

ROWS = 300_000  # several chunks of CHUNK_BYTES


def _series(n: int, fail_at: int | None = None) -> str:
    value = f"g / (g - {fail_at})" if fail_at else "g"
    return f"COPY (SELECT {value}, repeat('x', 3) FROM generate_series(1, {n}) g) TO STDOUT"


def _still_usable() -> None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 41 + 1")
        assert cursor.fetchone() == (42,)


def test_every_row_once_in_order_in_whole_rows():
    with connection.cursor() as cursor:
        chunks = list(copy_chunks(cursor.cursor, _series(ROWS), []))
    assert len(chunks) > 2 and all(c.endswith(b"\n") for c in chunks)
    assert all(len(c) < CHUNK_BYTES + 64 for c in chunks)
    assert b"".join(chunks) == b"".join(b"%d\txxx\n" % g for g in range(1, ROWS + 1))
    _still_usable()


def test_a_server_error_after_rows_arrived_is_raised():
    got = []
    with pytest.raises(psycopg.errors.DivisionByZero):
        with transaction.atomic(), connection.cursor() as cursor:
            for chunk in copy_chunks(cursor.cursor, _series(ROWS, fail_at=ROWS - 10), []):
                got.append(chunk)
    assert got, "the error came before any row: this tests nothing"
    _still_usable()


@pytest.mark.django_db(transaction=True)  # autocommit, as a download's read: the cancel ends its statement
def test_stopping_early_cancels_the_copy():
    with connection.cursor() as cursor:
        chunks = copy_chunks(cursor.cursor, _series(20 * ROWS), [])
        assert next(chunks).startswith(b"1\txxx\n")
        chunks.close()  # as a dropped download does
        cursor.execute("SELECT count(*) FROM pg_stat_activity"
                       " WHERE query LIKE 'COPY (SELECT g,%%' AND state = 'active'")
        assert cursor.fetchone() == (0,)
    _still_usable()
