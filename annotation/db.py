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

import psycopg
from django.conf import settings
from django.db import connection, models

PREPARE_AFTER = 5  # runs of a statement on one connection before it is prepared


def prepared_cursor():
    """A Django cursor with server-side binding. While queries are being logged (DEBUG, a test's
    CaptureQueriesContext) it is Django's own: the log can only show client-bound SQL."""
    if connection.queries_logged:
        return connection.cursor()
    # What Django's own cursor() does first: once a request, a connection that died (PostgreSQL
    # restarted) is replaced before use (CONN_HEALTH_CHECKS). The session user is read here, so
    # without it the first request on each idle thread after a restart failed.
    connection.close_if_health_check_failed()
    connection.ensure_connection()
    raw = connection.connection
    threshold = PREPARE_AFTER if getattr(settings, "DATABASE_PREPARED_STATEMENTS", True) else None
    if raw.prepare_threshold != threshold:
        raw.prepare_threshold = threshold
    connection.validate_thread_sharing()
    return connection.make_cursor(psycopg.Cursor(raw))


def select_columns(model: type[models.Model], alias: str) -> str:
    """Every column of `model` in field order, for instance_from_row (never `*`: a table's
    column order follows its migrations, not the model)."""
    return ", ".join(f"{alias}.{f.column}" for f in model._meta.concrete_fields)


def instance_from_row(model: type[models.Model], values) -> models.Model:
    """A model instance from select_columns' values, converted as a queryset would (JSON)."""
    fields = model._meta.concrete_fields
    values = [f.from_db_value(v, None, connection) if v is not None and hasattr(f, "from_db_value") else v
              for f, v in zip(fields, values)]
    return model.from_db(connection.alias, [f.attname for f in fields], values)
