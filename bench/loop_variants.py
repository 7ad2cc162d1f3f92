"""The serving variants the 1,000-rater phase can run under (bench/loop_ab.py compares them): granian
instead of gunicorn, and sessions in signed cookies instead of Redis. bench/bench_annotator_loop.py's
run_thousand reads the knobs; gunicorn with the project's settings is the default of each.

    BENCH_1K_SERVER=granian      granian's WSGI interface (Rust HTTP), the same processes x threads, no access log
    BENCH_1K_ACCESS_LOG=0        gunicorn without its access log (and without the "inside gunicorn" rows: the
                                 log was their source)
    BENCH_1K_SESSIONS=signed_cookies

granian need not be installed in the project: GRANIAN_PATH names a folder it was installed into
(`pip install --target`), put on the server's PYTHONPATH.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

from bench.loadclient import ROOT, collected_static_root
from bench.peers import start_process

SESSION_ENGINES = {
    "cached_db": "django.contrib.sessions.backends.cached_db",
    "signed_cookies": "django.contrib.sessions.backends.signed_cookies",
}


def knobs() -> dict[str, str | bool]:
    """The variant asked for by the environment (read per run: bench/loop_ab.py changes it between runs)."""
    server = os.environ.get("BENCH_1K_SERVER", "gunicorn")
    sessions = os.environ.get("BENCH_1K_SESSIONS", "cached_db")
    if server not in ("gunicorn", "granian"):
        raise ValueError(f"BENCH_1K_SERVER={server!r}: gunicorn or granian")
    if sessions not in SESSION_ENGINES:
        raise ValueError(f"BENCH_1K_SESSIONS={sessions!r}: one of {', '.join(SESSION_ENGINES)}")
    return {"server": server, "sessions": sessions, "access_log": os.environ.get("BENCH_1K_ACCESS_LOG", "1") == "1",
            "one_trip": os.environ.get("BENCH_1K_ONE_TRIP") == "1"}


def session_env(sessions: str) -> dict[str, str]:
    """The server's environment for a session engine: the project's settings, or bench/ab_settings.py's
    override of SESSION_ENGINE alone."""
    if sessions == "cached_db":
        return {}
    return {"DJANGO_SETTINGS_MODULE": "bench.ab_settings", "BENCH_SESSION_ENGINE": SESSION_ENGINES[sessions]}


def signed_cookie_sessions(session_keys: list[str], secret_key: str) -> list[str]:
    """The same logged-in sessions (stored in the database by setup_study) as signed-cookie values,
    signed with the server's key as Django's signed_cookies engine signs them."""
    from django.conf import settings
    from django.contrib.sessions.backends.db import SessionStore as DbStore
    from django.contrib.sessions.backends.signed_cookies import SessionStore as CookieStore

    own_key, settings.SECRET_KEY = settings.SECRET_KEY, secret_key  # the stored data is signed with it too
    try:
        cookies = []
        for key in session_keys:
            cookie = CookieStore()
            cookie.update(DbStore(session_key=key).load())
            cookie.save()
            cookies.append(cookie.session_key)
    finally:
        settings.SECRET_KEY = own_key
    return cookies


def granian_command(app: str, port: int, *, workers: int, threads: int, access_log: bool = False) -> list[str]:
    """granian's WSGI interface (requests parsed in Rust, the app on `threads` blocking threads per
    worker); its access log, when asked, goes to its stderr."""
    return [sys.executable, "-m", "granian", "--interface", "wsgi", "--host", "127.0.0.1", "--port", str(port),
            "--workers", str(workers), "--blocking-threads", str(threads), "--backlog", "2048",
            "--log-level", "warning", "--no-ws", "--http", "1", "--access-log" if access_log else "--no-access-log", app]


def with_granian_path(env: dict[str, str]) -> dict[str, str]:
    if not os.environ.get("GRANIAN_PATH"):
        return env
    return {**env, "PYTHONPATH": os.pathsep.join(p for p in (os.environ["GRANIAN_PATH"], env.get("PYTHONPATH")) if p)}


def start_granian(port: int, secret_key: str, *, database_url: str, workers: int, threads: int,
                  extra_env: dict[str, str]) -> subprocess.Popen:
    """granian serving Concord on 127.0.0.1:port with start_server's environment; returns once it answers."""
    env = {
        **os.environ, "DATABASE_URL": database_url, "DEBUG": "0", "CONCORD_TESTING": "0",
        "SECRET_KEY": secret_key, "ALLOWED_HOSTS": "127.0.0.1",
        "SESSION_COOKIE_SECURE": "0", "CSRF_COOKIE_SECURE": "0", "LOG_LEVEL": "ERROR", "CONN_MAX_AGE": "600",
        "STATIC_ROOT": str(collected_static_root()), **extra_env,
    }
    cmd = granian_command("config.wsgi:application", port, workers=workers, threads=threads)
    return start_answering(cmd, with_granian_path(env), f"http://127.0.0.1:{port}/login/")


def start_answering(cmd: list[str], env: dict[str, str], probe_url: str) -> subprocess.Popen:
    """Start a server (its own process group, output to a file that server_log_tail reads and stop_server
    removes) and return once `probe_url` answers 200."""
    log = tempfile.NamedTemporaryFile(prefix="concord-server-", suffix=".log", delete=False)
    log.close()
    proc = start_process(cmd, cwd=ROOT, env=env, log_path=Path(log.name), ready_url=probe_url, timeout_s=60)
    proc.log_path = Path(log.name)  # type: ignore[attr-defined]
    return proc
