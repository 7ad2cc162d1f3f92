"""Exports at ten times the data (issue 26): 1M, 3M and 10M ratings with --full; 100k, 300k, 1M by default.

Targets at 10,000,000 ratings: Parquet < 15 s, CSV < 25 s, JSONL < 40 s, peak memory < 1.5 GB.
At a smaller largest size the time targets are scaled linearly (the slope rows say whether that
is fair). Each size gets its own throwaway database with the study generated inside PostgreSQL
(bench/rated_study.py); each export runs in a fresh child process that reports its own peak RSS
(bench_exports.export_in_child). Also measured per size: the bytes a stored rating takes (the
ratings table with its indexes and TOAST, pg_total_relation_size / rows), and the same with the
assignment rows the ratings hang off.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

from bench.bench_exports import N_CRITERIA, N_RATERS, _rubric, export_in_child
from bench.dbtools import bench_database
from bench.growth import growth_rows
from bench.rated_study import fill_rated_study

RATINGS_PER_ITEM = N_RATERS * N_CRITERIA
FULL_ITEMS = (50_000, 150_000, 500_000)     # ~1M, 3M, 10M ratings
DEFAULT_ITEMS = (5_000, 15_000, 50_000)     # ~100k, 300k, 1M
TARGET_RATINGS = 10_000_000
TARGETS_S = {"parquet": 15.0, "csv": 25.0, "jsonl": 40.0}
MEMORY_MB = 1536.0


def _row(metric: str, value: float, unit: str, target: str | None = None, ok: bool | None = None) -> dict:
    return {"metric": metric, "value": round(float(value), 3), "unit": unit, "target": target, "ok": ok}


def _make_study(n_items: int):
    from django.contrib.auth import get_user_model

    from annotation.services.studies import study_create
    from rubrics.services import rubric_version_create

    version, _ = rubric_version_create(data=_rubric())
    study = study_create(name="bench exports x10", rubric_version=version, raters_per_item=N_RATERS)
    User = get_user_model()
    raters = User.objects.bulk_create([User(username=f"bench-rater-{r}", password="!") for r in range(N_RATERS)])
    fill_rated_study(study, raters, [c["key"] for c in _rubric()["criteria"]], n_items)
    return study


def storage(study) -> dict:
    """Bytes per stored rating: each table with its indexes and TOAST, over the ratings' rows."""
    from django.db import connection

    from annotation.models import Assignment, Item, Output, Rating

    sizes = {}
    with connection.cursor() as cursor:
        for name, model in (("ratings", Rating), ("assignments", Assignment), ("items", Item), ("outputs", Output)):
            table = model._meta.db_table
            cursor.execute(f"SELECT pg_table_size(%s), pg_indexes_size(%s), (SELECT count(*) FROM {table})",
                           [table, table])
            heap, indexes, rows = cursor.fetchone()
            sizes[name] = {"table_bytes": heap, "index_bytes": indexes, "rows": rows}
    return sizes


def _vacuum() -> None:
    """As a database that has been running a while has it: hint bits set, visibility map built,
    statistics fresh. Without it the first reader of bulk-inserted rows writes every page back."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("VACUUM (ANALYZE, FREEZE)")


def measure_size(n_items: int, tmp: Path) -> dict:
    with bench_database("exports_x10") as db_name:
        from annotation.reports.ratings import count_rating_rows

        t0 = time.perf_counter()
        study = _make_study(n_items)
        _vacuum()
        setup_s = time.perf_counter() - t0
        n_rows = count_rating_rows(study)
        out = {"items": n_items, "rows": n_rows, "setup_s": setup_s, "storage": storage(study), "exports": {}}
        for fmt in ("parquet", "csv", "jsonl"):
            load_before = os.getloadavg()
            res = export_in_child(db_name, study.slug, fmt, tmp / f"out.{fmt}")
            res["loadavg_before"], res["loadavg_after"] = load_before, os.getloadavg()
            out["exports"][fmt] = res
            (tmp / f"out.{fmt}").unlink(missing_ok=True)
            print(f"  {n_rows:>11,} rows {fmt:<8} {res['seconds']:7.2f} s  {res['rss_peak_mb']:7.0f} MB"
                  f"  load {load_before[0]:.2f}", flush=True)
    return out


def run(full: bool = False) -> dict:
    sizes = FULL_ITEMS if full else DEFAULT_ITEMS
    measured = []
    with tempfile.TemporaryDirectory() as tmp:
        for n_items in sizes:
            measured.append(measure_size(n_items, Path(tmp)))
    rows: list[dict] = []
    largest = measured[-1]
    scale = largest["rows"] / TARGET_RATINGS
    for m in measured:
        for fmt, res in m["exports"].items():
            last = m is largest
            target_s = TARGETS_S[fmt] * scale
            rows.append(_row(f"export {fmt}: {m['rows']:,} ratings (load {res['loadavg_before'][0]:.1f})",
                             res["seconds"], "s", f"< {target_s:.1f} s (< {TARGETS_S[fmt]:g} s at 10M)" if last
                             else None, res["seconds"] < target_s if last else None))
            rows.append(_row(f"export {fmt}: {m['rows']:,} ratings, peak RSS (baseline "
                             f"{res['rss_baseline_mb']:.0f} MB)", res["rss_peak_mb"], "MB",
                             f"< {MEMORY_MB:.0f}", res["rss_peak_mb"] < MEMORY_MB))
        st = m["storage"]
        per_rating = (st["ratings"]["table_bytes"] + st["ratings"]["index_bytes"]) / max(st["ratings"]["rows"], 1)
        with_assignments = per_rating + (st["assignments"]["table_bytes"] + st["assignments"]["index_bytes"]) / max(
            st["ratings"]["rows"], 1)
        rows.append(_row(f"storage: bytes per rating, ratings table + indexes ({m['rows']:,} ratings)",
                         per_rating, "B"))
        rows.append(_row(f"storage: bytes per rating with its share of the assignments ({m['rows']:,} ratings)",
                         with_assignments, "B"))
        rows.append(_row(f"data generated in PostgreSQL, {m['rows']:,} ratings (not a target)", m["setup_s"], "s"))
    series = {}
    for fmt in TARGETS_S:
        series[f"{fmt} seconds"] = [(m["rows"], m["exports"][fmt]["seconds"]) for m in measured]
        # The growth an export costs, above the child's RSS after imports (which no size changes).
        series[f"{fmt} MB above baseline"] = [
            (m["rows"], m["exports"][fmt]["rss_peak_mb"] - m["exports"][fmt]["rss_baseline_mb"]) for m in measured]
    rows += growth_rows("exports_x10", "ratings", series)
    return {"name": "exports_x10", "sizes": [{k: v for k, v in m.items()} for m in measured], "rows": rows}


if __name__ == "__main__":
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    os.environ.setdefault("CONCORD_TESTING", "1")
    result = run(full="--full" in sys.argv)
    for r in result["rows"]:
        print(f"{r['metric']:<95} {r['value']:>14,.3f} {r['unit']:<10} {r['target'] or ''} {r['ok']}")
