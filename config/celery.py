import base64
import json
import logging
import os
import threading
from typing import Iterable

from celery import Celery, bootsteps
from celery.signals import worker_init

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

app = Celery("concord")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@worker_init.connect
def _refuse_without_secret_key(**kwargs):
    from config.checks import require_secret_key

    require_secret_key()


log = logging.getLogger(__name__)
SWEEP_LOCK = 0x53575045 << 32  # PostgreSQL advisory-lock key of the lost-work sweep ("SWPE" << 32)


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


def requeue_lost_work() -> None:
    """Send again the judge chunks and release builds whose messages the broker lost. Never
    raises: it runs inside the worker, which must keep consuming whatever happens here."""
    from django.db import connection

    from annotation.tasks import requeue_lost_builds
    from judges.tasks import requeue_lost_chunks

    try:
        with connection.cursor() as cursor:  # one sweep at a time, whatever the number of workers
            cursor.execute("SELECT pg_try_advisory_lock(%s)", [SWEEP_LOCK])
            if not cursor.fetchone()[0]:
                return
        try:
            for sweep in (requeue_lost_chunks, requeue_lost_builds):
                try:
                    sweep()
                except Exception:
                    log.exception("lost-work sweep %s failed", sweep.__name__)
        finally:
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_advisory_unlock(%s)", [SWEEP_LOCK])
    except Exception:
        log.exception("could not look for lost work")
    finally:
        connection.close()  # this runs on a thread of its own: leave no connection behind


class RequeueLostWork(bootsteps.StartStopStep):
    """Each time the worker has (re)connected to the broker, look for judge chunks and release
    builds whose messages were lost, and send them again. Celery's Redis transport pops a
    message (BRPOP) before it records it as unacknowledged, so a Redis restart between the
    two drops it, and its run or release would wait forever. On a thread: the sweep waits a
    few seconds to tell a lost message from one in transit."""

    requires = {"celery.worker.consumer.connection:Connection"}

    def start(self, consumer):
        threading.Thread(target=requeue_lost_work, name="requeue-lost-work", daemon=True).start()


app.steps["consumer"].add(RequeueLostWork)
