"""Django's PostgreSQL backend, with a health check that costs no round trip while nothing has happened.

CONN_HEALTH_CHECKS has Django send `SELECT 1` before a kept connection's first use in every request: two
of the rating loop's ten round trips a rated item, each through PgBouncer's hop too. A connection that
the server or the pooler ended has said so on its socket: PostgreSQL sends its FATAL message and closes,
a dead process's socket is closed by the kernel, and either makes the idle socket readable. So an idle
connection with nothing to read is usable; anything else is checked as Django checks it.
"""

from __future__ import annotations

import select

from django.db.backends.postgresql import base
from psycopg.pq import TransactionStatus


class DatabaseWrapper(base.DatabaseWrapper):
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
