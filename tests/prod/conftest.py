"""Concord as production runs it: `collectstatic` into a fresh STATIC_ROOT, then real gunicorn
(config.wsgi, gthread, as the Dockerfile and docker-compose.yml start it) with DEBUG unset, its own
SECRET_KEY and ALLOWED_HOSTS, on a free loopback port, against the test database.

Nothing here serves static files but gunicorn itself (WhiteNoise): the bug this guards against is a
site that works under the test server and `runserver`, which serve /static/ on their own, and is
unstyled and dead behind gunicorn."""

from __future__ import annotations

import os
import secrets
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import httpx
import pytest

from bench.loadclient import collected_static_root, free_port
from tests.conftest import REPO, current_database_url
from tests.doubles.quick_hashing import QUICK_HASHER

# Production knows nothing of these: the server must start as a fresh deployment would.
NOT_IN_PRODUCTION = {"DEBUG", "CONCORD_TESTING", "SECRET_KEY", "ALLOWED_HOSTS", "STATIC_ROOT", "DATABASE_URL"}

ARTIFACTS = REPO / "test-artifacts" / "prod"


def production_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in NOT_IN_PRODUCTION}
    env.update(DJANGO_SETTINGS_MODULE="config.settings", **extra)
    return env


@pytest.fixture(scope="session")
def collected_static() -> Path:
    """`manage.py collectstatic` as the Dockerfile runs it: no database, no SECRET_KEY (bench.loadclient's,
    shared with every gunicorn the tests start)."""
    root = collected_static_root()
    assert (root / "staticfiles.json").exists(), "collectstatic wrote no manifest"
    return root


@dataclass
class ProdServer:
    url: str
    proc: subprocess.Popen
    log: Path
    static_root: Path

    def log_tail(self, chars: int = 4000) -> str:
        return self.log.read_text(errors="replace")[-chars:]


@pytest.fixture(scope="module")
def prod_server(django_db_setup, django_db_blocker, collected_static, tmp_path_factory) -> Iterator[ProdServer]:
    """gunicorn serving the test database. Module-scoped: the transactional tests' data is visible to it,
    and it is stopped before pytest-django drops the test database."""
    port = free_port()
    log = tmp_path_factory.mktemp("gunicorn") / "gunicorn.log"
    env = production_env(
        SECRET_KEY=secrets.token_urlsafe(50), ALLOWED_HOSTS="127.0.0.1", STATIC_ROOT=str(collected_static),
        DATABASE_URL=current_database_url(), PGAPPNAME="concord-prod-test-gunicorn",
        SECURE_SSL_REDIRECT="0",  # plain http on loopback, no TLS proxy in front; the rest as production has it
    )
    cmd = [sys.executable, "-m", "gunicorn", "config.wsgi:application", "--bind", f"127.0.0.1:{port}",
           "--workers", "2", "--threads", "4", "--worker-class", "gthread", "--access-logfile", "-"]
    with log.open("ab") as out:
        proc = subprocess.Popen(cmd, cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    server = ProdServer(url=f"http://127.0.0.1:{port}", proc=proc, log=log, static_root=collected_static)
    try:
        _wait_until_answering(server)
        yield server
    finally:
        # Its own process group: the master and its workers go, and with them their database sessions,
        # before pytest-django drops the test database.
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(5)


def _wait_until_answering(server: ProdServer, timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    with httpx.Client(timeout=5) as poll:  # one SSL context for every poll (bench.loadclient.start_server)
        while time.monotonic() < deadline:
            if server.proc.poll() is not None:
                pytest.fail(f"gunicorn exited with {server.proc.returncode}:\n{server.log_tail()}")
            try:
                if poll.get(server.url + "/login/").status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.3)
    pytest.fail(f"gunicorn did not answer /login/ within {timeout_s} s:\n{server.log_tail()}")


@pytest.fixture(autouse=True)
def production_password_hashing(settings):
    """Users made here must be able to log in to gunicorn, which hashes as production does (PBKDF2);
    the test settings' fast MD5 hasher is unknown there. PBKDF2 at few iterations, which production reads."""
    settings.PASSWORD_HASHERS = [QUICK_HASHER]
