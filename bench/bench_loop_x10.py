"""The annotator loop at ten times the items (issue 26): saturated and at a human pace, on studies of
20k, 200k and 2M items (BENCH_SIZES=20000,2000000 picks others; --full runs longer phases, more rounds).

The loop is bench_annotator_loop's (100 raters, 3 per item, gunicorn 4 x 4, the same phases and audit);
only the items differ: written by PostgreSQL (bench/rated_study.fill_items with no raters: 3 outputs an
item, nothing rated yet), so 2,000,000 items take a minute and a half instead of ten of importing. Every study
lives in one database behind one server, and the saturated phases run in rounds that visit
each size in turn: a load change on the shared machine then falls on every size alike, not on the
one measured last. Each size's figure is the median over its rounds.

Targets: the one-request-per-item rate at the largest size within 10% of the rate at a tenth of it
(issue 26: flat from 200,000 to 2,000,000 items), and human-pace p95 < 50 ms at the largest size. On a
shared machine the rate follows the load; the server CPU per rated item (gunicorn + PostgreSQL) does
not, so its ratio is reported beside it. The studies have no attention checks: with them every call
counts the rater's own assignments, which grows with their progress (bench/loop_rater_growth.py).

    python -m bench loop_x10            # 15 s saturated phases, 2 rounds, 30 s at a human pace: ~10 minutes
    python -m bench loop_x10 --full     # 30 s phases, 3 rounds, 60 s at a human pace: ~18 minutes

The statements themselves, explained at 2,000,000 items: bench/loop_plans.py (bench/results/loop_plans_2M.txt).
"""

from __future__ import annotations

import asyncio
import os
import secrets
import statistics
import time
from dataclasses import dataclass

from bench.bench_annotator_loop import (
    FLAT_WITHIN, RATERS, RATERS_PER_ITEM, SERVER_APP_NAME, TARGET_P95_MS, THINK_SCALE, THINK_SECONDS, Phase,
    _as_autovacuum_would, _measured_phase, _pct, autovacuum_and_stand_in,
)
from bench.dbtools import bench_database
from bench.growth import growth_rows, plot_growth
from bench.loadclient import audit as db_audit
from bench.loadclient import free_port, setup_study, start_server, stop_server, warm_up

ITEMS = (20_000, 200_000, 2_000_000)


def sizes(full: bool) -> list[int]:
    if os.environ.get("BENCH_SIZES"):
        return sorted(int(s) for s in os.environ["BENCH_SIZES"].split(","))
    return list(ITEMS)


def _fill(study, n_items: int) -> None:
    from bench.rated_study import fill_items

    fill_items(study, [], n_items)  # no raters: every item open, 3 outputs (rrgen-001 shows 3 responses)


@dataclass
class LoadedPhase(Phase):
    load: tuple[float, float, float] = (0.0, 0.0, 0.0)  # the machine's load averages as the phase began


def _rate(phase: Phase) -> float:
    return len(phase.acknowledged) / (phase.ended - phase.started)


def _timed(base: str, slug: str, sessions: list[str], phase: LoadedPhase, server, autovacuum: bool) -> LoadedPhase:
    _as_autovacuum_would(autovacuum)
    phase.load = os.getloadavg()
    _measured_phase(base, slug, sessions, phase, server)
    print(f"  {phase.name}: {_rate(phase):.1f} items/s, load {phase.load[0]:.2f}", flush=True)
    return phase


