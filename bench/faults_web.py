"""Web-side fault scenarios (DESIGN.md: "a rating is never lost or stored twice: ... a killed web or
worker process, a database restart"). Raters at full speed against real gunicorn while:

- run_worker_kills: gunicorn worker processes are SIGKILLed while submits are in flight (the master
  respawns them);
- run_postgres_restarts: the PostgreSQL server is crash-restarted (`pg_ctl restart -m immediate`) under
  load; a private cluster in a tmp dir, never the machine's own server.

The raters are loadclient.resilient_rater: a request cut off or answered 5xx is repeated unchanged (same
assignment token, same answers) until acknowledged. Each scenario returns a verdict dict: every
acknowledged rating present exactly once, nothing duplicated or over-assigned, nothing half-stored, and
the study finished (every item rated raters_per_item times) after the faults.

    python -m bench.faults_web            # both scenarios at the test size, verdicts as JSON
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import json
import os
import secrets
import shutil
import signal
import subprocess
import tempfile
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from bench.loadclient import (RATINGS_PER_SUBMIT, LoadStats, audit, free_port, resilient_rater, server_log_tail,
                              setup_study, start_server, stop_server, warm_up, worker_pids)

RESPAWN_TIMEOUT_S = 30.0
FaultInjector = Callable[[LoadStats, asyncio.Task], Awaitable[list[float]]]


# ---------------------------------------------------------------- Django pointed at a throwaway database


@contextlib.contextmanager
def _django_database_restored() -> Iterator[None]:
    """Put settings.DATABASES["default"] back as it was afterwards (bench_database leaves NAME on the
    dropped database; later tests in the same process must find theirs)."""
    from django.conf import settings
    from django.db import connections

    default = settings.DATABASES["default"]
    saved = dict(default)
    try:
        yield
    finally:
        connections.close_all()
        default.clear()  # same dict object: Django's connection handler holds it
        default.update(saved)


@contextlib.contextmanager
def _bench_db() -> Iterator[str]:
    """A fresh migrated database on $DATABASE_URL's server; yields its name."""
    import django
    from django.apps import apps

    from bench.dbtools import bench_database

    if apps.ready:  # already set up (pytest-django, main()): bench_database would set it up again
        django._concord_setup = True
    with _django_database_restored(), bench_database("faults_web") as name:
        yield name


# ---------------------------------------------------------------- a private PostgreSQL cluster


def _pg_bin() -> Path:
    # The pgserver wheel's bundled server binaries (config/embedded.py runs the same ones); found without
    # importing pgserver, whose import sets up locks in the user's runtime dir.
    spec = importlib.util.find_spec("pgserver")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("the pgserver package is not installed")
    return Path(list(spec.submodule_search_locations)[0]) / "pginstall" / "bin"


@dataclass
class PrivateCluster:
    root: Path
    port: int
    run_as: tuple[int, int] | None  # (uid, gid) the server runs as; None: this process's user

    @property
    def pgdata(self) -> Path:
        return self.root / "data"

    def url(self, dbname: str) -> str:
        return f"postgres://postgres@127.0.0.1:{self.port}/{dbname}"

    def pg_ctl(self, *args: str, timeout: float = 60) -> subprocess.CompletedProcess:
        return _run_pg("pg_ctl", "-D", str(self.pgdata), "-l", str(self.root / "server.log"), *args,
                       run_as=self.run_as, timeout=timeout)

    def crash_restart(self) -> None:
        """Kill every server process at once (no checkpoint, WAL replay on start) and start again;
        returns once it accepts connections."""
        self.pg_ctl("restart", "-m", "immediate", "-w", "-t", "60", timeout=90)

    def log_tail(self, chars: int = 3000) -> str:
        path = self.root / "server.log"
        return path.read_text(errors="replace")[-chars:] if path.exists() else ""


def _run_pg(program: str, *args: str, run_as: tuple[int, int] | None, timeout: float) -> subprocess.CompletedProcess:
    user = {"user": run_as[0], "group": run_as[1], "extra_groups": []} if run_as else {}
    # stdout to a file, not a pipe: pg_ctl start leaves the server holding its stdout
    with tempfile.TemporaryFile() as out:
        proc = subprocess.run([str(_pg_bin() / program), *args], stdout=out, stderr=subprocess.STDOUT, cwd="/",
                              timeout=timeout, check=False, **user)
        out.seek(0)
        text = out.read().decode(errors="replace")
    if proc.returncode != 0:
        raise RuntimeError(f"{program} {' '.join(args)} failed ({proc.returncode}): {text[-2000:]}")
    return proc


