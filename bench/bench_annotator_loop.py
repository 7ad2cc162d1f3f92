"""The annotator loop under load: 100 simulated raters against gunicorn on PostgreSQL.

Each rater holds a session cookie and loops: POST /api/studies/<slug>/rate/next/, think, POST .../submit/
with a complete RRGen answer (3 responses x 5 criteria, sometimes a highlight). One submit in twenty is
sent twice at once, as a double click would. Three phases:

- human pace: think times drawn from DESIGN.md's 5-15 s per item (times BENCH_THINK_SCALE, default 1;
  a smaller scale shortens the think time and raises the load); targets p95 < 100 ms for next-item
  and submit;
- saturation, two requests per item (next, then submit): no think time; rated items per second;
- saturation, one request per item: submit?next=1 returns the next item, as the browser workspace gets
  it (htmx swaps the next item in on submit); rated items per second (target >= 150/s);
- the same phase on a study ten times larger (default 40,000 items; full 200,000): the rate must stay
  within 10% (the item pick walks an index, so it must not grow with the study).

Afterwards the database is audited: every acknowledged submit is present exactly once (15 ratings,
no duplicates), no submit is stored that was not acknowledged, no item has more live assignments than
raters_per_item, and nobody rated an item twice.

    python -m bench annotator_loop            # default size, about 1-2 minutes
    python -m bench annotator_loop --full     # longer phases, more items
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import random
import secrets
import shutil
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from bench.dbtools import bench_database
from bench.loadclient import answers, free_port, rater_client, setup_study, start_server, stop_server, warm_up
from bench.loadclient import audit as db_audit

RATERS = 100
RATERS_PER_ITEM = 3
THINK_SECONDS = (5.0, 15.0)  # DESIGN.md: a human rates an item in 5-15 s
# 1.0 is DESIGN.md's pace (100 raters ~ 10 items/s); below 1 the "human" phase is proportionally heavier.
THINK_SCALE = float(os.environ.get("BENCH_THINK_SCALE", "1.0"))
TARGET_P95_MS = 50.0
TARGET_ITEMS_PER_S = 150.0
FLAT_WITHIN = 0.10  # the rate on a study ten times larger may be at most this much lower


@dataclass
class Phase:
    name: str
    seconds: float
    think: tuple[float, float] | None
    one_trip: bool = False  # submit?next=1: the submit's answer carries the next item
    lean_client: bool = False  # bench.leanhttp instead of httpx (1,000 raters: the client's CPU is the server's)
    next_ms: list[float] = field(default_factory=list)
    submit_ms: list[float] = field(default_factory=list)
    next_sent: list[float] = field(default_factory=list)  # when each of next_ms was asked (perf_counter)
    submit_sent: list[float] = field(default_factory=list)  # when each of submit_ms was sent
    acknowledged: set[str] = field(default_factory=set)  # tokens whose submit returned 200
    acknowledged_at: list[float] = field(default_factory=list)  # when each acknowledgement came (perf_counter)
    errors: list[str] = field(default_factory=list)
    started: float = 0.0
    ended: float = 0.0
    client_cpu_s: float = 0.0
    server_cpu_s: float = 0.0  # gunicorn, all processes
    db_cpu_s: float | None = None  # the PostgreSQL backends serving gunicorn; None when not on this machine
    done_raters: int = 0


def _setup(n_items: int, secret_key: str, *, name: str = "bench annotator loop",
           user_prefix: str = "bench-rater") -> tuple[str, list[str]]:
    """A study, its items and RATERS annotators with sessions signed with the server's secret key;
    returns (slug, session keys)."""
    return setup_study(n_items, secret_key, raters=RATERS, raters_per_item=RATERS_PER_ITEM, name=name,
                       user_prefix=user_prefix)


async def _rater(i: int, base: str, slug: str, session_key: str, phase: Phase, stop_at: float) -> None:
    rng = random.Random(i)
    async with rater_client(base, session_key, timeout=30, lean=phase.lean_client) as client:
        if phase.think:  # raters arrive over the first think interval, not all in the same millisecond
            await asyncio.sleep(rng.uniform(0, phase.think[1]))
        data = None  # the rate/next/ body in hand (one-trip phase), else fetched
        while time.perf_counter() < stop_at:
            if data is None:
                t0 = time.perf_counter()
                try:
                    resp = await client.post(f"/api/studies/{slug}/rate/next/")
                except httpx.HTTPError as exc:
                    phase.errors.append(f"next: {exc!r}")
                    continue
                phase.next_ms.append((time.perf_counter() - t0) * 1000)
                phase.next_sent.append(t0)
                if resp.status_code != 200:
                    phase.errors.append(f"next: HTTP {resp.status_code} {resp.text[:200]}")
                    await asyncio.sleep(0.5)
                    continue
                data = resp.json()
            if data["assignment"] is None:
                phase.done_raters += 1
                return
            assignment, data = data["assignment"], None
            if phase.think:
                await asyncio.sleep(rng.uniform(*phase.think))
            body = {"answers": answers(rng, assignment["responses"]), "time_on_task_ms": rng.randint(5000, 15000)}
            url = f"/api/studies/{slug}/rate/{assignment['token']}/submit/" + ("?next=1" if phase.one_trip else "")
            double = rng.random() < 0.05
            t0 = time.perf_counter()
            try:
                if double:  # a double click: two identical submits at once
                    results = await asyncio.gather(client.post(url, json=body), client.post(url, json=body))
                else:
                    results = [await client.post(url, json=body)]
            except httpx.HTTPError as exc:
                phase.errors.append(f"submit: {exc!r}")
                continue
            phase.submit_ms.append((time.perf_counter() - t0) * 1000)
            phase.submit_sent.append(t0)
            if all(r.status_code == 200 for r in results):
                phase.acknowledged.add(assignment["token"])
                phase.acknowledged_at.append(time.perf_counter())
                if phase.one_trip:
                    data = results[-1].json()["next"]
            else:
                phase.errors.append(f"submit: HTTP {[r.status_code for r in results]} {results[0].text[:200]}")


async def _run_phase(base: str, slug: str, sessions: list[str], phase: Phase) -> None:
    logging.getLogger("httpx").setLevel(logging.WARNING)  # one INFO line per request otherwise
    phase.started, cpu = time.perf_counter(), time.process_time()
    stop_at = phase.started + phase.seconds
    await asyncio.gather(*(_rater(i, base, slug, key, phase, stop_at) for i, key in enumerate(sessions)))
    phase.ended = time.perf_counter()
    phase.client_cpu_s = time.process_time() - cpu


SERVER_APP_NAME = "concord-bench-gunicorn"  # PGAPPNAME: tags the server's PostgreSQL sessions


def _server_cpu_s(server) -> float:
    """CPU seconds used so far by gunicorn's master and workers."""
    import psutil

    total = 0.0
    for proc in [psutil.Process(server.pid), *psutil.Process(server.pid).children(recursive=True)]:
        with contextlib.suppress(psutil.Error):
            times = proc.cpu_times()
            total += times.user + times.system
    return total