def run(full: bool = False) -> dict:
    human_s, saturation_s, rounds = (60.0, 30.0, 3) if full else (30.0, 15.0, 2)
    if os.environ.get("BENCH_PHASE_S"):  # a shorter run, to try the setup
        human_s = saturation_s = float(os.environ["BENCH_PHASE_S"])
    think = (THINK_SECONDS[0] * THINK_SCALE, THINK_SECONDS[1] * THINK_SCALE)
    ns = sizes(full)
    studies: dict[int, dict] = {}
    with bench_database("loopx10") as db_name:
        from django.db import connection

        secret_key = secrets.token_urlsafe(40)
        for n in ns:
            t0, load = time.perf_counter(), os.getloadavg()
            slug, sessions = setup_study(n, secret_key, raters=RATERS, raters_per_item=RATERS_PER_ITEM,
                                         name=f"bench loop x10, {n} items", user_prefix=f"bench-x10-{n}", fill=_fill)
            studies[n] = {"slug": slug, "sessions": sessions, "setup_s": time.perf_counter() - t0, "load_setup": load,
                          "two_trips": [], "one_trip": [], "human": None}
            print(f"  {n:,} items written in {studies[n]['setup_s']:.0f} s", flush=True)
        with connection.cursor() as cursor:
            cursor.execute("VACUUM ANALYZE")  # as autovacuum would leave a study that was uploaded a while ago
        autovacuum, stand_in = autovacuum_and_stand_in()
        port = free_port()
        server = start_server(port, secret_key, db_name=db_name, extra_env={"PGAPPNAME": SERVER_APP_NAME})
        if stand_in:
            stand_in.start()
        try:
            base = f"http://127.0.0.1:{port}"
            for n in ns:
                asyncio.run(warm_up(base, studies[n]["slug"], studies[n]["sessions"][0]))
            for r in range(rounds):
                for n in ns:
                    s = studies[n]
                    s["two_trips"].append(_timed(base, s["slug"], s["sessions"], LoadedPhase(
                        f"{n:,} items, saturation (round {r + 1})", saturation_s, None), server, autovacuum))
                    s["one_trip"].append(_timed(base, s["slug"], s["sessions"], LoadedPhase(
                        f"{n:,} items, saturation, one request per item (round {r + 1})", saturation_s, None,
                        one_trip=True), server, autovacuum))
            for n in ns:
                s = studies[n]
                human = LoadedPhase(f"{n:,} items, human pace", human_s, think)
                s["human"] = _timed(base, s["slug"], s["sessions"], human, server, autovacuum)
        finally:
            if stand_in:
                stand_in.halt.set()
                stand_in.join()
            stop_server(server)
        for n in ns:
            s = studies[n]
            phases = [*s["two_trips"], *s["one_trip"], s["human"]]
            s["audit"] = db_audit(s["slug"], set().union(*(p.acknowledged for p in phases)))
    return _result(ns, studies, full, rounds, autovacuum, stand_in)


def _row(metric: str, value: float, unit: str, target: str | None = None, ok: bool | None = None) -> dict:
    return {"metric": metric, "value": round(float(value), 3), "unit": unit, "target": target, "ok": ok}


