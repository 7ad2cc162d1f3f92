"""What each pytest-xdist worker must not share with the other (`make test` runs two).

Loaded with `-p tests.parallel` (pyproject's addopts), so it runs before pytest-django reads the settings.
pytest-django gives each worker its own test database (test_<name>_gw0, ...); here each worker also
gets its own Redis database, so that one worker's Celery worker does not take the other's tasks (they
would run against the other worker's database), and its own media folder, since study and run ids, which
name the files there, repeat across the two databases. The values go into os.environ, so the servers and
workers the tests start in subprocesses get them too; CONCORD_WORKER_ENV keeps a pytest started by a test
from moving them again.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from urllib.parse import urlsplit, urlunsplit

import pytest

# tests/docs/test_docs_blocks.py gives its own servers database 15 (or 14), tests/prod/test_three_nodes.py its
# cluster 14; the workers stay below.
FIRST_FREE_DB, LAST_WORKER_DB = 1, 13


def worker_redis_url(url: str, worker: str) -> str:
    """The Redis URL of xdist worker `worker` ('gw0', 'gw1', ...): the database after the given one, plus its index."""
    parts = urlsplit(url)
    db = int(parts.path.strip("/") or 0) + FIRST_FREE_DB + int(worker.removeprefix("gw"))
    if db > LAST_WORKER_DB:
        raise RuntimeError(f"REDIS_URL {url}: no Redis database left for pytest-xdist worker {worker} "
                           f"(they take the databases after the given one, up to {LAST_WORKER_DB})")
    return urlunsplit(parts._replace(path=f"/{db}"))


_made: list[str] = []  # the media folder made here, removed when this worker ends


def _apply() -> None:
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if not worker or os.environ.get("CONCORD_WORKER_ENV") == worker:
        return
    os.environ["REDIS_URL"] = worker_redis_url(os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0"), worker)
    _made.append(tempfile.mkdtemp(prefix=f"concord-media-{worker}-"))
    os.environ["MEDIA_ROOT"] = _made[0]
    os.environ["CONCORD_WORKER_ENV"] = worker


_apply()


def pytest_unconfigure(config):
    for folder in _made:
        shutil.rmtree(folder, ignore_errors=True)


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist's worker reads the groups (--dist loadgroup)
def pytest_collection_modifyitems(config, items):
    """A test module's tests go to one worker together, in two groups: those without the browser and those
    with it. Module-scoped fixtures (a loaded demo, a started server) are then set up once per part, as in a
    serial run; groups are handed out in the order of tests/conftest.py's sort (browser tests last), so each
    worker runs its browser tests after its others."""
    if not hasattr(config, "workerinput"):
        return
    for item in items:
        browser = "browser" in getattr(item, "fixturenames", ())
        item.add_marker(pytest.mark.xdist_group(item.nodeid.split("::")[0] + ("::browser" if browser else "")))
