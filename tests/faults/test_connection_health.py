"""The health check of a kept PostgreSQL connection (config.postgres): no statement while the socket is
quiet; Django's `SELECT 1` when something came on it (the server's end, a notice); unusable once the
server ended it."""

from __future__ import annotations

import time

import pytest
from django.db import connection, connections

pytestmark = pytest.mark.django_db(transaction=True)


def _on_another_connection(sql: str, params: list | None = None):
    """The first column of `sql`'s first row (None for a statement without rows), run on a connection of its own."""
    other = connections.create_connection("default")
    try:
        with other.cursor() as cursor:
            cursor.execute(sql, params)
            return cursor.fetchone()[0] if cursor.description else None
    finally:
        other.close()


def _last_statement_of(pid: int) -> str:
    """What PostgreSQL last ran for the backend `pid`, as another connection sees it."""
    return _on_another_connection("SELECT query FROM pg_stat_activity WHERE pid = %s", [pid])


def _backend_pid() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid() /* marker */")
        return cursor.fetchone()[0]


def test_the_backend_is_concords():
    assert connection.settings_dict["ENGINE"] == "config.postgres"
    assert connection.settings_dict["CONN_HEALTH_CHECKS"]


def test_a_quiet_connection_is_usable_without_a_round_trip():
    pid = _backend_pid()
    assert connection.is_usable()
    assert connection.is_usable()
    assert _last_statement_of(pid) == "SELECT pg_backend_pid() /* marker */"


def test_something_on_the_socket_is_checked_as_django_checks_it():
    pid = _backend_pid()
    with connection.cursor() as cursor:
        cursor.execute("LISTEN concord_health_test")
    _on_another_connection("NOTIFY concord_health_test")
    time.sleep(0.2)  # the notification reaches the idle connection's socket
    assert connection.is_usable()  # a notice is no failure ...
    assert _last_statement_of(pid) == "SELECT 1"  # ... but it was asked, not assumed
    with connection.cursor() as cursor:
        cursor.execute("UNLISTEN *")


def test_a_connection_the_server_ended_is_unusable():
    pid = _backend_pid()
    # with a timeout, it returns once the backend has gone, as after a restart
    assert _on_another_connection("SELECT pg_terminate_backend(%s, 5000)", [pid])
    assert not connection.is_usable()
    connection.close()
    assert _backend_pid() != pid  # the next use connects again
