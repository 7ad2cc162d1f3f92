import logging
import os
import threading

from celery import Celery, bootsteps, current_app
from celery.signals import after_setup_logger, after_setup_task_logger, worker_init

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
# Celery's Django fixup runs every system check as a worker starts; the URL checks import every view, which a
# worker never serves: 1.1 s of a worker's start (2026-11-29, 2-core python-svc machine: ready after 4.0 s, 2.9 s
# without). The web process and `manage.py check` run them.
os.environ.setdefault("CELERY_SKIP_CHECKS", "1")

app = Celery("concord")
app.config_from_object("django.conf:settings", namespace="CELERY")

# Background work by kind, each kind on its own queue served by workers of its own (config/launcher.py,
# docker-compose.yml, docs/how-to/add-nodes.md): a build that hangs holds a builds worker, never the
# judge runs or the beat's tasks. Every task of the project is named here (tests/faults/test_task_kinds.py).
KINDS = {  # kind: what it runs (before the colon: the kind's name in a time limit's message)
    "judges": "judge calls: a run's chunks and batch polls, routing refreshes",
    "builds": "release builds and reports: large studies' reports and their sections",
    "housekeeping": "housekeeping: the beat's periodic tasks and the lost-work sweeps",
}
TASK_KINDS = {
    "judges.tasks.judge_chunk": "judges",
    "judges.tasks.batch_poll": "judges",
    "judges.tasks.routing_refresh": "judges",
    "judges.tasks.active_draw_next": "judges",
    "annotation.tasks.release_build": "builds",
    "annotation.tasks.report_compute": "builds",
    "annotation.tasks.report_sections_compute": "builds",
    "annotation.tasks.participant_ids_purge": "housekeeping",
    "annotation.tasks.studies_close_past_deadline": "housekeeping",
    "annotation.tasks.requeue_lost_builds": "housekeeping",
    "judges.tasks.requeue_lost_chunks": "housekeeping",
    "judges.tasks.requeue_lost_draws": "housekeeping",
}


def time_limits(kind: str) -> tuple[int, int]:
    """(soft, hard) seconds for a kind of task (settings.TASK_TIME_LIMITS)."""
    from django.conf import settings

    soft = int(settings.TASK_TIME_LIMITS[kind])
    return soft, soft + int(settings.TASK_HARD_LIMIT_GRACE_S)


def took_too_long(kind: str, *, hard: bool = False) -> str:
    """Why a task of `kind` past its (soft or hard) time limit failed, as its user reads it."""
    soft, hard_s = time_limits(kind)
    return f"took longer than {hard_s if hard else soft} s (the time limit of {KINDS[kind].split(':')[0]})"


def kind_queue(task_name: str) -> str:
    return TASK_KINDS[task_name]


app.conf.task_routes = {name: {"queue": kind} for name, kind in TASK_KINDS.items()}
app.conf.task_annotations = {name: dict(zip(("soft_time_limit", "time_limit"), time_limits(kind)))
                             for name, kind in TASK_KINDS.items()}
app.autodiscover_tasks()
# Periodic tasks, by name (run by `celery -A config beat`: config/launcher.py, docker-compose.yml).
# Each takes no arguments and is idempotent, so a missed or doubled beat does no harm.
app.conf.beat_schedule = {
    "purge-expired-panel-ids": {"task": "annotation.tasks.participant_ids_purge", "schedule": 3600.0},
    "close-studies-past-deadline": {"task": "annotation.tasks.studies_close_past_deadline", "schedule": 60.0},
}



def registered_task(name: str):
    """A task from Celery's registry, by name: the services that queue an app's tasks do not import its
    tasks module (the tasks import the services, not the other way). The apps' tasks modules are
    registered on first use in a process that has not loaded them. Not send_task: it ignores
    task_always_eager, and load_demo and simulate_study run their chunks in this process (eager) when no
    worker is there yet."""
    if name not in current_app.tasks:
        current_app.loader.import_default_modules()
    return current_app.tasks[name]


@after_setup_logger.connect
@after_setup_task_logger.connect
def _mask_secrets_in_logs(logger, **kwargs):
    """The worker sets up its own handlers: they mask credentials as the web's do (LOGGING)."""
    from config.logmask import mask_handlers

    mask_handlers(logger)


@worker_init.connect
def _refuse_without_secret_key(**kwargs):
    from config.checks import require_secret_key

    require_secret_key()


log = logging.getLogger(__name__)
SWEEP_LOCK = 0x53575045 << 32  # PostgreSQL advisory-lock key of the lost-work sweep ("SWPE" << 32)
# By name, so that this module imports no app code (the apps' tasks import the broker helpers).
LOST_WORK_SWEEPS = ("judges.tasks.requeue_lost_chunks", "annotation.tasks.requeue_lost_builds",
                    "judges.tasks.requeue_lost_draws")


def requeue_lost_work() -> None:
    """Send again the judge chunks and release builds whose messages the broker lost. Never
    raises: it runs inside the worker, which must keep consuming whatever happens here."""
    from django.db import connection

    try:
        with connection.cursor() as cursor:
            # One sweep at a time, whatever the number of workers. Wait for a sweep under way rather
            # than skip: it may have taken its first look before this loss.
            cursor.execute("SELECT pg_advisory_lock(%s)", [SWEEP_LOCK])
        try:
            for name in LOST_WORK_SWEEPS:
                try:
                    app.tasks[name]()  # run here, in this thread: a sweep must not wait in the queue
                except Exception:
                    log.exception("lost-work sweep %s failed", name)
        finally:
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_advisory_unlock(%s)", [SWEEP_LOCK])
    except Exception:
        log.exception("could not look for lost work")
    finally:
        connection.close()  # this runs on a thread of its own: leave no connection behind


class LostWorkSweeper:
    """One thread per worker process that runs requeue_lost_work when poked and every
    `CELERY_LOST_WORK_SWEEP_S` seconds. The periodic sweep catches a message lost in a restart that
    no consumer reconnection followed (kombu can reconnect below the consumer), which the poke alone
    missed: a CI run's judge run waited for its lost chunk until the test gave up."""

    def __init__(self):
        self._wake = threading.Event()
        self._guard = threading.Lock()
        self._thread: threading.Thread | None = None
        self.every_s: float | None = None  # None: the setting

    def poke(self) -> None:
        with self._guard:
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._loop, name="requeue-lost-work", daemon=True)
                self._thread.start()
        self._wake.set()

    def _loop(self) -> None:
        from django.conf import settings

        every = settings.CELERY_LOST_WORK_SWEEP_S if self.every_s is None else self.every_s
        while True:
            self._wake.wait(every if every > 0 else None)
            self._wake.clear()
            requeue_lost_work()


sweeper = LostWorkSweeper()


class RequeueLostWork(bootsteps.StartStopStep):
    """Each time the worker has (re)connected to the broker, and every CELERY_LOST_WORK_SWEEP_S
    seconds, look for judge chunks and release builds whose messages were lost, and send them
    again. Celery's Redis transport pops a message (BRPOP) before it records it as unacknowledged,
    so a Redis restart between the two drops it, and its run or release would wait forever. On a
    thread: the sweep waits a few seconds to tell a lost message from one in transit."""

    requires = {"celery.worker.consumer.connection:Connection"}

    def start(self, consumer):
        sweeper.poke()


app.steps["consumer"].add(RequeueLostWork)
