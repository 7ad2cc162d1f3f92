"""Where PostgreSQL's CPU for a rated item goes: the rating loop's statements one by one, and what three of the
loop's guarantees cost. The loop's own calls run in this process (bench/loop_inprocess.py's "services alone": no
HTTP, no session) on one connection, whose backend's CPU is read from /proc/PID/schedstat (nanoseconds, where
/proc/PID/stat counts 10 ms ticks) before and after each statement. The arms:

- "every guarantee": the loop as it is served;
- "without the change-count triggers": the statement triggers that keep the report's per-block change counts
  (annotation/migrations/0018_rating_changes.py; what lets a cached report know exactly what changed) disabled;
- "without the foreign-key checks": session_replication_role = replica, under which PostgreSQL skips the
  foreign-key triggers (a rating's assignment and output, an assignment's study, item and rater) and still
  fires the change-count triggers (ENABLE ALWAYS);
- "without waiting for the commit's flush": synchronous_commit = off.

Each arm rates on a fresh database of its own, ITEMS / ROUNDS items a round, the rounds in alternate orders
(drift falls on every arm alike); then one more database, the loop as served, statement by statement. Switching arms on one database every few items, as bench/loop_inprocess.py switches its arms, made
every arm dearer: each switch is DDL or a setting that throws away the connection's cached plans.

None of the arms is a candidate: each guarantee stays. They say what each costs, so that a target for the CPU
an item can be set against what the loop must do.

    python -m bench.loop_statements          -> bench/results/loop_statements.json
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import re
import secrets
import time
from collections import defaultdict
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"
WARM, ITEMS, ROUNDS = 60, 1000, 4
TRIGGERS = [f"{table}_changes_{event}" for table in ("rating", "assignment") for event in ("insert", "update", "delete")]
BASELINE = "every guarantee"
# arm: what is run on the measuring connection first (each arm has a database of its own)
ARMS = {
    BASELINE: [],
    "without the change-count triggers": [f"ALTER TABLE annotation_{name.split('_')[0]} DISABLE TRIGGER {name}"
                                          for name in TRIGGERS],
    "without the foreign-key checks": ["SET session_replication_role = replica"],
    "without waiting for the commit's flush": ["SET synchronous_commit = off"],
}


def _backend_ns(pid: int) -> int:
    """CPU nanoseconds of PostgreSQL backend `pid`; 0 where PostgreSQL runs on another machine."""
    try:
        return int(Path(f"/proc/{pid}/schedstat").read_text().split()[0])
    except (OSError, IndexError, ValueError):
        return 0


def _label(sql: str) -> str:
    """A statement's first words, whitespace folded: enough to tell the loop's statements apart."""
    return re.sub(r"\s+", " ", sql.strip())[:100]


def measure(slug: str, users: list, setup: list[str], *, items: int = ITEMS, warm: int = WARM,
            by_statement: bool = True) -> dict:
    """{"backend_ns": PostgreSQL CPU over `items` rated items, "statements": {label: [ns, runs]}} in the current
    database, whose study `slug` has the annotators `users` (bench.loadclient.setup_study), on a connection that
    first runs `setup`."""
    from django.db import connection

    from bench.loop_inprocess import _services_arm

    # One connection throughout (CONN_MAX_AGE would replace it every minute): its backend does all the work.
    max_age, connection.settings_dict["CONN_MAX_AGE"] = connection.settings_dict["CONN_MAX_AGE"], None
    connection.close()
    connection.ensure_connection()
    pid = connection.connection.info.backend_pid
    statements: dict[str, list[int]] = defaultdict(lambda: [0, 0])

    def timed(execute, sql, params, many, context):
        started = _backend_ns(pid)
        try:
            return execute(sql, params, many, context)
        finally:
            entry = statements[_label(sql)]
            entry[0] += _backend_ns(pid) - started
            entry[1] += 1

    try:
        with connection.cursor() as cursor:
            for sql in setup:
                cursor.execute(sql)
        item = _services_arm(slug, users, random.Random(1))
        for i in range(warm):
            item(i)
        started = _backend_ns(pid)
        with connection.execute_wrapper(timed) if by_statement else contextlib.nullcontext():
            for i in range(warm, warm + items):
                item(i)
        spent = _backend_ns(pid) - started
        assert connection.connection.info.backend_pid == pid, "the connection was replaced during the measurement"
    finally:
        connection.close()  # the arm's settings go with it
        connection.settings_dict["CONN_MAX_AGE"] = max_age
    return {"backend_ns": spent, "statements": dict(statements)}


def run() -> dict:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()
    from django.conf import settings
    from django.contrib.auth import get_user_model

    from bench.__main__ import machine
    from bench.dbtools import bench_database
    from bench.loadclient import setup_study
    from bench.machine_speed import probe_ms

    probe_before = probe_ms()
    per_round = ITEMS // ROUNDS

    def on_fresh_database(setup: list[str], by_statement: bool) -> dict:
        with bench_database("statements") as _:
            secret_key = secrets.token_urlsafe(40)
            slug, _sessions = setup_study(WARM + per_round, secret_key, raters=30, raters_per_item=3,
                                          user_prefix="statements")
            settings.SECRET_KEY = secret_key
            users = list(get_user_model().objects.filter(username__startswith="statements").order_by("username"))
            return measure(slug, users, setup, items=per_round, by_statement=by_statement)

    spent = dict.fromkeys(ARMS, 0)
    for round_ in range(ROUNDS):
        for name in (list(ARMS) if round_ % 2 == 0 else list(reversed(ARMS))):
            spent[name] += on_fresh_database(ARMS[name], by_statement=False)["backend_ns"]
    # Statement by statement on a database of its own: reading /proc around each statement costs the backend
    # a little (about 0.1 ms an item here), which the arms above do not pay.
    timed = on_fresh_database(ARMS[BASELINE], by_statement=True)
    statements, baseline_ns = timed["statements"], timed["backend_ns"]
    items = per_round * ROUNDS
    per_item = 1e6 * items  # ns over `items` items -> ms an item
    timed_per_item = 1e6 * per_round
    rows = [{"metric": f"{name}: PostgreSQL CPU a rated item", "value": ns / per_item, "unit": "ms"}
            for name, ns in spent.items()]
    inside = sum(ns for ns, _ in statements.values())
    rows.append({"metric": f"{BASELINE}, statement by statement: in all", "value": baseline_ns / timed_per_item,
                 "unit": "ms"})
    rows.append({"metric": f"{BASELINE}, statement by statement: outside the statements (BEGIN, COMMIT)",
                 "value": (baseline_ns - inside) / timed_per_item, "unit": "ms"})
    by_cost = sorted(statements.items(), key=lambda kv: -kv[1][0])
    return {"name": "loop_statements", "rows": rows, "items_per_arm": items,
            "statements": [{"statement": label, "runs_an_item": runs / per_round, "us_each": ns / runs / 1e3,
                            "ms_an_item": ns / timed_per_item} for label, (ns, runs) in by_cost],
            "machine": machine(probe_before), "finished_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}


if __name__ == "__main__":
    out = run()
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "loop_statements.json").write_text(json.dumps(out, indent=2) + "\n")
    for row in out["rows"]:
        print(f"{row['metric']:<70} {row['value']:6.3f} {row['unit']}")
    print(f"{BASELINE}, statement by statement (ms an item, runs an item, us each):")
    for s in out["statements"]:
        print(f"  {s['ms_an_item']:6.3f} {s['runs_an_item']:5.2f} {s['us_each']:7.1f}  {s['statement'][:80]}")
    print("machine speed (CPU ms, lower is faster):", out["machine"]["python_probe_ms"])
