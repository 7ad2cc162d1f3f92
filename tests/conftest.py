"""Shared fixtures: users in every role, a study per preset, a Celery worker, a browser."""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Mapping
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.core.signals import request_finished, request_started

from tests.page_settle import tracked

os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")  # Playwright's sync API runs an event loop in the test thread

REPO = Path(__file__).resolve().parent.parent
DEMO_DIR = REPO / "annotation" / "demo"
# Debian's Chromium in its headless build (package chromium-headless-shell, the form Playwright itself runs
# headless): the same Blink and V8 as /usr/bin/chromium without the full browser's compositor, which spent
# 64 s of CPU on the 23 workspace layout tests where the shell spends 16 (2026-12-07). CONCORD_CHROMIUM picks
# another (/usr/bin/chromium); tests/ui/test_headless_shell.py checks that both see the same pages.
CHROMIUM = os.environ.get("CONCORD_CHROMIUM", "/usr/bin/chromium-headless-shell")
FULL_CHROMIUM = "/usr/bin/chromium"
PASSWORD = "pw-for-tests-only"


_PROBE = pytest.StashKey[float]()


def pytest_sessionstart(session):
    if not hasattr(session.config, "workerinput"):  # the controlling process, once a run
        from bench.machine_speed import probe_ms

        session.config.stash[_PROBE] = probe_ms()


def pytest_terminal_summary(terminalreporter, config):
    """The machine's speed as the run starts and ends, to read its wall time by (bench/machine_speed.py)."""
    if _PROBE in config.stash:
        from bench.machine_speed import probe_ms

        terminalreporter.write_line(f"machine speed (bench/machine_speed.py, CPU ms, lower is faster): "
                                    f"{config.stash[_PROBE]} at the start, {probe_ms()} at the end")


@pytest.fixture(autouse=True)
def _default_language():
    """A test client's request activates a study's language in this thread (rater_study); the next
    test starts in the default language again."""
    yield
    from django.utils import translation

    translation.deactivate()


class _Requests:
    """The live server's threads answering a request now (Django's request signals; the test client's
    requests run on the main thread and are left out). A thread counts until request_finished or
    until it ends: wsgiref skips close(), so request_finished, when the client went away mid-answer."""

    def __init__(self):
        self.lock = threading.Lock()
        self.threads: dict[threading.Thread, int] = {}
        self.workspace_served = False  # a page under /rate/, the only one that sends a beacon as it closes

    def started(self, environ=None, **_):
        thread = threading.current_thread()
        if thread is not threading.main_thread():
            with self.lock:
                self.threads[thread] = self.threads.get(thread, 0) + 1
                if environ and "/rate/" in environ.get("PATH_INFO", ""):
                    self.workspace_served = True

    def take_workspace_served(self) -> bool:
        with self.lock:
            served, self.workspace_served = self.workspace_served, False
            return served

    def finished(self, **_):
        thread = threading.current_thread()
        with self.lock:
            left = self.threads.get(thread, 0) - 1
            if left > 0:
                self.threads[thread] = left
            else:
                self.threads.pop(thread, None)

    def busy(self) -> bool:
        with self.lock:
            for thread in [t for t in self.threads if not t.is_alive()]:
                del self.threads[thread]
            return bool(self.threads)


_LIVE_REQUESTS = _Requests()
request_started.connect(_LIVE_REQUESTS.started, weak=False, dispatch_uid="tests-live-requests-started")
request_finished.connect(_LIVE_REQUESTS.finished, weak=False, dispatch_uid="tests-live-requests-finished")


@pytest.fixture(scope="session")
def django_db_setup(django_db_setup, django_db_blocker):
    """The test database, also when no collected test is marked django_db. pytest-django makes it only for the
    marked tests it collected; a module whose fixtures alone use the database (the documentation reader's,
    through django_db_blocker) run by itself then wrote the demo into DATABASE_URL's own database, a
    contributor's `make run` data, and emptied it after."""
    from django.db import connection

    if connection.settings_dict["NAME"].startswith("test_"):
        _commits_not_waiting_for_disk(connection, django_db_blocker)
        yield
        return
    from django.test.utils import setup_databases, teardown_databases

    with django_db_blocker.unblock():
        made = setup_databases(verbosity=0, interactive=False, aliases={"default"})
    _commits_not_waiting_for_disk(connection, django_db_blocker)
    yield
    with django_db_blocker.unblock():
        teardown_databases(made, verbosity=0)


