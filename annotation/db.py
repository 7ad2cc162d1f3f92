"""Plain statements for the rating loop: server-bound, prepared, read into model instances.

The rating loop runs the same dozen statements on every request. Sent through `prepared_cursor`,
their parameters are bound by the server and psycopg prepares each one after a few runs on a
connection, so PostgreSQL stops parsing and planning them anew (that was half of its CPU per
rated item); PostgreSQL remakes a prepared plan when autovacuum brings new statistics. The ORM
keeps Django's client-side binding: an `IN` list of 65,536 values or more does not fit the
protocol's parameter count. DATABASE_PREPARED_STATEMENTS=0 turns preparing off for a connection
pooler that cannot keep prepared statements (PgBouncer before 1.21 in transaction mode); the
binding stays.
"""

from __future__ import annotations

import functools

import psycopg
from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, connections, models

PREPARE_AFTER = 5  # runs of a statement on one connection before it is prepared


def prepared_cursor():
    """A Django cursor with server-side binding. While queries are being logged (DEBUG, a test's
    CaptureQueriesContext) it is Django's own: the log can only show client-bound SQL."""
    conn = connections[DEFAULT_DB_ALIAS]  # once: each attribute read through `connection` looks it up again
    if conn.queries_logged:
        return conn.cursor()
    # What Django's own cursor() does first: once a request, a connection that died (PostgreSQL
    # restarted) is replaced before use (CONN_HEALTH_CHECKS). The session user is read here, so
    # without it the first request on each idle thread after a restart failed.
    conn.close_if_health_check_failed()
    conn.ensure_connection()
    raw = conn.connection
    threshold = PREPARE_AFTER if getattr(settings, "DATABASE_PREPARED_STATEMENTS", True) else None
    if raw.prepare_threshold != threshold:
        raw.prepare_threshold = threshold
    conn.validate_thread_sharing()
    return conn.make_cursor(psycopg.Cursor(raw))


def select_columns(model: type[models.Model], alias: str) -> str:
    """Every column of `model` in field order, for instance_from_row (never `*`: a table's
    column order follows its migrations, not the model)."""
    return ", ".join(f"{alias}.{f.column}" for f in model._meta.concrete_fields)


@functools.cache
def _row_reader(model: type[models.Model]) -> tuple[list[str], list]:
    """A model's attribute names and, per field, its from_db_value (or None): worked out once, not
    for every row the rating loop reads."""
    fields = model._meta.concrete_fields
    return [f.attname for f in fields], [getattr(f, "from_db_value", None) for f in fields]


def instance_from_row(model: type[models.Model], values) -> models.Model:
    """A model instance from select_columns' values, converted as a queryset would (JSON)."""
    names, converters = _row_reader(model)
    conn = connections[DEFAULT_DB_ALIAS]
    values = [convert(v, None, conn) if convert is not None and v is not None else v
              for convert, v in zip(converters, values)]
    return model.from_db(DEFAULT_DB_ALIAS, names, values)
