"""What a reader types is what is tested: every ```bash/```sh and ```python block of the tutorials and how-to
guides runs, page by page in the site's order and each page's blocks in order, against what `make run` gives
the reader: a web server, a Celery worker and the stand-in judge server, on a database that holds the demo
after some use (tests/commands/lived_in.py) and whatever earlier pages' steps made.

As the pages say (their opening comment): each shell block runs in a fresh bash from the reader's folder, and
a page's Python blocks share one `.venv/bin/python` session. The reader's folder is a copy of the checkout
made of links, so what the steps write (tutorial-files/) stays out of the real one. The pages name the
servers as `make run` starts them (http://127.0.0.1:8000, the judge at :8011); here they run on free ports,
and the blocks are run with those addresses put in.

Not Sybil, pytest-examples or mktestdocs: those run Python blocks inside the test process (pytest-examples
Python only, mktestdocs shell blocks apart from the Python ones), while these steps are a shell and a Python
session of the reader's, interleaved in page order, against servers in other processes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from tests.commands.lived_in import lived_in  # noqa: F401  (the module's demo, used a little)
from tests.conftest import REPO, current_database_url
from tests.docs.blocks import page_blocks

PAGE_DIRS = ("tutorials", "how-to")
SERVER, JUDGE = "http://127.0.0.1:8000", "http://127.0.0.1:8011"
STEP_TIMEOUT_S = 300
NOT_LINKED = {".git", "tutorial-files", ".pytest_cache", "test-artifacts"}


def pages() -> list[Path]:
    """The pages in the site's order (mkdocs.yml nav), any page the nav does not list after them."""
    import yaml

    listed: list[str] = []

    def walk(node):
        if isinstance(node, str):
            listed.append(node)
        elif isinstance(node, list):
            for n in node:
                walk(n)
        elif isinstance(node, dict):
            for n in node.values():
                walk(n)

    nav = yaml.load((REPO / "mkdocs.yml").read_text(), Loader=yaml.BaseLoader).get("nav", [])
    walk(nav)
    found = [p for d in PAGE_DIRS for p in sorted((REPO / "docs" / d).glob("*.md"))]
    order = {name: i for i, name in enumerate(listed)}
    return sorted(found, key=lambda p: order.get(str(p.relative_to(REPO / "docs")), len(order)))


def runnable(page: Path) -> list:
    return [b for b in page_blocks(page, REPO) if b.kind]


def _demo_passwords_as_served(django_db_blocker) -> None:
    """The tests hash passwords with MD5 (config/settings.py, TESTING); the reader's server is not a test and
    knows only Django's default hashers, so the demo accounts get their passwords again in its first one."""
    from django.contrib.auth import get_user_model

    from annotation.demo import ACCOUNTS, demo_password
    from tests.doubles.quick_hashing import QuickPBKDF2PasswordHasher

    hasher = QuickPBKDF2PasswordHasher()  # production's PBKDF2, at fewer iterations
    with django_db_blocker.unblock():
        for user in get_user_model().objects.filter(username__in=list(ACCOUNTS)):
            user.password = hasher.encode(demo_password(user.username), hasher.salt())
            user.save(update_fields=["password"])


def _another_redis_database(url: str) -> str:
    """The reader's servers get a Redis database of their own. On the tests' one, the suite's in-process worker
    (conftest.celery_worker_session, still running from earlier modules) took the reader's judge chunks and did
    not score them; each run then waited for the reader's worker's lost-work sweep (300 s)."""
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(url)
    current = int(parts.path.strip("/") or 0)
    return urlunsplit(parts._replace(path=f"/{15 if current != 15 else 14}"))


