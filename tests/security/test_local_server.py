"""`make run`'s server (config/launcher.py LOCAL_ENV), started for real: plain http on 127.0.0.1 works
(pages, static files, cookies without Secure), and an error shows the product's 500 page, not
Django's debug page with the settings and local variables; DEBUG=1 asked for explicitly still gets
the debug page. The error is a real one: the server reads an empty database (no tables), so a page
that queries one fails."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time
from urllib.parse import urlsplit, urlunsplit

import httpx
import psycopg
import pytest

from config.launcher import LOCAL_ENV
from tests.conftest import REPO

DEBUG_PAGE = "DEBUG = True"  # Django's technical 500 says "because you have DEBUG = True"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def empty_database():
    """A database with no tables, dropped afterwards."""
    parts = urlsplit(os.environ["DATABASE_URL"])
    name = f"{parts.path.lstrip('/') or 'concord'}_local_server_empty"
    admin = urlunsplit(parts._replace(path="/postgres"))
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}"')
        conn.execute(f'CREATE DATABASE "{name}"')
    yield urlunsplit(parts._replace(path="/" + name))
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _serve(database_url: str, **extra: str):
    port = _free_port()
    env = {k: v for k, v in os.environ.items()
           if k not in {"DEBUG", "CONCORD_TESTING", "SECRET_KEY", "ALLOWED_HOSTS", "CONCORD_LOCAL_SERVING"}}
    env.update(LOCAL_ENV, DATABASE_URL=database_url, DJANGO_SETTINGS_MODULE="config.settings", **extra)
    proc = subprocess.Popen([sys.executable, "manage.py", "runserver", f"127.0.0.1:{port}", "--noreload"], cwd=REPO,
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    with httpx.Client(timeout=1) as poll:  # one SSL context for every poll (bench.loadclient.start_server)
        while time.monotonic() < deadline:
            try:
                poll.get(base + "/static/css/")
                return proc, base
            except httpx.TransportError:
                if proc.poll() is not None:
                    raise AssertionError(f"runserver stopped: {proc.stderr.read()[-2000:]}") from None
                time.sleep(0.2)
    proc.kill()
    raise AssertionError("runserver did not answer within 60 s")


def _stop(proc: subprocess.Popen) -> str:
    proc.terminate()
    try:
        _, err = proc.communicate(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
        _, err = proc.communicate()
    return err


def test_make_run_serves_plain_http_with_static_files_and_the_product_error_page(empty_database):
    proc, base = _serve(empty_database)
    try:
        login = httpx.get(base + "/login/")
        assert login.status_code == 200 and "<form" in login.text
        assert "secure" not in login.headers.get("set-cookie", "").lower()  # plain http keeps its cookies
        css = re.search(r'href="(/static/[^"]+\.css)"', login.text).group(1)
        static = httpx.get(base + css)
        assert static.status_code == 200 and static.headers["content-type"].startswith("text/css")
        assert len(static.content) > 100
        # a page that reads a table the empty database lacks: a real server error
        error = httpx.get(base + "/crowd/no-such-link/", params={"PROLIFIC_PID": "p1"})
        assert error.status_code == 500
        assert "Something went wrong on our side" in error.text
        assert DEBUG_PAGE not in error.text and "Traceback" not in error.text and "DATABASES" not in error.text
    finally:
        log = _stop(proc)
    assert "ProgrammingError" in log  # the error is logged for the developer instead


def test_debug_page_only_when_debug_is_asked_for(empty_database):
    proc, base = _serve(empty_database, DEBUG="1")
    try:
        error = httpx.get(base + "/crowd/no-such-link/", params={"PROLIFIC_PID": "p1"})
        assert error.status_code == 500 and DEBUG_PAGE in error.text
    finally:
        _stop(proc)


def test_production_is_not_local_serving():
    """Without CONCORD_LOCAL_SERVING (or DEBUG) the settings stay production's: no loopback hosts by
    default, Secure cookies, collected static files."""
    code = ("import django; django.setup(); from django.conf import settings as s;"
            "print(s.LOCAL_SERVING, s.DEBUG, s.ALLOWED_HOSTS, s.SESSION_COOKIE_SECURE, s.WHITENOISE_USE_FINDERS)")
    clean = {k: v for k, v in os.environ.items() if k not in {"DEBUG", "CONCORD_TESTING", "CONCORD_LOCAL_SERVING",
                                                              "ALLOWED_HOSTS"}}
    prod = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120,
                          env={**clean, "DJANGO_SETTINGS_MODULE": "config.settings", "SECRET_KEY": "k" * 50})
    assert prod.stdout.split() == ["False", "False", "[]", "True", "False"], prod.stderr
    local = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120,
                           env={**clean, "DJANGO_SETTINGS_MODULE": "config.settings", **LOCAL_ENV})
    assert local.stdout.split() == ["True", "False", "['127.0.0.1',", "'localhost',", "'[::1]']", "False",
                                    "True"], local.stderr