def _db_cpu_by_backend() -> dict[int, float] | None:
    """CPU seconds so far of each PostgreSQL backend serving gunicorn; None when the server's processes
    cannot be read (PostgreSQL on another machine)."""
    import psutil
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT pid FROM pg_stat_activity WHERE application_name = %s", [SERVER_APP_NAME])
        pids = [row[0] for row in cursor.fetchall()]
    out = {}
    for pid in pids:
        try:
            times = psutil.Process(pid).cpu_times()
        except psutil.Error:
            return None
        out[pid] = times.user + times.system
    return out


def _as_autovacuum_would(autovacuum: bool) -> None:
    """Fresh statistics before a phase when the server runs without autovacuum (some test machines):
    otherwise plans made while the assignment and rating tables were empty (sequential scans, the
    foreign-key checks' among them) stay cached for the whole run, which no real server would see."""
    if autovacuum:
        return
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("ANALYZE annotation_assignment, annotation_rating, annotation_item, annotation_studymember")


class _AutovacuumStandIn(threading.Thread):
    """On a server without autovacuum, VACUUM ANALYZE the loop's tables once per autovacuum_naptime
    (PostgreSQL's default: a minute), as the autovacuum launcher would: without it a long phase
    piles up dead row versions (every pick updates the item's hint and the rater's cursor)."""

    TABLES = "annotation_assignment, annotation_rating, annotation_item, annotation_studymember"

    def __init__(self, naptime_s: float):
        super().__init__(daemon=True)
        from django.db import connection

        self.params = connection.get_connection_params()
        self.naptime_s = naptime_s
        self.halt = threading.Event()
        self.runs = 0

    def run(self) -> None:
        import psycopg

        with psycopg.connect(**self.params, autocommit=True) as conn:
            while not self.halt.wait(self.naptime_s):
                conn.execute(f"VACUUM ANALYZE {self.TABLES}")
                self.runs += 1