@pytest.fixture(scope="module")
def reader_env(lived_in, tmp_path_factory, django_db_blocker):  # noqa: F811
    """Servers as `make run` starts them, on the test database; the reader's folder and environment."""
    from config.embedded import free_port

    _demo_passwords_as_served(django_db_blocker)

    web, judge = free_port(), free_port()
    env = {**os.environ, "DATABASE_URL": current_database_url(), "CONCORD_LOCAL_SERVING": "1",
           "REDIS_URL": _another_redis_database(os.environ["REDIS_URL"]), "PYTHONUNBUFFERED": "1"}
    env.pop("CONCORD_TESTING", None)  # the reader's processes are not tests
    py = str(REPO / ".venv" / "bin" / "python") if (REPO / ".venv" / "bin" / "python").exists() else sys.executable
    logs = tmp_path_factory.mktemp("servers")
    started = []
    for name, argv in (
        ("web", [py, "manage.py", "runserver", f"127.0.0.1:{web}", "--noreload"]),
        ("worker", [py, "-m", "celery", "-A", "config", "worker", "-Q", "default,judges,builds,housekeeping", "-c", "2", "-l", "WARNING"]),
        ("judge", [py, "-m", "judges.fakeserver", "--port", str(judge), "--latency-ms", "20"]),
    ):
        log = (logs / f"{name}.log").open("w")
        started.append(subprocess.Popen(argv, cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT))
    try:
        _wait_until_up(f"http://127.0.0.1:{web}/login/", started, logs)
        folder = tmp_path_factory.mktemp("reader")
        for entry in REPO.iterdir():
            if entry.name not in NOT_LINKED:
                (folder / entry.name).symlink_to(entry)
        yield {"env": env, "folder": folder, "python": py, "logs": logs,
               "urls": {SERVER: f"http://127.0.0.1:{web}", JUDGE: f"http://127.0.0.1:{judge}"}}
    finally:
        for process in started:
            process.terminate()
        for process in started:
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()


def _wait_until_up(url: str, started: list, logs: Path, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    with httpx.Client(timeout=2) as poll:  # one SSL context for every poll (bench.loadclient.start_server)
        while time.monotonic() < deadline:
            if any(p.poll() is not None for p in started):
                break
            try:
                if poll.get(url).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.3)
    pytest.fail("the servers did not start:\n" + "\n".join(f"{p.name}: {p.read_text()[-2000:]}"
                                                             for p in sorted(logs.glob("*.log"))))


def _with_urls(code: str, urls: dict) -> str:
    for documented, here in urls.items():
        code = code.replace(documented, here)
    return code


class PythonSession:
    """The page's `.venv/bin/python`, kept open across its Python blocks."""

    def __init__(self, env: dict):
        self.process = subprocess.Popen([env["python"], "-u", str(Path(__file__).with_name("python_session.py"))],
                                        cwd=env["folder"], env=env["env"], stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, text=True)

    def run(self, code: str) -> dict:
        self.process.stdin.write(json.dumps({"code": code}) + "\n")
        self.process.stdin.flush()
        line = self.process.stdout.readline()
        if not line:
            return {"ok": False, "out": "", "error": f"the Python session ended (exit {self.process.wait()})"}
        return json.loads(line)

    def close(self) -> None:
        self.process.stdin.close()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()


def run_shell(code: str, env: dict) -> dict:
    try:
        done = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", code], cwd=env["folder"], env=env["env"],
                              capture_output=True, text=True, timeout=STEP_TIMEOUT_S)
    except subprocess.TimeoutExpired as exc:
        return {"ok": False, "out": str(exc.stdout or ""), "error": f"still running after {STEP_TIMEOUT_S} s"}
    return {"ok": done.returncode == 0, "out": done.stdout, "error": "" if done.returncode == 0 else
            f"exit status {done.returncode}\n{done.stderr[-3000:]}"}


PAGES = [p for p in pages() if runnable(p)]


def test_the_runnable_pages_have_steps():
    """The tutorials and most how-to guides are runnable; a page that lost its blocks is noticed."""
    names = {str(p.relative_to(REPO / "docs")) for p in PAGES}
    assert {"tutorials/first-study.md", "how-to/import-peers.md"} <= names
    counted = {str(p.relative_to(REPO)): len(runnable(p)) for p in PAGES}
    print("documented blocks run:", sum(counted.values()), counted)


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(REPO / "docs")))
def test_every_step_of_the_page_runs(reader_env, page):
    """The page's steps in order; the first that fails stops the page (later steps build on it)."""
    session = None
    try:
        for block in runnable(page):
            code = _with_urls(block.code, reader_env["urls"])
            if block.kind == "python":
                session = session or PythonSession(reader_env)
                result = session.run(code)
            else:
                result = run_shell(code, reader_env)
            assert result["ok"], (f"{block.where} ({block.lang}) failed:\n{block.code}\n--- output\n"
                                  f"{result['out'][-3000:]}\n--- error\n{result['error']}")
    finally:
        if session is not None:
            session.close()