def _commits_not_waiting_for_disk(connection, django_db_blocker) -> None:
    """Commits to the test database return before the WAL reaches the disk (`synchronous_commit = off`, Django's
    advice for a test database): every session of it, the suite's, its servers' and workers', PgBouncer's too.
    A commit waited 2-3 ms for its flush on the 2-core machine, 0.1 ms without; the transactional tests and
    the processes they start commit on every write. Only a crash of PostgreSQL itself could lose the last
    commits, and the suite's crash test runs a cluster of its own."""
    from django.db import DatabaseError

    name = connection.ops.quote_name(connection.settings_dict["NAME"])
    with django_db_blocker.unblock(), connection.cursor() as cursor:
        with contextlib.suppress(DatabaseError):  # a role that does not own the database: commits wait, as before
            cursor.execute(f"ALTER DATABASE {name} SET synchronous_commit = off")  # for sessions opened from now on
        cursor.execute("SET synchronous_commit = off")  # and this one


@pytest.fixture(scope="session", autouse=True)
def _flush_by_delete():
    """A transactional test's database is emptied by DELETE while it is small (tests/fast_flush.py)."""
    from tests.fast_flush import install

    install()


@pytest.fixture(autouse=True)
def _live_server_settles(request):
    """After a test that served pages, wait until the live server has answered every request before
    the database is flushed. A page closed at the end of a test sends its draft on `pagehide`
    (navigator.sendBeacon); a flush (TRUNCATE then) running beside that request's transaction deadlocked
    with it once, failing the flush and the next test's setup. Set up after pytest-django's database
    fixture, so this runs before its flush, and after the browser fixtures have closed their pages."""
    yield
    if "live_server" not in request.fixturenames:
        return
    if _LIVE_REQUESTS.take_workspace_served():
        time.sleep(0.3)  # a draft's beacon sent as the workspace page closed reaches the server
    deadline = time.monotonic() + 15
    while _LIVE_REQUESTS.busy() and time.monotonic() < deadline:
        time.sleep(0.02)


def current_database_url() -> str:
    """DATABASE_URL pointing at the database the tests use now (after pytest-django created it).

    For subprocesses such as a real Celery worker; keeps host, port, socket and credentials as given.
    """
    from urllib.parse import urlsplit, urlunsplit

    from django.conf import settings

    parts = urlsplit(os.environ["DATABASE_URL"])
    return urlunsplit(parts._replace(path="/" + settings.DATABASES["default"]["NAME"]))


def make_user(username: str, *, staff: bool = False):
    user = get_user_model().objects.create_user(username=username, password=PASSWORD, is_staff=staff)
    return user


@pytest.fixture
def admin_user(db):
    return make_user("boss", staff=True)


@pytest.fixture
def annotator(db):
    return make_user("rater1")


@pytest.fixture
def researcher(db):
    return make_user("reader1")


@pytest.fixture
def outsider(db):
    """A logged-in user who belongs to no study."""
    return make_user("stranger")


class _PresetVersions(Mapping):
    """slug -> RubricVersion of every built-in preset, each installed when a test first looks it up: most tests
    use one of the seven, and installing all of them was 35 queries a test."""

    def __init__(self):
        from rubrics.loader import list_presets

        self._slugs, self._installed = list_presets(), {}

    def __getitem__(self, slug: str):
        from rubrics.services import rubric_preset_install

        if slug not in self._slugs:
            raise KeyError(slug)
        if slug not in self._installed:
            self._installed[slug] = rubric_preset_install(slug)
        return self._installed[slug]

    def __setitem__(self, slug: str, version) -> None:  # a test's own rubric, for make_study(slug)
        self._slugs = sorted({*self._slugs, slug})
        self._installed[slug] = version

    def __iter__(self):
        return iter(self._slugs)

    def __len__(self):
        return len(self._slugs)