def autovacuum_and_stand_in() -> tuple[bool, "_AutovacuumStandIn | None"]:
    """Whether the server runs autovacuum, and the stand-in to start when it does not."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SHOW autovacuum")
        autovacuum = cursor.fetchone()[0] == "on"
        cursor.execute("SELECT setting::int FROM pg_settings WHERE name = 'autovacuum_naptime'")
        naptime_s = cursor.fetchone()[0]
    return autovacuum, None if autovacuum else _AutovacuumStandIn(naptime_s)

def _measured_phase(base: str, slug: str, sessions: list[str], phase: Phase, server) -> None:
    server_before, db_before = _server_cpu_s(server), _db_cpu_by_backend()
    asyncio.run(_run_phase(base, slug, sessions, phase))
    phase.server_cpu_s = _server_cpu_s(server) - server_before
    db_after = _db_cpu_by_backend()
    if db_before is not None and db_after is not None:  # connections are persistent (CONN_MAX_AGE)
        phase.db_cpu_s = sum(cpu - db_before.get(pid, 0.0) for pid, cpu in db_after.items())


def _pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))]


def run(full: bool = False) -> dict:
    human_s, saturation_s, n_items = (120.0, 60.0, 20_000) if full else (40.0, 20.0, 4_000)
    think = (THINK_SECONDS[0] * THINK_SCALE, THINK_SECONDS[1] * THINK_SCALE)
    large_items = 10 * n_items
    # At saturation the raters use the lean client, as the 1,000-rater phase does: httpx spent about 5 ms of
    # CPU per rated item on the two cores the server measured here runs on (a third of the server's own).
    phases = [Phase("human pace", human_s, think), Phase("saturation", saturation_s, None, lean_client=True),
              Phase("saturation, one request per item", saturation_s, None, one_trip=True, lean_client=True)]
    large = Phase(f"saturation, one request per item, {large_items:,} items", saturation_s, None, one_trip=True,
                  lean_client=True)
    with bench_database("annotator") as db_name:
        secret_key = secrets.token_urlsafe(40)
        slug, sessions = _setup(n_items, secret_key)
        large_slug, large_sessions = _setup(large_items, secret_key, name="bench annotator loop, large",
                                            user_prefix="bench-large")
        from django.db import connection

        with connection.cursor() as cursor:
            cursor.execute("ANALYZE")  # fresh statistics, as autovacuum would give a long-lived study
        autovacuum, stand_in = autovacuum_and_stand_in()
        port = free_port()
        server = start_server(port, secret_key, db_name=db_name, extra_env={"PGAPPNAME": SERVER_APP_NAME})
        if stand_in:
            stand_in.start()
        try:
            base = f"http://127.0.0.1:{port}"
            asyncio.run(warm_up(base, slug, sessions[0]))
            for phase in phases:
                _as_autovacuum_would(autovacuum)
                _measured_phase(base, slug, sessions, phase, server)
            asyncio.run(warm_up(base, large_slug, large_sessions[0]))
            _as_autovacuum_would(autovacuum)
            _measured_phase(base, large_slug, large_sessions, large, server)
        finally:
            if stand_in:
                stand_in.halt.set()
                stand_in.join()
            stop_server(server)
        audit = db_audit(slug, set().union(*(p.acknowledged for p in phases)))
        large_audit = db_audit(large_slug, large.acknowledged)
    for key in ("lost_or_incomplete", "duplicate_ratings", "stored_not_acknowledged", "over_assigned_items",
                "rater_item_twice", "acknowledged"):
        audit[key] += large_audit[key]
    phases.append(large)
    rows = []
    for phase in phases:
        duration = phase.ended - phase.started
        timings = ((("submit + next item", phase.submit_ms),) if phase.one_trip else
                   (("next item", phase.next_ms), ("submit", phase.submit_ms)))
        for label, values in timings:
            for q in (50, 95, 99):
                target = f"< {TARGET_P95_MS:.0f} ms" if q == 95 and phase.think else None
                value = _pct(values, q)
                rows.append({"metric": f"{phase.name}: {label} p{q}", "value": value, "unit": "ms",
                             "target": target, "ok": (value < TARGET_P95_MS) if target else None})
        rate = len(phase.acknowledged) / duration if duration else 0.0
        # DESIGN.md's saturation target, judged on the loop as the browser runs it (one request per item).
        judged = phase.one_trip
        rows.append({"metric": f"{phase.name}: rated items/s", "value": rate, "unit": "items/s",
                     "target": f">= {TARGET_ITEMS_PER_S:.0f}" if judged else None,
                     "ok": rate >= TARGET_ITEMS_PER_S if judged else None})
        rows.append({"metric": f"{phase.name}: requests failed", "value": float(len(phase.errors)), "unit": "",
                     "target": "0", "ok": not phase.errors})
        # The simulated raters share the machine with the server; this is their share of it.
        rows.append({"metric": f"{phase.name}: load generator CPU", "value": phase.client_cpu_s / duration,
                     "unit": "cores", "target": None, "ok": None})
        if not phase.think:  # where a rated item's CPU goes, at saturation
            n = max(len(phase.acknowledged), 1)
            for label, cpu_s in (("gunicorn", phase.server_cpu_s), ("PostgreSQL", phase.db_cpu_s),
                                 ("load generator", phase.client_cpu_s)):
                if cpu_s is not None:
                    rows.append({"metric": f"{phase.name}: {label} CPU per rated item", "value": 1000 * cpu_s / n,
                                 "unit": "ms", "target": None, "ok": None})
    base_rate, large_rate = (len(p.acknowledged) / (p.ended - p.started) for p in (phases[2], large))
    rows.append({"metric": f"flatness: rate at {large_items:,} items / at {n_items:,}", "value": large_rate / base_rate,
                 "unit": "", "target": f">= {1 - FLAT_WITHIN:.2f}", "ok": large_rate / base_rate >= 1 - FLAT_WITHIN})
    for key, label in (("lost_or_incomplete", "acknowledged submits lost or incomplete"),
                       ("duplicate_ratings", "duplicated ratings"),
                       ("stored_not_acknowledged", "submits stored but not acknowledged"),
                       ("over_assigned_items", "over-assigned items"),
                       ("rater_item_twice", "raters given an item twice")):
        rows.append({"metric": f"audit: {label}", "value": float(audit[key]), "unit": "", "target": "0",
                     "ok": audit[key] == 0})
    rows.append({"metric": "audit: acknowledged submits", "value": float(audit["acknowledged"]), "unit": "items",
                 "target": None, "ok": None})
    return {
        "name": "annotator_loop", "rows": rows, "audit": audit,
        "config": {"raters": RATERS, "raters_per_item": RATERS_PER_ITEM, "items": n_items,
                   "think_s": think, "phases_s": [p.seconds for p in phases],
                   "server": "gunicorn 4 workers x 4 threads (gthread), DEBUG=0",
                   "client": "asyncio + httpx at a human pace; bench/leanhttp.py at saturation",
                   "double_submit_share": 0.05, "autovacuum": autovacuum,
                   "vacuum_stand_in_runs": stand_in.runs if stand_in else None},
        "samples": {p.name: {"next": len(p.next_ms), "submit": len(p.submit_ms), "errors": p.errors[:20]}
                    for p in phases},
    }



# ---------------------------------------------------------------- 1,000 raters through PgBouncer

THOUSAND = 1000
POOLED_WEB_PROCESSES = int(os.environ.get("BENCH_1K_WORKERS", "2"))  # the Dockerfile runs 4 x 4
POOLED_THREADS = int(os.environ.get("BENCH_1K_THREADS", "16"))  # per web process (each a PgBouncer client)
POOL_SIZE = 10  # PostgreSQL connections PgBouncer keeps for the two web processes
# How the web processes reach PgBouncer: "unix" (its socket, as a PgBouncer beside them) or "tcp" (127.0.0.1).
POOLED_SOCKET = os.environ.get("BENCH_1K_SOCKET", "unix")
POOLED_APP_NAME = "concord-bench-pooled"


def _database_backends(db_name: str) -> dict[int, float]:
    """CPU seconds so far of every PostgreSQL backend on `db_name` but this process's own (through
    PgBouncer the server connections carry no application name of ours)."""
    import psutil
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT pid FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()"
                       " AND backend_type = 'client backend'", [db_name])
        pids = [row[0] for row in cursor.fetchall()]
    out = {}
    for pid in pids:
        with contextlib.suppress(psutil.Error):
            times = psutil.Process(pid).cpu_times()
            out[pid] = times.user + times.system
    return out


class _BackendCounter(threading.Thread):
    """The most PostgreSQL connections the web processes held on the bench database (through
    PgBouncer), sampled every 0.2 s and once more when halted (a short phase on a quiet machine
    can end before the first sample; PgBouncer keeps its server connections after it): the
    bench's own two connections are not counted."""

    def __init__(self, db_name: str):
        super().__init__(daemon=True)
        from django.db import connection

        connection.ensure_connection()
        self.params, self.db_name = connection.get_connection_params(), db_name
        self.own_pid = connection.connection.info.backend_pid
        self.halt, self.most = threading.Event(), 0

    def run(self) -> None:
        import psycopg

        with psycopg.connect(**self.params, autocommit=True) as conn:
            while True:
                halted = self.halt.wait(0.2)
                n = conn.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = %s AND backend_type ="
                                 " 'client backend' AND pid NOT IN (pg_backend_pid(), %s)",
                                 [self.db_name, self.own_pid]).fetchone()[0]
                self.most = max(self.most, n)
                if halted:
                    return


