"""Issue 25: while `make run` serves on its embedded servers, `.venv/bin/python manage.py …` in
another terminal (DATABASE_URL unset) uses them; with neither, the error says what to do."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from config.embedded import SERVERS_FILE, running_servers, services

REPO = Path(__file__).resolve().parent.parent.parent
SHOW_DB = ("from django.db import connection; connection.ensure_connection();"
           "print(connection.settings_dict['NAME'], connection.pg_version > 0)")


def _manage(data_dir: Path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "REDIS_URL", "CONCORD_TESTING"}}
    env.update(CONCORD_DATA_DIR=str(data_dir), SECRET_KEY="x" * 50)
    return subprocess.run([sys.executable, "manage.py", *args], cwd=REPO, capture_output=True, text=True, env=env,
                          timeout=120)


def test_manage_py_finds_the_embedded_servers_of_a_running_launcher(tmp_path, monkeypatch):
    monkeypatch.delenv("DATABASE_URL", raising=False)
    monkeypatch.delenv("REDIS_URL", raising=False)
    with services(tmp_path) as urls:  # what `make run` does: the real embedded PostgreSQL and Redis
        announced = running_servers(tmp_path)
        assert announced == urls
        done = _manage(tmp_path, "shell", "-c", SHOW_DB)
        assert done.returncode == 0, done.stderr
        assert done.stdout.split()[-2:] == ["concord", "True"]
        done = _manage(tmp_path, "import_items", "--study", "no-such-study", str(tmp_path / "none.jsonl"))
        assert "invalid" not in done.stderr and "DATABASE_URL" not in done.stderr
    assert not (tmp_path / SERVERS_FILE).exists()  # removed at stop
    done = _manage(tmp_path, "shell", "-c", SHOW_DB)
    assert done.returncode == 2
    assert "DATABASE_URL is not set" in done.stderr and "make run" in done.stderr and "Traceback" not in done.stderr


def test_a_file_left_by_a_killed_launcher_is_ignored(tmp_path):
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    (tmp_path / SERVERS_FILE).write_text(f"PID={dead.pid}\nDATABASE_URL=postgres://x@127.0.0.1:1/gone\n")
    assert running_servers(tmp_path) == {}
    (tmp_path / SERVERS_FILE).write_text(f"PID={os.getpid()}\nDATABASE_URL=postgres://x@127.0.0.1:1/here\nOTHER=1\n")
    assert running_servers(tmp_path) == {"DATABASE_URL": "postgres://x@127.0.0.1:1/here"}


def test_an_unset_database_url_says_what_to_do(tmp_path):
    items = tmp_path / "items.jsonl"
    items.write_text('{"id": "a", "outputs": [{"content": "x"}]}\n')
    done = _manage(tmp_path, "import_items", "--study", "demo", str(items))
    assert done.returncode == 2
    assert "failed to resolve host" not in done.stderr
    assert "DATABASE_URL is not set" in done.stderr and "make run" in done.stderr
