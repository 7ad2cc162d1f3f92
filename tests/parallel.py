"""What each pytest-xdist worker must not share with the others (`make test` runs three).

Loaded with `-p tests.parallel` (pyproject's addopts), so it runs before pytest-django reads the settings.
pytest-django gives each worker its own test database (test_<name>_gw0, ...); here each worker also
gets its own Redis database, so that one worker's Celery worker does not take another's tasks (they
would run against that worker's database), and its own media folder, since study and run ids, which
name the files there, repeat across the two databases. The values go into os.environ, so the servers and
workers the tests start in subprocesses get them too; CONCORD_WORKER_ENV keeps a pytest started by a test
from moving them again.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path
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


GROUP_SECONDS = Path(__file__).with_name("group_seconds.json")  # how long each group took (record_group_seconds)


def group_order(groups: dict[str, int], seconds: dict[str, float]) -> list[str]:
    """The groups in the order they are handed out: those without the browser, then the browser ones; each part
    longest first (by the seconds a run recorded; a group it did not see counts one second a test), so that
    the last groups handed out are short and the workers end together."""
    return sorted(groups, key=lambda g: (g.endswith("::browser"), -seconds.get(g, float(groups[g]))))


# Groups that spend much of their time waiting (brokers and workers restarted, visibility timeouts, servers
# starting, a model server on one thread) rather than on both cores. The last two spent 5.5 s of CPU in 34 s and
# 1.9 s in 16 s (2026-12-07, every process's CPU given to the test its worker ran); the odd worker had run the
# first while both others waited, and the cores were 65% busy for those 30 s.
WAITING = ("tests/faults/", "tests/judges_platform/", "tests/judges_thirdparty/", "tests/docs/", "tests/notebooks/",
           "tests/judges/test_provider_servers.py", "tests/security/test_audit_script.py")


def uses_demo(group: str) -> bool:
    """Whether the group's module starts from the demo (tests/commands/lived_in.py's fixtures), which the run
    loads once (tests/demo_snapshot.py) while any other worker that needs it waits."""
    if group not in _uses_demo:
        module = Path(__file__).parent.parent / group.removesuffix("::browser")
        _uses_demo[group] = module.is_file() and "tests.commands.lived_in import" in module.read_text()
    return _uses_demo[group]


_uses_demo: dict[str, bool] = {}


# A worker still holding this many seconds of tests it has not begun is handed a short group (next_group).
HOLDING_LONG_S = 30.0


def next_group(queue: list[str], worker: str, *, holding_long: bool = False) -> str:
    """The group `worker` ('gw0', ...) takes next from `queue` (in group_order): the groups without the browser
    first, even workers those that wait first and odd ones the others first, so that while one waits the other
    keeps the cores busy. Handed out longest first regardless, the waiting groups (the longest) all ran at the
    start and left the cores 25-60% idle for the run's first 300 s (vmstat, 2026-11-29). An odd worker takes
    the groups that start from the demo after its others: the even one's first waiting group (the documentation
    reader) loads it, and the odd one had waited 21 s for that load at its own start.

    A worker `holding_long` (a long group handed to it and not yet run) takes the shortest group of its kind
    instead. pytest-xdist runs a worker's last test only once another is queued behind it, so a one-test group
    (the demo's report walk, 130 s) is always handed out with the next group: that was the next longest (axe
    over the inventory, 100 s), and one worker ran both at the end, 30 s after the others had finished
    (2026-12-07)."""
    waits_first = int(worker.removeprefix("gw")) % 2 == 0
    without = [g for g in queue if not g.endswith("::browser")]
    mine = [g for g in without if g.startswith(WAITING) == waits_first]
    if not waits_first:
        mine.sort(key=uses_demo)  # stable: longest first within each kind
    pool = mine or without or queue
    if holding_long:
        if not waits_first:
            pool = [g for g in pool if not uses_demo(g)] or pool
        return pool[-1]
    return pool[0]


def pytest_xdist_make_scheduler(config, log):
    """--dist loadgroup, the groups handed out in group_order."""
    if config.getvalue("dist") == "loadgroup":
        from xdist.scheduler import LoadGroupScheduling

        class LongestFirstBrowserLast(LoadGroupScheduling):
            """pytest-xdist hands out the groups with the most tests first: that gave a worker a browser group
            before its others (the session's Chromium breaks asyncio.run in the tests after it: see
            tests/conftest.py), and the demo's report walk (one test, 150 s) last, to end alone."""

            _ordered = False
            _seconds: dict[str, float] = {}

            def _assign_work_unit(self, node) -> None:
                if not self._ordered:
                    self._ordered = True
                    self._seconds = json.loads(GROUP_SECONDS.read_text()) if GROUP_SECONDS.exists() else {}
                    units = dict(self.workqueue)
                    order = group_order({g: len(tests) for g, tests in units.items()}, self._seconds)
                    self.workqueue.clear()
                    self.workqueue.update((g, units[g]) for g in order)
                holding = self._seconds_not_begun(node) >= HOLDING_LONG_S
                self.workqueue.move_to_end(next_group(list(self.workqueue), node.gateway.id, holding_long=holding),
                                           last=False)
                super()._assign_work_unit(node)

            def _seconds_not_begun(self, node) -> float:
                """The recorded seconds of the tests handed to `node` that it has not finished (a share of each
                group's seconds by its tests; a group never recorded at one second a test)."""
                left = 0.0
                for group, tests in self.assigned_work.get(node, {}).items():
                    pending = sum(not done for done in tests.values())
                    if pending:
                        left += self._seconds.get(group, float(len(tests))) * pending / len(tests)
                return left

        return LongestFirstBrowserLast(config, log)
    return None


def record_group_seconds(junit_xml: Path) -> dict[str, float]:
    """Each group's seconds in a pytest-xdist run's --junitxml (test names end in @group), for GROUP_SECONDS:
    python -c 'from tests.parallel import *; record_group_seconds(Path("run.xml"))'."""
    import xml.etree.ElementTree as ET

    seconds: dict[str, float] = {}
    for case in ET.parse(junit_xml).iter("testcase"):
        # JUnit splits the node id at its last "::" (outside the parameters): "...@tests/x.py" + "browser"
        address = f"{case.get('classname', '')}::{case.get('name', '')}"
        if "@" in address:
            group = address.rsplit("@", 1)[1]
            seconds[group] = seconds.get(group, 0.0) + float(case.get("time", 0))
    seconds = {group: round(s, 1) for group, s in sorted(seconds.items())}
    GROUP_SECONDS.write_text(json.dumps(seconds, indent=0) + "\n")
    return seconds


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


def pytest_collection_finish(session):
    """Refuse to run when pytest-xdist did not group: each test would then be a unit of its own, module fixtures
    would be set up again on both workers, and two of the docs reader's servers would share one Redis database
    and take each other's tasks. pytest-xdist marks a grouped test by its node id (test@group), which pytest 9.2
    no longer lets it change (pytest-dev/pytest-xdist#1386): pyproject pins pytest 9.1."""
    config = session.config
    if not hasattr(config, "workerinput") or not config.getvalue("loadgroup"):
        return
    ungrouped = [item.nodeid for item in session.items if "@" not in item.nodeid.rsplit("]", 1)[-1]]
    if ungrouped:
        raise pytest.UsageError(f"pytest-xdist did not put {len(ungrouped)} tests in their module's group "
                                f"(first: {ungrouped[0]}): see tests/parallel.py")
