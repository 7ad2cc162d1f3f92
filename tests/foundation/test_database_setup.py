"""A module whose fixtures alone use the database gets the test database when it runs by itself (tests/conftest.py
django_db_setup). pytest-django makes it only for the tests marked django_db that it collected: the documentation
reader's module, run alone, loaded the demo into DATABASE_URL's own database and emptied it after."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.conftest import REPO


@pytest.fixture(scope="module")
def database_name(django_db_setup, django_db_blocker) -> str:
    from django.db import connection

    with django_db_blocker.unblock(), connection.cursor() as cursor:
        cursor.execute("SELECT current_database()")
        return cursor.fetchone()[0]


def test_a_fixture_alone_gets_the_test_database(database_name):
    assert database_name.startswith("test_"), database_name


def test_it_does_so_in_a_run_of_this_test_alone():
    """The test above in a pytest of its own, where it is the only test collected and none is marked."""
    from urllib.parse import urlsplit, urlunsplit

    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_XDIST", "PYTEST_CURRENT"))}
    url = urlsplit(os.environ["DATABASE_URL"])  # another name: this process's test database is in use
    env["DATABASE_URL"] = urlunsplit(url._replace(path=url.path.rstrip("/") + "_alone"))
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:randomly", "-p", "no:cacheprovider",
                           f"{__file__}::test_a_fixture_alone_gets_the_test_database"], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and "1 passed" in done.stdout, done.stdout[-3000:] + done.stderr[-2000:]


def test_the_test_database_commits_without_waiting_for_the_disk(database_name):
    """Every session of the test database, not only the suite's own: a fresh connection, as a server or worker
    the suite starts opens one (tests/conftest.py _commits_not_waiting_for_disk)."""
    import psycopg

    from tests.conftest import current_database_url

    with psycopg.connect(current_database_url(), autocommit=True) as fresh:
        assert fresh.execute("SHOW synchronous_commit").fetchone()[0] == "off"
        # Only this database: another one of the same server (PostgreSQL's own) keeps the server's setting.
        assert fresh.execute("SELECT count(*) FROM pg_db_role_setting s JOIN pg_database d ON d.oid = s.setdatabase"
                             " WHERE d.datname = 'postgres' AND 'synchronous_commit=off' = ANY(s.setconfig)"
                             ).fetchone()[0] == 0
