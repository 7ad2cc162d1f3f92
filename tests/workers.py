"""Real `celery -A config worker` processes for the tests that kill, restart or starve them
(tests/faults, tests/judges_platform/test_worker_kill.py)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.conftest import current_database_url

REPO = Path(__file__).resolve().parents[1]
CELERY = Path(sys.executable).with_name("celery")


def worker_env(redis_url: str, visibility_s: int, sweep_s: float = 0) -> dict[str, str]:
    from django.conf import settings

    env = dict(os.environ)
    env.update(DATABASE_URL=current_database_url(), REDIS_URL=redis_url, CONCORD_TESTING="1",
               MEDIA_ROOT=str(settings.MEDIA_ROOT),
               CELERY_VISIBILITY_TIMEOUT=str(visibility_s),  # redeliver a dead worker's unacked tasks quickly
               CELERY_LOST_WORK_SWEEP_S=str(sweep_s))  # 0: look for lost messages after connections only
    return env


def start_worker(log: Path, *, queues: str, redis_url: str, visibility_s: int, name: str,
                 concurrency: int = 2, pool: str = "prefork", sweep_s: float = 0) -> subprocess.Popen:
    """A real worker; prefork by default, the pool docker-compose.yml and `make run` use. `sweep_s`:
    how often it also looks for messages the broker lost (config/celery.py LostWorkSweeper)."""
    cmd = [str(CELERY), "-A", "config", "worker", "-Q", queues, "-P", pool, "-c", str(concurrency),
           "--without-gossip", "--without-mingle", "--without-heartbeat", "-l", "info",
           "-n", f"{name}-{time.monotonic_ns()}@%h"]
    # its own session, so a kill reaches this worker's process group and nothing else
    return subprocess.Popen(cmd, cwd=REPO, env=worker_env(redis_url, visibility_s, sweep_s), stdout=log.open("ab"),
                            stderr=subprocess.STDOUT, start_new_session=True)


def stop_worker(proc: subprocess.Popen | None) -> None:
    if proc is None or proc.poll() is not None:
        return
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(15)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(5)


def kill_worker(proc: subprocess.Popen) -> None:
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(10)