def _cpu_s(pid: int) -> float:
    import psutil

    times = psutil.Process(pid).cpu_times()
    return times.user + times.system


# gunicorn's access log: method, path, status, and the time a worker thread spent on the request (ms).
ACCESS_FORMAT = "%(m)s %(U)s %(s)s %(M)s"


def _inside_ms(access_log: Path) -> dict[str, list[float]]:
    """Per request kind, the milliseconds gunicorn spent on each request of the phase (the warm-up's
    requests are GETs, so every POST is the phase's)."""
    out: dict[str, list[float]] = {"next": [], "submit": []}
    if not access_log.exists():
        return out
    for line in access_log.read_text().splitlines():
        parts = line.split()
        if len(parts) != 4 or parts[0] != "POST":
            continue
        kind = "next" if parts[1].endswith("/rate/next/") else "submit" if parts[1].endswith("/submit/") else None
        if kind:
            out[kind].append(float(parts[3]))
    return out


def _reached_by(database_url: str) -> str:
    """How a URL reaches its server: by a Unix socket where it names a directory (?host=/path, as the
    embedded server's URL does), else by TCP."""
    from urllib.parse import parse_qs, urlsplit

    host = parse_qs(urlsplit(database_url).query).get("host", [""])[0]
    return "unix" if host.startswith("/") else "tcp"


