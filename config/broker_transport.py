"""The Redis broker transport, with the channels of a dropped connection failing as a lost broker.

When Redis restarts, the worker's consumer collects the broken connection, which releases its
transport's client (the connection's settings), and then closes it. Two later calls on that
connection's channels open a new Redis client from the released settings: the close, which first
restores the unacknowledged messages, and the acknowledgement of a task that finishes after the
worker has reconnected. kombu raised AttributeError there ('NoneType' object has no attribute
'hostname'; kombu#582, #970), which Celery does not expect from a broker call, and the whole worker
stopped (seen in CI runs of tests/faults/test_redis_restart.py, once on each call). Here such a
channel raises redis's ConnectionError, one of the transport's connection errors, which Celery
handles as a broker lost mid-call: the close is ignored, the acknowledgement logged ("Couldn't
ack"). The message stays in the unacknowledged set, from which the visibility timeout hands it out
again: at least once, as for any broker lost before an acknowledgement.
"""

from __future__ import annotations

from kombu.transport import redis as kombu_redis
from redis.exceptions import ConnectionError as RedisConnectionError


class Channel(kombu_redis.Channel):
    def _connparams(self, asynchronous=False):
        if self.connection.client is None:
            raise RedisConnectionError("this channel's broker connection was dropped (the broker was lost)")
        return super()._connparams(asynchronous=asynchronous)


class Transport(kombu_redis.Transport):
    Channel = Channel
