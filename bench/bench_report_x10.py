"""The study report at ten times the data (issue 26): every section, 1,000 bootstraps, over
10,000,000 ratings in < 30 s with a peak memory < 4 GB, and how its cost grows with size.

Sizes (ratings; 20 an item: 4 raters x 5 Likert criteria, 0.5% of assignments ignored):
default 100k, 300k, 1M; `--full` 1M, 3M, 10M; BENCH_SIZES=1000000,3000000 picks others.
Each size gets its own throwaway database, written by PostgreSQL (bench/x10_data.py), dropped after.
The report runs in a fresh child process (bench/x10_child.py: time, peak memory, load average; with
BENCH_CODE another checkout's code, with BENCH_PROFILE=1 a cProfile). Run it under `nice -n 10`.
Then each size gets a finished judge run over every output and criterion (4 ratings per answer),
and the report page's judge sections are measured the same way, computed together as the worker
computes them after the report.
"""

from __future__ import annotations

import os
import time

from bench.dbtools import bench_database
from bench.growth import growth_rows
from bench.x10_child import codes, measure_in_child

TARGET_S, TARGET_MB, TARGET_RATINGS = 30.0, 4096.0, 10_000_000
RATINGS_PER_ITEM = 20


def sizes(full: bool) -> list[int]:
    if os.environ.get("BENCH_SIZES"):
        return [int(s) for s in os.environ["BENCH_SIZES"].split(",")]
    return [1_000_000, 3_000_000, 10_000_000] if full else [100_000, 300_000, 1_000_000]


def _row(metric: str, value: float, unit: str, target: str | None = None, ok: bool | None = None) -> dict:
    return {"metric": metric, "value": round(float(value), 3), "unit": unit, "target": target, "ok": ok}


def run(full: bool = False) -> dict:
    from bench.x10_data import judge_run_done, report_study

    rows, measured, series = [], [], {"seconds": [], "peak memory MB": []}
    sections = {"seconds": [], "peak memory MB": []}
    for n in sizes(full):
        with bench_database("x10report") as db_name:
            load0 = os.getloadavg()
            t0 = time.perf_counter()
            study = report_study(n // RATINGS_PER_ITEM)
            setup_s = time.perf_counter() - t0
            results = [(tag, measure_in_child(db_name, "report", study.slug, f"{n / 1e6:g}M", code, tag))
                       for tag, code in codes()]
            # Then a finished judge run over every output and criterion: the report page's judge sections
            judge_run_done(study)
            extra = [(tag, measure_in_child(db_name, "sections", study.slug, f"{n / 1e6:g}M", code, tag))
                     for tag, code in codes()]
        for tag, res in results:
            _size_rows(rows, measured, series, n, tag, res, setup_s, load0)
        for tag, res in extra:
            _section_rows(rows, measured, sections, n, tag, res)
    if len(series["seconds"]) >= 2:  # (the code measured as "after")
        rows += growth_rows("report_x10", "ratings", series)
    if len(sections["seconds"]) >= 2:
        rows += growth_rows("report_x10_sections", "ratings", sections)
    return {"name": "report_x10", "rows": rows, "config": {"sizes": measured, "n_boot": 1000,
                                                           "ratings_per_item": RATINGS_PER_ITEM}}


def _size_rows(rows: list, measured: list, series: dict, n: int, tag: str, res: dict, setup_s: float,
               load0) -> None:
    ratings = res["summary"]["ratings_analysed"]
    at_target = n >= TARGET_RATINGS
    name = f"study report ({tag})"
    rows.append(_row(f"{name}, {ratings:,} ratings (every section, 1000 bootstraps)", res["seconds"], "s",
                     f"< {TARGET_S:g} s at 10M" if at_target else None, res["seconds"] < TARGET_S if at_target
                     else None))
    peak = res.get("memory_peak_mb", res["rss_peak_mb"])  # (a code before the child's PSS was sampled)
    rows.append(_row(f"{name}, {ratings:,} ratings: peak memory, its own RSS or with its forked child's PSS"
                     f" (baseline {res['rss_baseline_mb']:.0f} MB)", peak, "MB",
                     f"< {TARGET_MB:.0f} MB at 10M" if at_target else None, peak < TARGET_MB if at_target else None))
    rows.append(_row(f"data setup, {ratings:,} ratings (INSERT ... SELECT; not a target)", setup_s, "s"))
    if tag == "after":  # the growth of the code as it is now
        series["seconds"].append((ratings, res["seconds"]))
        series["peak memory MB"].append((ratings, peak))
    measured.append({"ratings": ratings, "code": tag, "seconds": res["seconds"], "rss_peak_mb": res["rss_peak_mb"],
                     "tree_pss_peak_mb": res.get("tree_pss_peak_mb"), "memory_peak_mb": peak,
                     "rss_baseline_mb": res["rss_baseline_mb"], "setup_s": setup_s, "load_setup": load0,
                     "load_before": res["load_before"], "load_after": res["load_after"],
                     "alpha": res["summary"]["alpha"]})


def _section_rows(rows: list, measured: list, series: dict, n: int, tag: str, res: dict) -> None:
    """The sections other apps add ("Judges vs humans", "Trusting the judges"), computed together
    as the worker computes them after the report: one judge answer per output and criterion."""
    name = f"report's judge sections ({tag}), {n:,} ratings and {n // 4:,} judge answers"
    rows.append(_row(f"{name} ({', '.join(res['summary']['titles'])})", res["seconds"], "s"))
    rows.append(_row(f"{name}: peak memory", res["rss_peak_mb"], "MB"))
    if tag == "after":
        series["seconds"].append((n, res["seconds"]))
        series["peak memory MB"].append((n, res["rss_peak_mb"]))
    measured.append({"ratings": n, "code": tag, "phase": "sections", "seconds": res["seconds"],
                     "rss_peak_mb": res["rss_peak_mb"], "load_before": res["load_before"],
                     "load_after": res["load_after"]})


if __name__ == "__main__":
    import sys

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    os.environ.setdefault("CONCORD_TESTING", "1")
    for r in run(full="--full" in sys.argv)["rows"]:
        print(f"{r['metric']:<90} {r['value']:>12,.3f} {r['unit']:<4} {r['target'] or ''} {r['ok']}")
