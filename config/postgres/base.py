"""Django's PostgreSQL backend, with a health check that costs no round trip while nothing has happened,
and timestamps read by psycopg's compiled loader.

CONN_HEALTH_CHECKS has Django send `SELECT 1` before a kept connection's first use in every request: two
of the rating loop's ten round trips a rated item, each through PgBouncer's hop too. A connection that
the server or the pooler ended has said so on its socket: PostgreSQL sends its FATAL message and closes,
a dead process's socket is closed by the kernel, and either makes the idle socket readable. So an idle
connection with nothing to read is usable; anything else is checked as Django checks it.

Django registers a timestamptz loader of its own (psycopg_any.BaseTzLoader) that subclasses psycopg's
pure-Python one to stamp its time zone on each value, so with psycopg[binary] every timestamp of every
row was parsed in Python: 5-7% of the rating loop's web CPU, which reads about 20 of them an item. On a
connection whose session time zone is UTC, as Django sets it with USE_TZ, psycopg's own loader (compiled
where psycopg[binary] is installed) already returns the same instant in timezone.utc, so it is used.
"""

from __future__ import annotations

import datetime
import select

import psycopg
from django.db.backends.postgresql import base
from psycopg.adapt import Loader
from psycopg.postgres import types as pg_types
from psycopg.pq import Format, TransactionStatus

TIMESTAMPTZ_OID = pg_types["timestamptz"].oid


class UtcTimestamptzLoader(Loader):
    """psycopg's default timestamptz loader under the `timezone` attribute Django's create_cursor asks
    for (the compiled loader cannot be subclassed; psycopg takes `load` once a column, so the compiled
    parse runs for each value)."""

    timezone = datetime.timezone.utc

    def __init__(self, oid, context=None):
        super().__init__(oid, context)
        self._loader = psycopg.adapters.get_loader(TIMESTAMPTZ_OID, Format.TEXT)(oid, context)
        self.load = self._loader.load  # what psycopg calls: the compiled method itself

    def load(self, data):
        return self._loader.load(data)


class DatabaseWrapper(base.DatabaseWrapper):
    def init_connection_state(self):
        super().init_connection_state()  # the session's time zone is set by now
        conn = self.connection
        if self.timezone == datetime.timezone.utc and conn.info.parameter_status("TimeZone") == "UTC":
            conn.adapters.register_loader(TIMESTAMPTZ_OID, UtcTimestamptzLoader)

    def is_usable(self):
        conn = self.connection
        if conn is None or conn.closed:
            return False
        if conn.info.transaction_status == TransactionStatus.IDLE and not _has_something_to_read(conn.fileno()):
            return True
        return super().is_usable()  # SELECT 1, which reads whatever came (an error, the end, a notice)


def _has_something_to_read(fd: int) -> bool:
    poller = select.poll()  # not select(): a web process's sockets outnumber FD_SETSIZE
    poller.register(fd, select.POLLIN)
    return bool(poller.poll(0))