@pytest.fixture
def preset_version(db):
    """A lookup slug -> RubricVersion of the built-in presets, each installed on its first lookup."""
    return _PresetVersions()


@pytest.fixture
def make_study(db, preset_version, admin_user):
    """Build an open study from a preset with its demo items and the given members."""
    from annotation.services.items import items_import
    from annotation.services.studies import study_create, study_members_add, study_set_status

    def _make(preset: str = "rrgen-001", *, annotators=(), researchers=(), items_text: str | None = None,
              status: str = "open", **options):
        study = study_create(name=f"Test {preset}", rubric_version=preset_version[preset], user=admin_user,
                             **options)
        text = items_text if items_text is not None else (DEMO_DIR / f"{preset}.jsonl").read_text()
        items_import(study=study, text=text, filename="items.jsonl")
        if annotators:
            study_members_add(study=study, usernames=[u.username for u in annotators], role="annotator")
        if researchers:
            study_members_add(study=study, usernames=[u.username for u in researchers], role="researcher")
        if status != "draft":
            study_set_status(study=study, status="open")
            if status == "closed":
                study_set_status(study=study, status="closed")
        return study

    return _make


@pytest.fixture
def client_for(client):
    """Return a Django test client logged in as the given user."""
    from django.test import Client

    def _client(user) -> Client:
        c = Client()
        c.force_login(user)
        return c

    return _client


@pytest.fixture
def api_for():
    from rest_framework.test import APIClient

    def _api(user) -> APIClient:
        api = APIClient()
        if user is not None:
            api.force_authenticate(user)
        return api

    return _api


@pytest.fixture(scope="session")
def celery_worker_session():
    """A real Celery worker in a thread, consuming every queue from the real Redis broker."""
    from celery.contrib.testing.worker import start_worker

    from config.celery import app, sweeper

    sweeper.every_s = 0  # in this process: sweep at connection only, not in the middle of other tests
    with start_worker(app, pool="threads", concurrency=4, perform_ping_check=False,
                      queues=["default", "judges", "builds", "housekeeping"], shutdown_timeout=30) as worker:
        yield worker


@pytest.hookimpl(trylast=True)  # after pytest-django's own ordering, which the sort keeps within each part
def pytest_collection_modifyitems(items):
    """The tests that use the browser run after all the others, in the order they had, so that one
    Chromium serves them all (see `browser`)."""
    items.sort(key=lambda item: "browser" in getattr(item, "fixturenames", ()))


@pytest.fixture(scope="session")
def browser():
    """Debian's headless Chromium (CHROMIUM above) driven by Playwright (no browser download).

    One for the session: starting Playwright's driver and Chromium took 3.6-4.6 s a test module on
    the busy 2-core machine (2026-11-28). While it is open, Playwright's sync API keeps an event loop
    on the test thread, which breaks asyncio.run() there: pytest_collection_modifyitems above puts
    every test that uses it after the others.
    """
    from playwright.sync_api import sync_playwright

    if not Path(CHROMIUM).exists():
        pytest.fail(f"Chromium not found at {CHROMIUM}: run `make browsers` (or set CONCORD_CHROMIUM)")
    with sync_playwright() as pw:
        b = pw.chromium.launch(
            executable_path=CHROMIUM,
            args=["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync"],
        )
        yield b
        b.close()


def log_in(page, live_server, user) -> None:
    """Log in through the real login form, as a person would."""
    page.goto(live_server.url + "/login/")
    page.fill("#id_username", user.username)
    page.fill("#id_password", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url(live_server.url + "/")


@pytest.fixture
def page(browser):
    context = tracked(browser.new_context(viewport={"width": 1400, "height": 900}))
    page = context.new_page()
    yield page
    context.close()


@pytest.fixture
def new_context(browser):
    """new_context(**options) -> a browser context, closed when the test ends (before its flush)."""
    contexts = []

    def _new(**options):
        contexts.append(tracked(browser.new_context(**options)))
        return contexts[-1]

    yield _new
    for c in contexts:
        c.close()