@contextlib.contextmanager
def private_postgres() -> Iterator[PrivateCluster]:
    """A PostgreSQL cluster of its own on a free 127.0.0.1 port, in a tmp dir removed afterwards.
    PostgreSQL refuses to run as root, so under root it runs as `nobody`."""
    run_as = None
    if os.geteuid() == 0:
        import pwd

        entry = pwd.getpwnam("nobody")
        run_as = (entry.pw_uid, entry.pw_gid)
    root = Path(tempfile.mkdtemp(prefix="concord-faults-pg-"))
    cluster = PrivateCluster(root=root, port=free_port(), run_as=run_as)
    started = False
    try:
        if run_as:
            os.chown(root, *run_as)
        _run_pg("initdb", "-D", str(cluster.pgdata), "--auth=trust", "-U", "postgres", "--encoding=UTF8",
                "--no-sync", run_as=run_as, timeout=120)
        with (cluster.pgdata / "postgresql.conf").open("a") as conf:
            conf.write(f"\nport = {cluster.port}\nlisten_addresses = '127.0.0.1'\n"
                       "unix_socket_directories = ''\nmax_connections = 100\n")
        cluster.pg_ctl("start", "-w", "-t", "60", timeout=90)
        started = True
        yield cluster
    finally:
        if started:
            with contextlib.suppress(Exception):
                cluster.pg_ctl("stop", "-m", "immediate", "-w", "-t", "30", timeout=60)
        shutil.rmtree(root, ignore_errors=True)


