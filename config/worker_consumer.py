"""Celery's consumer, kept alive when closing a connection the broker dropped fails inside kombu.

After a Redis restart the consumer closes the broken connection before it reconnects; the Redis
channel's close first restores unacknowledged messages through a new client, and when the
connection was already released that client has no connection info and kombu raises
AttributeError ('NoneType' object has no attribute 'hostname'; kombu#970, #582). Celery ignores
only connection errors there, so the AttributeError stopped the whole worker (seen in a CI run of
tests/faults/test_redis_restart.py). The connection is being thrown away anyway, and the messages
it could not restore stay in the unacked set, which the visibility timeout hands out again.
"""

from __future__ import annotations

import logging

from celery.worker.consumer import Consumer as CeleryConsumer

log = logging.getLogger(__name__)


class Consumer(CeleryConsumer):
    def on_connection_error_after_connected(self, exc):
        connection = self.connection
        if connection is not None:
            connection.close = _close_ignoring_released_client(connection.close)
        return super().on_connection_error_after_connected(exc)


def _close_ignoring_released_client(close):
    def guarded_close():
        try:
            close()
        except AttributeError as exc:  # only kombu's released-client failure above; the connection is discarded
            log.warning("closing the lost broker connection failed inside kombu (%r); reconnecting anyway", exc)

    return guarded_close
