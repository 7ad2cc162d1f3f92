"""A/B of the 1,000-rater phase (bench/bench_annotator_loop.py run_thousand) under each serving candidate,
the arms interleaved (A B C ... A B C ...) so that a machine whose speed drifts, or that other work shares,
weighs on every arm alike. Each arm changes one thing against the first (bench/loop_variants.py's knobs).

    python -m bench.loop_ab                      # every arm, 2 rounds, 40 s phases -> bench/results/loop_ab.json
    python -m bench.loop_ab --rounds 3 --arms gunicorn granian --seconds 60 --out loop_ab_granian.json

Per run: CPU ms per rated item (web, PostgreSQL, PgBouncer, their total; the load generator apart), next-item
and submit p95, rated items/s, whether the audit and every request were clean, and the 1-minute load average
before and after (CPU per item survives a busy machine better than latency does).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"

ARMS: dict[str, dict[str, str]] = {
    "gunicorn": {},  # as the bench runs it: gthread, access log to a file, cached_db sessions, two requests
    "gunicorn, no access log": {"BENCH_1K_ACCESS_LOG": "0"},
    "granian": {"BENCH_1K_SERVER": "granian"},
    "signed-cookie sessions": {"BENCH_1K_SESSIONS": "signed_cookies"},
    "one trip": {"BENCH_1K_ONE_TRIP": "1"},
}
KNOBS = ("BENCH_1K_SERVER", "BENCH_1K_ACCESS_LOG", "BENCH_1K_SESSIONS", "BENCH_1K_ONE_TRIP")


def summarise(result: dict) -> dict:
    """One run's figures from run_thousand's rows (named '<phase>: <what>')."""
    by_suffix = {row["metric"].split(": ", 1)[1]: row for row in result["rows"]}
    web = next(k for k in by_suffix if k.endswith(" CPU per rated item") and k.split()[0] in ("gunicorn", "granian"))
    cpu = {"web": by_suffix[web]["value"], "PostgreSQL": by_suffix["PostgreSQL CPU per rated item"]["value"],
           "PgBouncer": by_suffix["PgBouncer CPU per rated item"]["value"]}
    checks = [row for row in result["rows"] if row["ok"] is not None and "p95" not in row["metric"]]
    return {
        "cpu_ms_per_item": {**cpu, "server total": sum(cpu.values()),
                            "load generator": by_suffix["load generator CPU per rated item"]["value"]},
        "p95_ms": {"next": by_suffix["next item p95"]["value"], "submit": by_suffix["submit p95"]["value"]},
        "p50_ms": {"next": by_suffix["next item p50"]["value"], "submit": by_suffix["submit p50"]["value"]},
        "items_per_s": by_suffix["rated items/s"]["value"],
        "acknowledged": result["audit"]["acknowledged"],
        "audit_and_requests_ok": all(row["ok"] for row in checks),
        "failed_checks": [row["metric"] for row in checks if not row["ok"]],
        "errors": result["samples"]["errors"][:10],  # what the raters saw go wrong, if anything
        "load_average_before_after": result["config"]["load_average_before_after"],
        "server": result["config"]["server"],
    }


def medians(runs: list[dict]) -> dict:
    def med(get):
        return round(statistics.median(get(r) for r in runs), 2)

    return {"runs": len(runs),
            "cpu_ms_per_item": {k: med(lambda r, k=k: r["cpu_ms_per_item"][k]) for k in runs[0]["cpu_ms_per_item"]},
            "p95_ms": {k: med(lambda r, k=k: r["p95_ms"][k]) for k in ("next", "submit")},
            "items_per_s": med(lambda r: r["items_per_s"]),
            "all_ok": all(r["audit_and_requests_ok"] for r in runs)}


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.loop_ab")
    parser.add_argument("--arms", nargs="+", default=list(ARMS), choices=list(ARMS))
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--seconds", type=float, default=40.0, help="each phase (BENCH_1K_SECONDS)")
    parser.add_argument("--out", default="loop_ab.json", help="file name under bench/results/")
    args = parser.parse_args(argv)
    if args.rounds < 1 or args.seconds <= 0:
        parser.error("--rounds and --seconds must be positive")
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    os.environ.setdefault("CONCORD_TESTING", "1")
    os.environ["BENCH_1K_SECONDS"] = str(args.seconds)
    from bench.bench_annotator_loop import run_thousand

    out = RESULTS / args.out
    report = {"name": "loop_ab", "started_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
              "cpus": os.cpu_count(), "phase_s": args.seconds, "arms": {a: ARMS[a] for a in args.arms}, "runs": []}
    for round_no in range(1, args.rounds + 1):
        for arm in args.arms:
            for knob in KNOBS:
                os.environ.pop(knob, None)
            os.environ.update(ARMS[arm])
            started = time.perf_counter()
            run = {"arm": arm, "round": round_no, **summarise(run_thousand())}
            run["seconds"] = round(time.perf_counter() - started, 1)
            report["runs"].append(run)
            report["summary"] = {a: medians([r for r in report["runs"] if r["arm"] == a])
                                 for a in args.arms if any(r["arm"] == a for r in report["runs"])}
            report["finished_at"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
            out.write_text(json.dumps(report, indent=2) + "\n")  # after every run: a stopped A/B keeps its runs
            cpu, p95 = run["cpu_ms_per_item"], run["p95_ms"]
            print(f"[{round_no}] {arm}: server {cpu['server total']:.2f} ms/item (web {cpu['web']:.2f}, "
                  f"PostgreSQL {cpu['PostgreSQL']:.2f}, PgBouncer {cpu['PgBouncer']:.2f}), p95 next "
                  f"{p95['next']:.1f} / submit {p95['submit']:.1f} ms, {run['items_per_s']:.1f} items/s, "
                  f"ok={run['audit_and_requests_ok']}, load {run['load_average_before_after']}", flush=True)
    for knob in KNOBS:
        os.environ.pop(knob, None)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