@contextlib.contextmanager
def _private_db(cluster: PrivateCluster, dbname: str = "concord_faults") -> Iterator[str]:
    """A migrated database on the private cluster with Django pointed at it; yields its URL."""
    import psycopg
    from django.conf import settings
    from django.core.management import call_command
    from django.db import connections

    with psycopg.connect(host="127.0.0.1", port=cluster.port, user="postgres", dbname="postgres",
                         autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{dbname}"')
    with _django_database_restored():
        connections.close_all()
        default = settings.DATABASES["default"]
        default.update(NAME=dbname, HOST="127.0.0.1", PORT=cluster.port, USER="postgres", PASSWORD="")
        default["OPTIONS"] = {k: v for k, v in default.get("OPTIONS", {}).items() if k != "host"}
        call_command("migrate", verbosity=0)
        yield cluster.url(dbname)


# ---------------------------------------------------------------- load with faults, and the verdict


async def _load_with_faults(base: str, slug: str, sessions: list[str], time_limit_s: float,
                            inject: FaultInjector) -> tuple[LoadStats, list[float], float]:
    """Run every rater to the end while `inject` causes faults; returns (stats, fault times, seconds)."""
    await warm_up(base, slug, sessions[0])  # cold workers are slow to answer at first; not part of the fault
    stats = LoadStats()
    started = time.monotonic()
    deadline = started + time_limit_s
    raters = asyncio.gather(*(resilient_rater(i, base, slug, key, stats, deadline) for i, key in enumerate(sessions)))
    load = asyncio.ensure_future(raters)
    faults = await inject(stats, load)
    await load
    return stats, faults, time.monotonic() - started


async def _when_progress(stats: LoadStats, load: asyncio.Task, submits: float) -> bool:
    """Wait until `submits` submits are acknowledged and another is in flight; False if the load ended."""
    while not load.done():
        if len(stats.acknowledged) >= submits and stats.inflight_submits > 0:
            return True
        await asyncio.sleep(0.005)
    return False


def _progress(slug: str) -> dict:
    """What the database holds: items rated raters_per_item times, submits not stored whole, ratings of
    assignments never submitted (a half-stored submit would show in one of the last two)."""
    from django.db import connection

    from annotation.models import Study

    study = Study.objects.get(slug=slug)
    with connection.cursor() as cursor:
        cursor.execute(
            """SELECT count(*) FROM (SELECT item_id FROM annotation_assignment WHERE study_id = %s AND status = 'submitted'
                                     GROUP BY item_id HAVING count(*) >= %s) full_items""",
            [study.pk, study.raters_per_item])
        completed = cursor.fetchone()[0]
        cursor.execute(
            """SELECT count(*) FROM (SELECT a.id FROM annotation_assignment a
                                     LEFT JOIN annotation_rating r ON r.assignment_id = a.id AND r.criterion <> 'highlights'
                                     WHERE a.study_id = %s AND a.status = 'submitted' GROUP BY a.id
                                     HAVING count(r.id) <> %s) partial""", [study.pk, RATINGS_PER_SUBMIT])
        incomplete = cursor.fetchone()[0]
        cursor.execute(
            """SELECT count(*) FROM annotation_rating r JOIN annotation_assignment a ON a.id = r.assignment_id
               WHERE a.study_id = %s AND a.status <> 'submitted'""", [study.pk])
        orphans = cursor.fetchone()[0]
    return {"completed_items": completed, "expected_items": study.items.count(),
            "stored_incomplete": incomplete, "ratings_not_submitted": orphans}


def _verdict(slug: str, stats: LoadStats, faults: list[float], seconds: float, **extra) -> dict:
    found = audit(slug, stats.acknowledged)
    progress = _progress(slug)
    recoveries = [(stats.first_success_after(t) or float("inf")) - t for t in faults]
    verdict = {
        "acknowledged": found["acknowledged"], "stored": found["stored"], "lost": found["lost_or_incomplete"],
        "duplicated": found["duplicate_ratings"], "over_assigned": found["over_assigned_items"],
        "stored_not_acknowledged": found["stored_not_acknowledged"], "rater_item_twice": found["rater_item_twice"],
        "active_left": found["active_left"], **progress,
        "faults": len(faults), "recovery_s": round(max(recoveries), 3) if recoveries else None,
        "interrupted_submits": stats.interrupted("submit"), "interrupted_next": stats.interrupted("next"),
        "server_errors_5xx": stats.server_errors(), "submit_5xx": stats.server_errors("submit"),
        "unexpected": len(stats.unexpected),
        "unexpected_sample": stats.unexpected[:3], "raters_done": stats.done_raters,
        "raters_gave_up": stats.gave_up_raters, "seconds": round(seconds, 2), **extra,
    }
    verdict["passed"] = bool(
        verdict["faults"] > 0 and verdict["lost"] == 0 and verdict["duplicated"] == 0
        and verdict["over_assigned"] == 0 and verdict["stored_not_acknowledged"] == 0
        and verdict["rater_item_twice"] == 0 and verdict["stored_incomplete"] == 0
        and verdict["ratings_not_submitted"] == 0 and verdict["unexpected"] == 0 and verdict["raters_gave_up"] == 0
        and verdict["completed_items"] == verdict["expected_items"] and verdict["active_left"] == 0
        and verdict["acknowledged"] == verdict["expected_items"] * extra["raters_per_item"]
        and all(r != float("inf") for r in recoveries))
    return verdict


def _fault_points(n_faults: int, first: float = 0.2, last: float = 0.6) -> list[float]:
    """Shares of the expected submits at which to strike: spread over the run, never at its very end."""
    if n_faults == 1:
        return [first]
    return [first + (last - first) * k / (n_faults - 1) for k in range(n_faults)]


# ---------------------------------------------------------------- scenario a: web workers SIGKILLed


def _busiest_worker(server: subprocess.Popen, port: int) -> int | None:
    """The worker holding the most client connections now (its death cuts off the most requests)."""
    import psutil

    best, most = None, -1
    for pid in worker_pids(server):
        try:
            conns = psutil.Process(pid).net_connections(kind="tcp")
        except psutil.Error:
            continue
        n = sum(1 for c in conns if c.status == psutil.CONN_ESTABLISHED and c.laddr and c.laddr.port == port)
        if n > most:
            best, most = pid, n
    return best


def run_worker_kills(*, raters: int = 20, n_items: int = 100, raters_per_item: int = 3, kills: int = 3,
                     max_kills: int = 8, time_limit_s: float = 45.0) -> dict:
    """Scenario a. SIGKILL the busiest gunicorn worker `kills` times while submits are in flight, more
    (up to max_kills) until at least one submit has been cut off mid-request."""
    with _bench_db() as db_name:
        secret_key = secrets.token_urlsafe(40)
        slug, sessions = setup_study(n_items, secret_key, raters=raters, raters_per_item=raters_per_item,
                                     name="faults: web worker killed")
        port = free_port()
        server = start_server(port, secret_key, db_name=db_name)
        respawn_s: list[float] = []
        expected = n_items * raters_per_item

        async def kill_workers(stats: LoadStats, load: asyncio.Task) -> list[float]:
            times: list[float] = []
            points = _fault_points(kills) + [0.7 + 0.03 * k for k in range(max_kills - kills)]
            for share in points:
                if len(times) >= kills and stats.interrupted("submit") > 0:
                    break
                if not await _when_progress(stats, load, share * expected):
                    break
                victim = _busiest_worker(server, port)
                if victim is None:
                    raise RuntimeError("gunicorn has no workers to kill")
                before = set(worker_pids(server))
                times.append(time.monotonic())
                os.kill(victim, signal.SIGKILL)
                # the master notices the death and forks a replacement; wait for it before the next kill
                while time.monotonic() - times[-1] < RESPAWN_TIMEOUT_S:
                    if set(worker_pids(server)) - before:
                        respawn_s.append(time.monotonic() - times[-1])
                        break
                    await asyncio.sleep(0.01)
                else:
                    raise RuntimeError("gunicorn did not respawn a killed worker\n" + server_log_tail(server))
            return times

        try:
            stats, faults, seconds = asyncio.run(
                _load_with_faults(f"http://127.0.0.1:{port}", slug, sessions, time_limit_s, kill_workers))
        finally:
            stop_server(server)
        verdict = _verdict(slug, stats, faults, seconds, scenario="web worker killed mid-submit",
                           raters=raters, items=n_items, raters_per_item=raters_per_item, kills=len(faults),
                           respawn_s=round(max(respawn_s), 3) if respawn_s else None)
        # proof the fault happened as meant: some submit was cut off by a kill and then sent again
        verdict["passed"] = verdict["passed"] and verdict["interrupted_submits"] > 0
        return verdict


# ---------------------------------------------------------------- scenario b: PostgreSQL crash-restarted


def run_postgres_restarts(*, raters: int = 20, n_items: int = 100, raters_per_item: int = 3, restarts: int = 2,
                          time_limit_s: float = 45.0) -> dict:
    """Scenario b. Crash-restart a private PostgreSQL (pg_ctl restart -m immediate) `restarts` times
    while submits are in flight; gunicorn keeps its workers and must reconnect."""
    with private_postgres() as cluster, _private_db(cluster) as db_url:
        secret_key = secrets.token_urlsafe(40)
        slug, sessions = setup_study(n_items, secret_key, raters=raters, raters_per_item=raters_per_item,
                                     name="faults: postgres restarted")
        port = free_port()
        server = start_server(port, secret_key, database_url=db_url)
        restart_s: list[float] = []
        back_at: list[float] = []  # when each restart had returned: PostgreSQL accepting connections again
        expected = n_items * raters_per_item

        async def restart_postgres(stats: LoadStats, load: asyncio.Task) -> list[float]:
            times: list[float] = []
            for share in _fault_points(restarts, 0.25, 0.6):
                if not await _when_progress(stats, load, share * expected):
                    break
                times.append(time.monotonic())
                await asyncio.to_thread(cluster.crash_restart)
                back_at.append(time.monotonic())
                restart_s.append(back_at[-1] - times[-1])
            return times

        try:
            stats, faults, seconds = asyncio.run(
                _load_with_faults(f"http://127.0.0.1:{port}", slug, sessions, time_limit_s, restart_postgres))
        except Exception as exc:
            raise RuntimeError(f"{exc}\n--- postgres log ---\n{cluster.log_tail()}") from exc
        finally:
            server_log = server_log_tail(server, 4000)
            stop_server(server)
        from django.db import connections

        connections.close_all()  # the test process's own connection died in the restart too
        # With CONN_HEALTH_CHECKS a worker thread's connection that died in the restart is replaced before
        # use, so a request sent once PostgreSQL is back (and answered before the next restart) never
        # fails: a 5xx there would be a stale connection reused.
        after = sum(stats.server_errors_within(back, next_fault)
                    for back, next_fault in zip(back_at, faults[1:] + [float("inf")]))
        verdict = _verdict(slug, stats, faults, seconds, scenario="postgres crash-restarted under load",
                           raters=raters, items=n_items, raters_per_item=raters_per_item, restarts=len(faults),
                           restart_s=round(max(restart_s), 3) if restart_s else None,
                           server_errors_after_restart=after,
                           statuses=dict(Counter(reason for _, reason, _, _ in stats.failed)))
        # gunicorn stays up, so every request is answered: a failure is a clean 5xx, never a hang (timeout)
        # or a dropped connection; and some submit did meet a restart
        unanswered = verdict["interrupted_submits"] + verdict["interrupted_next"]
        verdict["passed"] = verdict["passed"] and after == 0 and unanswered == 0 and verdict["submit_5xx"] > 0
        if not verdict["passed"]:
            verdict["server_log_tail"] = server_log
        return verdict


def main() -> None:
    import django

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    os.environ.setdefault("CONCORD_TESTING", "1")
    django.setup()
    for scenario in (run_worker_kills, run_postgres_restarts):
        print(json.dumps(scenario(), default=str), flush=True)


if __name__ == "__main__":
    main()
