"""What `make run` prints: a line a step, the URL and the demo accounts last. Everything the servers,
workers and the demo loader print goes to one log file under .data/ (named on the last line), so
"Concord is serving" is not lost among request and task lines."""

from __future__ import annotations

import contextlib
import hashlib
import os
import shlex
import socket
import subprocess
import sys
import time
import tomllib
from collections.abc import Iterator
from pathlib import Path

TAIL_LINES = 15


class Console:
    def __init__(self, log_path: Path):
        log_path.parent.mkdir(parents=True, exist_ok=True)
        self.log_path = log_path
        self.log = open(log_path, "a", buffering=1)  # noqa: SIM115 - open for the launcher's whole life
        self.log.write(f"\n=== make run, {time.strftime('%Y-%m-%d %H:%M:%S')} ===\n")
        self.t0 = time.monotonic()
        self.names: dict[int, str] = {}
        self.started: dict[int, float] = {}
        self.reported: set[int] = set()

    @contextlib.contextmanager
    def step(self, what: str) -> Iterator[None]:
        began = time.monotonic()
        print(f"  {what} ...", end="", flush=True)
        try:
            yield
        except BaseException:
            print(" failed", flush=True)
            self.print_tail()
            raise
        print(f" ready ({time.monotonic() - began:.1f} s)", flush=True)

    def start(self, name: str, command: list[str], *, cwd: Path) -> subprocess.Popen:
        self.log.write(f"--- {name}: {shlex.join(command)}\n")
        self.log.flush()
        child = subprocess.Popen(command, cwd=cwd, stdout=self.log, stderr=subprocess.STDOUT)
        self.names[child.pid] = name
        self.started[child.pid] = time.monotonic()
        return child

    def finish(self, child: subprocess.Popen) -> None:
        """Wait for a child started with start(); exit naming it and the log where it failed."""
        if child.wait():
            raise SystemExit(f"the {self.names[child.pid]} step exited with code {child.returncode}; "
                             f"see {self.log_path}")

    def wait_for_port(self, port: int, watched: list[subprocess.Popen], timeout: float = 180.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for child in watched:
                if child.poll() is not None:
                    raise SystemExit(f"the {self.names[child.pid]} exited with code {child.returncode}; "
                                     f"see {self.log_path}")
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
            time.sleep(0.1)
        raise SystemExit(f"nothing answered on port {port} within {timeout:.0f} s; see {self.log_path}")

    def serving(self, url: str, *, docs_building: bool) -> None:
        from annotation.demo_accounts import demo_account_rows

        print(f"\nConcord is serving {url}  (first page after {time.monotonic() - self.t0:.1f} s)", flush=True)
        print("  The demo studies fill in the background; the home page shows how far.")
        if docs_building:
            print("  The documentation site (/docs/) is being built in the background.")
        print("\nDemo accounts (local use only):")
        for username, password, role in demo_account_rows():
            print(f"  {role:<10} {username:<11} password: {password}")
        print(f"\nLogs: {self.log_path}   Ctrl-C stops the web server, workers and databases.\n", flush=True)

    def report_finished(self, child: subprocess.Popen, ok: str, failed: str) -> None:
        if child.pid in self.reported or child.poll() is None:
            return
        self.reported.add(child.pid)
        took = time.monotonic() - self.started[child.pid]
        print(f"  {ok} ({took:.0f} s)" if child.returncode == 0 else f"  {failed}: see {self.log_path}", flush=True)

    def report_exits(self, children: list[subprocess.Popen]) -> None:
        for child in children:
            if child.poll() is not None and child.returncode not in (0, -2, -15):
                print(f"The {self.names[child.pid]} stopped (exit code {child.returncode}); the log's last lines:",
                      file=sys.stderr)
                self.print_tail()

    def print_tail(self) -> None:
        self.log.flush()
        lines = self.log_path.read_text(errors="replace").splitlines()[-TAIL_LINES:]
        print("\n".join("    " + line for line in lines), file=sys.stderr, flush=True)


# The schema step is skipped when no migration file changed since the last migrate and the database still
# holds as many applied migrations as it did then (a database made anew is migrated again).
def _migration_files(root: Path) -> list[Path]:
    return sorted(p for p in root.glob("*/migrations/*.py") if ".venv" not in p.parts)


def _fingerprint(root: Path) -> str:
    digest = hashlib.sha256()
    installed = root / ".venv" / ".installed"
    for path in [*_migration_files(root), installed]:
        with contextlib.suppress(OSError):
            stat = path.stat()
            digest.update(f"{path.relative_to(root)}:{stat.st_size}:{stat.st_mtime_ns}\n".encode())
    digest.update(os.environ.get("DATABASE_URL", "").encode())
    return digest.hexdigest()


def _applied_count() -> int | None:
    try:
        import psycopg

        with psycopg.connect(os.environ["DATABASE_URL"], connect_timeout=5) as conn:
            return conn.execute("SELECT count(*) FROM django_migrations").fetchone()[0]
    except Exception:  # no table yet, or no database: migrate will say what is wrong
        return None


def migrations_pending(root: Path, data: Path) -> bool:
    try:
        fingerprint, count = (data / "migrated.stamp").read_text().split()
    except (OSError, ValueError):
        return True
    return fingerprint != _fingerprint(root) or str(_applied_count()) != count


def note_migrated(root: Path, data: Path) -> None:
    (data / "migrated.stamp").write_text(f"{_fingerprint(root)} {_applied_count()}\n")


# The docs site is built again only when a source it is made from (its pages, mkdocs.yml, its hooks, or the
# code whose reference pages the hooks generate) is newer than the last build.
DOCS_SOURCES = ("docs", "mkdocs.yml", "annotation", "judges", "rubrics", "config", "concord", "clients")
BUILT_MARK = ".concord-built"


def _newest_mtime(root: Path) -> float:
    newest = 0.0
    for name in DOCS_SOURCES:
        path = root / name
        if path.is_file():
            newest = max(newest, path.stat().st_mtime)
            continue
        for folder, dirs, files in os.walk(path):
            dirs[:] = [d for d in dirs if d not in ("__pycache__", "node_modules")]
            for file in files:
                with contextlib.suppress(OSError):
                    newest = max(newest, os.stat(os.path.join(folder, file)).st_mtime)
    return newest


def docs_build_command(root: Path, python: str) -> list[str] | None:
    """The command that builds the docs site (installing MkDocs at the dev extra's pins first where it is
    missing), or None when the last build is newer than every source."""
    mark = root / "site" / BUILT_MARK
    if mark.exists() and mark.stat().st_mtime >= _newest_mtime(root):
        return None
    extras = tomllib.loads((root / "pyproject.toml").read_text())["project"]["optional-dependencies"]["dev"]
    pins = [pin for pin in extras if pin.startswith("mkdocs")]
    uv = Path(python).with_name("uv")  # the venv of `make run` has uv and no pip of its own (Makefile)
    installer = f"{shlex.quote(str(uv))} pip install --python {shlex.quote(python)}" if uv.exists() \
        else f"{shlex.quote(python)} -m pip install"
    install = f"{installer} -q {shlex.join(pins)}"
    build = (f"NO_MKDOCS_2_WARNING=1 {shlex.quote(python)} -m mkdocs build --strict "
             f"&& touch {shlex.quote(str(mark))}")
    return ["bash", "-c", f"{shlex.quote(python)} -c 'import mkdocs' 2>/dev/null || {install}; {build}"]
