"""config.broker_transport: a channel of a broker connection the worker dropped fails as a lost broker,
which Celery handles, where kombu's own transport raised AttributeError and stopped the worker.

Against the test run's Redis, each call is made in the state the two CI failures had: the connection's
client released (Celery collected the connection when Redis was lost) and the channel's pool of
sockets dropped, so that the call must open a new client from the released settings. The whole
path, a real worker through a real Redis restart, is tests/faults/test_redis_restart.py."""

from __future__ import annotations

import contextlib
import logging
import uuid

import kombu
import pytest
import redis
from kombu.common import ignore_errors
from kombu.transport import redis as kombu_redis

from config.broker_transport import Transport
from config.celery import app


@pytest.fixture
def broker():
    """(a connection with `transport` holding one consumed, unacknowledged message; the message), with
    the broker's records of it removed afterwards."""
    made, server = [], redis.Redis.from_url(app.conf.broker_url)

    def holding_one_message(transport):
        conn = kombu.Connection(app.conf.broker_url, transport=transport)
        name = f"broker-test-{uuid.uuid4().hex[:8]}"
        queue = kombu.Queue(name, exchange=kombu.Exchange(name), routing_key=name)
        with conn.Producer() as producer:
            producer.publish({"n": 1}, exchange=queue.exchange, routing_key=name, declare=[queue])
        got = []
        kombu.Consumer(conn.channel(), queues=[queue], callbacks=[lambda body, message: got.append(message)],
                       accept=["json"]).consume()
        conn.drain_events(timeout=5)
        made.append((name, got[0]))
        assert server.hexists("unacked", got[0].delivery_tag)
        return conn, got[0]

    yield holding_one_message
    for name, message in made:
        # kombu restores a channel's unacknowledged messages at exit too: done (or failed) now instead, so
        # that nothing logs to the closed streams of a finished test process
        with contextlib.suppress(Exception):
            message.channel.qos.restore_unacked_once()
        server.hdel("unacked", message.delivery_tag)
        server.zrem("unacked_index", message.delivery_tag)
        server.delete(name)


def dropped(conn, message):
    """The state after Celery collected the connection of a lost broker: kombu released the transport's
    client, and the channel's pool is gone with the dead sockets. Returns the connection's errors, which
    Celery's acknowledgements still to come are handled with."""
    errors = conn.connection_errors
    conn.transport.client = None  # as kombu.Connection._do_close_transport leaves it
    message.channel._pool = None  # as kombu's Channel._disconnect_pools leaves it
    return errors


def unacked(message) -> bool:
    return redis.Redis.from_url(app.conf.broker_url).hexists("unacked", message.delivery_tag)


def test_the_app_connects_through_this_transport():
    conn = app.connection_for_write()
    assert isinstance(conn.transport, Transport) and conn.transport.driver_type == "redis"
    conn.release()


def test_an_acknowledgement_on_a_dropped_connection_is_logged_and_the_message_kept_for_redelivery(broker, caplog):
    conn, message = broker(Transport)
    errors = dropped(conn, message)
    with caplog.at_level(logging.CRITICAL):
        message.ack_log_error(logging.getLogger("celery.worker.request"), errors)  # as Celery acknowledges
    assert "Couldn't ack" in caplog.text and "broker connection was dropped" in caplog.text
    assert unacked(message)  # the visibility timeout hands it out again


def test_closing_a_dropped_connection_is_a_connection_error_celery_ignores(broker):
    conn, message = broker(Transport)
    dropped(conn, message)
    ignore_errors(conn, message.channel.close)  # as Celery closes it: nothing raised
    assert message.channel.closed and unacked(message)


def test_kombus_own_transport_raised_attribute_error_on_both_calls(broker):
    """Why config.broker_transport exists; once kombu stops raising here, it can go."""
    conn, message = broker(kombu_redis.Transport)
    errors = dropped(conn, message)
    with pytest.raises(AttributeError, match="hostname"):
        message.ack_log_error(logging.getLogger("celery.worker.request"), errors)
    with pytest.raises(AttributeError, match="hostname"):
        ignore_errors(conn, message.channel.close)
