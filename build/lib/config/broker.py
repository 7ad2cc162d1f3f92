"""What the broker (Redis) holds for a task: the lost-work sweeps compare it with the database.
Uses Celery's current app, so that tasks can import it without importing config.celery."""

from __future__ import annotations

import base64
import json
from typing import Iterable

from celery import current_app as app


def _task_args(raw: bytes | str | dict, task_name: str) -> list | None:
    """The positional args of a message of `task_name` as kombu stores it in Redis; None for others."""
    try:
        message = json.loads(raw) if isinstance(raw, (bytes, str)) else raw
        if (message.get("headers") or {}).get("task") != task_name:
            return None
        body = message["body"]
        if (message.get("properties") or {}).get("body_encoding") == "base64":
            body = base64.b64decode(body)
        return list(json.loads(body)[0])
    except (ValueError, KeyError, IndexError, TypeError, AttributeError):
        return None


def broker_task_args(task_name: str, queues: Iterable[str]) -> list[list]:
    """The args of every `task_name` message the broker (Redis) holds: waiting in one of `queues`,
    or delivered and not yet acknowledged (running, prefetched, or counting down to a retry:
    kombu keeps each of those in its `unacked` hash until the ack)."""
    with app.connection_for_read() as conn:
        channel = conn.default_channel
        with channel.conn_or_acquire() as client:
            raw = [m for queue in queues for m in client.lrange(queue, 0, -1)]
            raw += [json.loads(v)[0] for v in client.hvals(channel.unacked_key)]  # [message, exchange, key]
    return [args for args in (_task_args(m, task_name) for m in raw) if args is not None]
