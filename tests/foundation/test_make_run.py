"""`make run` as a new user meets it (`python -m config.launcher run`, what the Makefile calls), on a data folder of
its own with no DATABASE_URL or REDIS_URL: it starts PostgreSQL and Redis, migrates a new database beside the web
server's start, answers its first page, and prints one line a step, the URL, the demo accounts and, last, the log
file; the servers' request and task lines go to that file, not to the terminal. Ctrl-C stops everything with exit
code 0 and no traceback, even while the workers are still starting."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time

import httpx

from tests.conftest import REPO


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_make_run_serves_prints_calmly_and_stops_on_ctrl_c(tmp_path):
    data, port = tmp_path / "data", _free_port()
    env = {k: v for k, v in os.environ.items()
           if k not in ("DATABASE_URL", "REDIS_URL", "CONCORD_TESTING", "DJANGO_SETTINGS_MODULE", "MEDIA_ROOT")
           and not k.startswith("CONCORD_")}
    env.update(CONCORD_DATA_DIR=str(data), PORT=str(port), CONCORD_DEMO_JUDGE_PORT=str(_free_port()),
               CONCORD_DOCS_BUILD="0")
    launcher = subprocess.Popen([sys.executable, "-m", "config.launcher", "run"], cwd=REPO, env=env, text=True,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(line.rstrip("\n") for line in launcher.stdout),
                              daemon=True)
    reader.start()
    try:
        deadline = time.monotonic() + 180
        while not any(line.startswith("Logs: ") for line in lines):
            assert launcher.poll() is None and time.monotonic() < deadline, "\n".join(lines)
            time.sleep(0.2)
        page = httpx.get(f"http://127.0.0.1:{port}/", timeout=30)
        assert page.status_code == 302 and "/login/" in page.headers["location"]  # the home page, signed out
        assert httpx.get(f"http://127.0.0.1:{port}/login/", timeout=30).status_code == 200
    finally:
        if launcher.poll() is None:
            os.killpg(launcher.pid, signal.SIGINT)  # Ctrl-C reaches the whole foreground group
        try:
            code = launcher.wait(timeout=90)
        except subprocess.TimeoutExpired:
            os.killpg(launcher.pid, signal.SIGKILL)
            raise
        reader.join(timeout=10)
    text = "\n".join(lines)
    assert code == 0, text
    steps = [re.sub(r" \(\d+\.\d s\)$", "", line.strip()) for line in lines if line.startswith("  ") and "..." in line]
    assert steps == ["PostgreSQL and Redis ... ready", "Database schema ... ready", "Web server ... ready"], text
    serving = next(i for i, line in enumerate(lines) if line.startswith("Concord is serving"))
    assert f"http://127.0.0.1:{port}/" in lines[serving]
    accounts = [line.split()[1] for line in lines[serving:] if "password:" in line]
    assert accounts == ["admin", "annotator", "annotator2", "annotator3", "researcher"], text
    last_before_stop = [line for line in lines if line.strip()][-2]
    assert last_before_stop.startswith(f"Logs: {data / 'logs' / 'run.log'}"), text
    assert lines[-1] == "Concord stopped.", text
    assert "Traceback" not in text and "HTTP" not in text and "celery" not in text.lower(), text
    log = (data / "logs" / "run.log").read_text()
    assert "GET / HTTP/1.1" in log and "runserver" in log  # the request lines went to the log
