"""Emptying the test database after a transactional test by DELETE, not TRUNCATE, while its tables are small.

Django empties the database after each transactional test (the browser tests, those with a real worker or
server) with one TRUNCATE of its forty tables: 0.18-0.19 s here, as PostgreSQL makes new files for every table
and index, against 7 ms for a DELETE of each, on the few rows such a test writes. Run as
session_replication_role = replica, the DELETEs check no foreign key, as TRUNCATE does not (the tables with
triggers go first: see tables_with_triggers). Django's TRUNCATE stays for tables grown past MAX_DELETE_BYTES (a DELETE of
hundreds of thousands of rows costs more, and leaves their pages behind), for a test that resets sequences,
and where the role may not set session_replication_role (a superuser's setting)."""

from __future__ import annotations

MAX_DELETE_BYTES = 8 * 1024 * 1024


def can_skip_triggers(connection) -> bool:
    """Whether this session may set session_replication_role (a superuser's setting)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT current_setting('is_superuser') = 'on'")
        return cursor.fetchone()[0]


def _small(connection, tables: list[str]) -> bool:
    with connection.cursor() as cursor:
        cursor.execute("SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) FROM pg_class c"
                       " JOIN pg_namespace n ON n.oid = c.relnamespace"
                       " WHERE n.nspname = current_schema() AND c.relname = ANY(%s)", [tables])
        return cursor.fetchone()[0] <= MAX_DELETE_BYTES


def tables_with_triggers(connection, tables: list[str]) -> set[str]:
    """Those of `tables` with triggers of their own. The rating-change counters' triggers fire in the replica
    role too (ENABLE ALWAYS): emptied or filled first, what their triggers write lands in tables handled after."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT DISTINCT c.relname FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid"
                       " WHERE NOT t.tgisinternal AND c.relname = ANY(%s)", [tables])
        return {name for (name,) in cursor.fetchall()}


def _triggered_first(connection, tables: list[str]) -> list[str]:
    triggered = tables_with_triggers(connection, tables)
    return sorted(triggered) + [t for t in tables if t not in triggered]


def install() -> None:
    """Replace the PostgreSQL backend's flush SQL for this test process."""
    from django.db.backends.postgresql.operations import DatabaseOperations

    truncate = DatabaseOperations.sql_flush
    if getattr(truncate, "deletes", False):
        return

    def sql_flush(self, style, tables, *, reset_sequences=False, allow_cascade=False):
        tables = list(tables)
        if not tables or reset_sequences or not can_skip_triggers(self.connection) or not _small(self.connection,
                                                                                                 tables):
            return truncate(self, style, tables, reset_sequences=reset_sequences, allow_cascade=allow_cascade)
        # execute_sql_flush runs these in one transaction: the setting ends with it
        return ["SET LOCAL session_replication_role = replica",
                *(f"{style.SQL_KEYWORD('DELETE FROM')} {style.SQL_FIELD(self.quote_name(t))}"
                  for t in _triggered_first(self.connection, tables))]

    sql_flush.deletes = True
    DatabaseOperations.sql_flush = sql_flush