COLD_S = 10.0  # the first seconds of the 1,000-rater phase, reported on their own (a launch)


def _sent_within(phase: Phase, lo: float, hi: float) -> dict[str, list[float]]:
    """The next-item and submit times (ms) of the requests sent from lo to hi seconds into the phase."""
    return {label: [ms for ms, at in zip(values, sent, strict=True) if lo <= at - phase.started < hi]
            for label, values, sent in (("next item", phase.next_ms, phase.next_sent),
                                        ("submit", phase.submit_ms, phase.submit_sent))}


def run_thousand(full: bool = False) -> dict:
    """1,000 raters at a human pace (5-15 s per item) through PgBouncer in transaction mode and two
    gunicorn processes: next-item and submit p95 < 50 ms, nothing lost, duplicated or over-assigned.
    bench/loop_variants.py's knobs serve it otherwise (granian, no access log, signed-cookie sessions)."""
    from urllib.parse import urlsplit, urlunsplit

    from bench.loop_variants import knobs, session_env, signed_cookie_sessions, start_granian
    from bench.pgbouncer import pgbouncer_version, pooled_env, running_pgbouncer

    variant = knobs()  # gunicorn with its access log and the project's sessions unless asked otherwise
    inside_rows = variant["server"] == "gunicorn" and variant["access_log"]  # the access log is their source
    seconds, n_items = (180.0, 40_000) if full else (75.0, 12_000)
    seconds = float(os.environ.get("BENCH_1K_SECONDS", seconds))  # a shorter run, to try the setup
    think = (THINK_SECONDS[0] * THINK_SCALE, THINK_SECONDS[1] * THINK_SCALE)
    phase = Phase(f"{THOUSAND:,} raters, human pace, PgBouncer", seconds, think, lean_client=True,
                  one_trip=variant["one_trip"])
    with bench_database("annotator1k") as db_name:
        secret_key = secrets.token_urlsafe(40)
        slug, sessions = setup_study(n_items, secret_key, raters=THOUSAND, raters_per_item=RATERS_PER_ITEM,
                                     name="bench annotator loop, 1,000 raters", user_prefix="bench-1k")
        if variant["sessions"] == "signed_cookies":
            sessions = signed_cookie_sessions(sessions, secret_key)
        from django.db import connection

        with connection.cursor() as cursor:
            cursor.execute("ANALYZE")
            cursor.execute("SHOW autovacuum")
            autovacuum = cursor.fetchone()[0] == "on"
        direct = urlunsplit(urlsplit(os.environ["DATABASE_URL"])._replace(path="/" + db_name))
        access_log = Path(tempfile.mkdtemp(prefix="concord-1k-")) / "access.log"
        args = ["--workers", str(POOLED_WEB_PROCESSES), "--worker-class", "gthread", "--threads", str(POOLED_THREADS),
                "--worker-connections", str(THOUSAND), "--log-level", "warning",
                "--backlog", "2048"]
        if inside_rows:
            args += ["--access-logfile", str(access_log), "--access-logformat", ACCESS_FORMAT]
        counter = _BackendCounter(db_name)
        with running_pgbouncer(direct, pool_size=POOL_SIZE, max_clients=4 * POOLED_WEB_PROCESSES * POOLED_THREADS,
                               unix_socket=POOLED_SOCKET == "unix") as (pooled, bouncer):
            port = free_port()
            server_env = {**pooled_env(), "PGAPPNAME": POOLED_APP_NAME, **session_env(variant["sessions"])}
            if variant["server"] == "granian":
                server = start_granian(port, secret_key, database_url=pooled, workers=POOLED_WEB_PROCESSES,
                                       threads=POOLED_THREADS, extra_env=server_env)
            else:
                server = start_server(port, secret_key, database_url=pooled, gunicorn_args=args, extra_env=server_env)
            try:
                base = f"http://127.0.0.1:{port}"
                # No warm-up: the raters arrive as the server first answers, as at a study's launch on a panel;
                # the first COLD_S seconds are reported on their own.
                _as_autovacuum_would(autovacuum)
                counter.start()
                web_before, db_before, bouncer_before = (_server_cpu_s(server), _database_backends(db_name),
                                                         _cpu_s(bouncer.pid))
                load_before = os.getloadavg()[0]
                asyncio.run(_run_phase(base, slug, sessions, phase))
                load_after = os.getloadavg()[0]
                phase.server_cpu_s = _server_cpu_s(server) - web_before
                db_after = _database_backends(db_name)
                phase.db_cpu_s = sum(cpu - db_before.get(pid, 0.0) for pid, cpu in db_after.items())
                bouncer_cpu_s = _cpu_s(bouncer.pid) - bouncer_before
            finally:
                counter.halt.set()
                stop_server(server)
        counter.join()
        inside = _inside_ms(access_log)
        shutil.rmtree(access_log.parent, ignore_errors=True)
        audit = db_audit(slug, phase.acknowledged)
    duration = phase.ended - phase.started
    n = max(len(phase.acknowledged), 1)
    rows = []
    for label, values in (("next item", phase.next_ms), ("submit", phase.submit_ms)):
        for q in (50, 95, 99):
            value = _pct(values, q)
            target = f"< {TARGET_P95_MS:.0f} ms" if q == 95 else None
            rows.append({"metric": f"{phase.name}: {label} p{q}", "value": value, "unit": "ms", "target": target,
                         "ok": value < TARGET_P95_MS if target else None})
    for window, (lo, hi) in (("first 10 s", (0.0, COLD_S)), ("after 10 s", (COLD_S, float("inf")))):
        sent = _sent_within(phase, lo, hi)
        for label in ("next item", "submit"):
            rows.append({"metric": f"{phase.name}, {window}: {label} p95", "value": _pct(sent[label], 95), "unit": "ms",
                         "target": None, "ok": None})
        rows.append({"metric": f"{phase.name}, {window}: requests answered", "value": float(sum(map(len, sent.values()))),
                     "unit": "", "target": None, "ok": None})
    for label, values in (("next item", inside["next"]), ("submit", inside["submit"])) if inside_rows else ():
        for q in (50, 95):  # from a worker thread taking the request to the answer: no wait for a thread
            rows.append({"metric": f"{phase.name}: {label} p{q} inside gunicorn", "value": _pct(values, q),
                         "unit": "ms", "target": None, "ok": None})
    rows += [
        {"metric": f"{phase.name}: rated items/s", "value": len(phase.acknowledged) / duration, "unit": "items/s",
         "target": None, "ok": None},
        {"metric": f"{phase.name}: requests failed", "value": float(len(phase.errors)), "unit": "", "target": "0",
         "ok": not phase.errors},
        {"metric": f"{phase.name}: PostgreSQL connections, most seen", "value": float(counter.most), "unit": "",
         "target": f"<= {POOL_SIZE}", "ok": counter.most <= POOL_SIZE},
    ]
    for label, cpu_s in ((variant["server"], phase.server_cpu_s), ("PostgreSQL", phase.db_cpu_s),
                         ("PgBouncer", bouncer_cpu_s), ("load generator", phase.client_cpu_s)):
        rows.append({"metric": f"{phase.name}: {label} CPU per rated item", "value": 1000 * cpu_s / n, "unit": "ms",
                     "target": None, "ok": None})
        rows.append({"metric": f"{phase.name}: {label} CPU", "value": cpu_s / duration, "unit": "cores",
                     "target": None, "ok": None})
    for key, label in (("lost_or_incomplete", "acknowledged submits lost or incomplete"),
                       ("duplicate_ratings", "duplicated ratings"),
                       ("stored_not_acknowledged", "submits stored but not acknowledged"),
                       ("over_assigned_items", "over-assigned items"),
                       ("rater_item_twice", "raters given an item twice")):
        rows.append({"metric": f"1,000 raters audit: {label}", "value": float(audit[key]), "unit": "", "target": "0",
                     "ok": audit[key] == 0})
    rows.append({"metric": "1,000 raters audit: acknowledged submits", "value": float(audit["acknowledged"]),
                 "unit": "items", "target": None, "ok": None})
    return {
        "name": "annotator_loop_1000", "rows": rows, "audit": audit,
        "config": {"raters": THOUSAND, "raters_per_item": RATERS_PER_ITEM, "items": n_items, "think_s": think,
                   "phase_s": seconds, "pgbouncer": f"{pgbouncer_version()}, pool_mode=transaction, "
                                                    f"default_pool_size={POOL_SIZE}, web to PgBouncer by {POOLED_SOCKET}, "
                                                    f"PgBouncer to PostgreSQL by {_reached_by(direct)}",
                   "server": f"{variant['server']} {POOLED_WEB_PROCESSES} workers x {POOLED_THREADS} threads"
                             f"{' (gthread)' if variant['server'] == 'gunicorn' else ' (WSGI)'}, DEBUG=0, "
                             f"DATABASE_PREPARED_STATEMENTS={pooled_env()['DATABASE_PREPARED_STATEMENTS']}",
                   "variant": variant,
                   "client": "asyncio streams (bench/leanhttp.py), one client per rater",
                   "double_submit_share": 0.05, "autovacuum": autovacuum,
                   # The machine's 1-minute load average around the phase: other work on the same cores.
                   "load_average_before_after": [load_before, load_after]},
        "samples": {"next": len(phase.next_ms), "submit": len(phase.submit_ms), "errors": phase.errors[:20]},
    }