def _result(ns: list[int], studies: dict[int, dict], full: bool, rounds: int, autovacuum: bool, stand_in) -> dict:
    rows, measured = [], []
    series: dict[str, list[tuple[float, float]]] = {"rated items/s": [], "ms CPU per rated item": [],
                                                    "submit + next p95 ms": []}
    largest = ns[-1]
    for n in ns:
        s = studies[n]
        one, two, human = s["one_trip"], s["two_trips"], s["human"]
        rate = statistics.median(_rate(p) for p in one)
        series["rated items/s"].append((n, rate))
        loads = [p.load[0] for p in (*two, *one, human)]
        load = f"load {min(loads):.1f}-{max(loads):.1f}"
        rows.append(_row(f"{n:,} items: rated items/s, one request per item (median of {len(one)}; {load})",
                         rate, "items/s"))
        rows.append(_row(f"{n:,} items: rated items/s, next then submit (median of {len(two)})",
                         statistics.median(_rate(p) for p in two), "items/s"))
        next_ms = [x for p in two for x in p.next_ms]
        submit_ms = [x for p in two for x in p.submit_ms]
        both_ms = [x for p in one for x in p.submit_ms]
        for label, values in (("next item", next_ms), ("submit", submit_ms), ("submit + next item", both_ms)):
            for q in (50, 95):
                rows.append(_row(f"{n:,} items, saturation: {label} p{q}", _pct(values, q), "ms"))
        at_target = n == largest
        for label, values in (("next item", human.next_ms), ("submit", human.submit_ms)):
            for q in (50, 95):
                target = f"< {TARGET_P95_MS:.0f} ms" if q == 95 and at_target else None
                value = _pct(values, q)
                rows.append(_row(f"{n:,} items, human pace: {label} p{q} (load {human.load[0]:.1f})", value, "ms",
                                 target, value < TARGET_P95_MS if target else None))
        errors = sum(len(p.errors) for p in (*two, *one, human))
        rows.append(_row(f"{n:,} items: requests failed", errors, "", "0", errors == 0))
        acknowledged = sum(len(p.acknowledged) for p in one)
        server_ms = 1000 * sum(p.server_cpu_s for p in one) / max(acknowledged, 1)
        db_ms = (1000 * sum(p.db_cpu_s for p in one) / max(acknowledged, 1)
                 if all(p.db_cpu_s is not None for p in one) else None)
        rows.append(_row(f"{n:,} items, one request per item: gunicorn CPU per rated item", server_ms, "ms"))
        if db_ms is not None:
            rows.append(_row(f"{n:,} items, one request per item: PostgreSQL CPU per rated item", db_ms, "ms"))
            series["ms CPU per rated item"].append((n, server_ms + db_ms))
        series["submit + next p95 ms"].append((n, _pct(both_ms, 95)))
        audit = s["audit"]
        bad = sum(audit[k] for k in ("lost_or_incomplete", "duplicate_ratings", "stored_not_acknowledged",
                                     "over_assigned_items", "rater_item_twice"))
        rows.append(_row(f"{n:,} items audit: lost, duplicated, unacknowledged, over-assigned or repeated", bad, "",
                         "0", bad == 0))
        rows.append(_row(f"data setup, {n:,} items x 3 outputs (INSERT ... SELECT; not a target)", s["setup_s"], "s"))
        measured.append({"items": n, "rate_one_trip": [_rate(p) for p in one],
                         "rate_two_trips": [_rate(p) for p in two],
                         "human_rate": _rate(human), "loads": loads, "setup_s": s["setup_s"],
                         "load_setup": s["load_setup"], "audit": audit,
                         "errors": [e for p in (*two, *one, human) for e in p.errors][:10]})
    base_n = max((n for n in ns if n * 10 <= largest), default=ns[0])
    rates = dict(series["rated items/s"])
    ratio = rates[largest] / rates[base_n]
    rows.append(_row(f"flatness: rated items/s at {largest:,} items / at {base_n:,}", ratio, "",
                     f">= {1 - FLAT_WITHIN:.2f}", ratio >= 1 - FLAT_WITHIN))
    # The rate moves with whatever else runs on the shared cores; the CPU a rated item costs does not.
    cpu = dict(series["ms CPU per rated item"])
    if largest in cpu and base_n in cpu:
        cpu_ratio = cpu[largest] / cpu[base_n]
        rows.append(_row(f"flatness: server CPU per rated item at {largest:,} items / at {base_n:,}", cpu_ratio, "",
                         f"<= {1 + FLAT_WITHIN:.2f}", cpu_ratio <= 1 + FLAT_WITHIN))
    if len(ns) >= 2 and all(len(v) == len(ns) for v in series.values()):
        costs = {k: v for k, v in series.items() if k != "rated items/s"}
        rows += growth_rows("loop_x10", "items", costs)  # slopes of costs (a rate is no cost)
        plot_growth("loop_x10", "items", series)  # the plot shows the rate too
    return {"name": "loop_x10", "rows": rows, "sizes": measured,
            "config": {"raters": RATERS, "raters_per_item": RATERS_PER_ITEM, "rounds": rounds, "full": full,
                       "server": "gunicorn 4 workers x 4 threads (gthread), DEBUG=0", "client": "asyncio + httpx",
                       "autovacuum": autovacuum, "vacuum_stand_in_runs": stand_in.runs if stand_in else None,
                       "items": "bench.rated_study.fill_items, no raters (3 outputs an item, none rated)"}}


if __name__ == "__main__":
    import sys

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    os.environ.setdefault("CONCORD_TESTING", "1")
    for r in run(full="--full" in sys.argv)["rows"]:
        print(f"{r['metric']:<100} {r['value']:>12,.3f} {r['unit']:<8} {r['target'] or ''} {r['ok']}")
