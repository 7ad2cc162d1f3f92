"""Exports and the study report on a study with 1M ratings (FULL: 50k items x 4 raters x 5
criteria, DESIGN.md) or 200k by default (10k items).

DESIGN.md targets at 1M ratings: Parquet < 5 s, JSONL < 15 s, peak memory < 1 GB (streamed),
full report < 10 s. At the default size the rows judge the rate the full size needs
(ratings per second), so a pass here says the full size would pass on the same machine.

The data goes into a throwaway database with COPY. Each export runs in a fresh child
process that writes the file and reports its own peak RSS (ru_maxrss), so the memory row
is the export's, not the generator's; the child's RSS right after imports is shown beside
it, so the growth an export costs is visible.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import numpy as np

from bench.dbtools import bench_database

N_RATERS, N_CRITERIA = 4, 5
FULL_RATINGS = 1_000_000
TARGETS_S = {"parquet": 2.0, "jsonl": 5.0, "csv": 3.0, "report": 5.0}  # at FULL_RATINGS
MEMORY_MB = 1024.0
REPO = Path(__file__).resolve().parent.parent

CHILD = r"""
import json, os, resource, sys, time
import django
django.setup()
rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
import pyarrow, pandas  # imported by the export anyway: count them in the baseline
from annotation.datasets import export_to_file
from annotation.models import Study
study = Study.objects.get(slug=sys.argv[1])
rss1 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
t0 = time.perf_counter()
written = export_to_file(study, sys.argv[2], sys.argv[3])
seconds = time.perf_counter() - t0
print(json.dumps({"seconds": seconds, "size": written.size, "sha256": written.sha256,
                  "rss_baseline_mb": rss1, "rss_peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def _rubric() -> dict:
    from rubrics.loader import load_preset

    base = load_preset("feedback-000")
    crit = [c for c in base["criteria"] if c["kind"] == "likert" and not c.get("overall")][:N_CRITERIA]
    return {"slug": "bench-exports", "name": "Bench: five 1-5 criteria", "description": "bench",
            "instructions": "bench", "criteria": crit}


def make_study(n_items: int, seed: int = 0):
    """A study with n_items items of one output, N_RATERS raters who rated all of them on
    N_CRITERIA Likert criteria (scores share an item effect), written with COPY."""
    from django.contrib.auth import get_user_model
    from django.db import connection

    from annotation.models import Assignment, Item, Output, Rating
    from annotation.services.items import items_import
    from annotation.services.studies import study_create
    from rubrics.services import rubric_version_create

    version, _ = rubric_version_create(data=_rubric())
    study = study_create(name="bench exports", rubric_version=version, raters_per_item=N_RATERS)
    items = "\n".join(json.dumps({
        "id": f"item-{i:06d}", "context": f"Student essay {i}: the argument is clear but the evidence is thin.",
        "outputs": [{"system": f"model-{'abcd'[i % 4]}", "content": f"Feedback {i}: strong thesis; add sources."}],
    }) for i in range(n_items)) + "\n"
    items_import(study=study, text=items, filename="items.jsonl")
    User = get_user_model()
    raters = User.objects.bulk_create([User(username=f"bench-rater-{r}", password="!") for r in range(N_RATERS)])
    item_ids = np.array(Item.objects.filter(study=study).order_by("id").values_list("id", flat=True))
    output_of = dict(Output.objects.filter(item__study=study).values_list("item_id", "id"))
    rng = np.random.default_rng(seed)
    keys = [c["key"] for c in _rubric()["criteria"]]
    a_table, r_table = Assignment._meta.db_table, Rating._meta.db_table
    with connection.cursor() as cursor:
        with cursor.copy(
            f"COPY {a_table} (study_id, item_id, rater_id, status, permutation, slot, is_attention_check, draft,"
            " ignored, ignore_reason, comment, time_on_task_ms, created_at, submitted_at) FROM STDIN"
        ) as copy:
            for k, item_id in enumerate(item_ids):
                for r, rater in enumerate(raters):
                    ignored = (k * N_RATERS + r) % 200 == 7  # 0.5% ignored items
                    copy.write_row((study.pk, int(item_id), rater.pk, "submitted", "[0]", r, False, "{}", ignored,
                                    "Unsuitable text" if ignored else "", "typo in the essay" if k % 50 == 0 else "",
                                    int(rng.integers(20_000, 90_000)), "now", "now"))
        cursor.execute(f"SELECT id, item_id FROM {a_table} WHERE study_id = %s AND NOT ignored ORDER BY id",
                       [study.pk])
        assignments = cursor.fetchall()
        truth = rng.normal(3, 1, (len(item_ids) + 1, N_CRITERIA))
        index = {int(i): n for n, i in enumerate(item_ids)}
        noise = rng.normal(0, 0.8, (len(assignments), N_CRITERIA))
        with cursor.copy(f"COPY {r_table} (assignment_id, output_id, criterion, value, score, reasoning,"
                         " created_at, updated_at) FROM STDIN") as copy:
            for n, (a_id, item_id) in enumerate(assignments):
                scores = np.clip(np.rint(truth[index[item_id]] + noise[n]), 1, 5).astype(int)
                out = output_of[item_id]
                for c, key in enumerate(keys):
                    s = int(scores[c])
                    copy.write_row((a_id, out, key, str(s), float(s), "clear \"why\", with a comma" if c == 0 else "",
                                    "now", "now"))
        cursor.execute("ANALYZE")
    return study


def _child_env(db_name: str) -> dict:
    env = dict(os.environ)
    url = urlsplit(os.environ["DATABASE_URL"])
    env["DATABASE_URL"] = urlunsplit(url._replace(path="/" + db_name))
    env.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    env.setdefault("CONCORD_TESTING", "1")
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    return env


def export_in_child(db_name: str, slug: str, fmt: str, out: Path) -> dict:
    proc = subprocess.run([sys.executable, "-c", CHILD, slug, fmt, str(out)], env=_child_env(db_name),
                          cwd=REPO, capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        raise RuntimeError(f"export {fmt} failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _row(metric: str, value: float, unit: str, target: str | None = None, ok: bool | None = None) -> dict:
    return {"metric": metric, "value": round(float(value), 3), "unit": unit, "target": target, "ok": ok}


def run(full: bool = False) -> dict:
    n_items = 50_000 if full else 10_000
    rows: list[dict] = []
    with bench_database("exports") as db_name:
        from annotation.reports.study import study_report
        from annotation.reports.plots import report_plots
        from annotation.reports.ratings import count_rating_rows

        t0 = time.perf_counter()
        study = make_study(n_items)
        setup_s = time.perf_counter() - t0
        n_rows = count_rating_rows(study)
        with tempfile.TemporaryDirectory() as tmp:
            for fmt in ("parquet", "jsonl", "csv", "consensus"):
                res = export_in_child(db_name, study.slug, fmt, Path(tmp) / f"out.{fmt}")
                rate = n_rows / res["seconds"]
                target_s = TARGETS_S.get(fmt)
                if target_s:
                    need = FULL_RATINGS / target_s
                    rows.append(_row(f"export {fmt}: {n_rows:,} rows", res["seconds"], "s",
                                     f"< {target_s * n_rows / FULL_RATINGS:.2f} s (< {target_s:g} s at 1M)",
                                     res["seconds"] < target_s * n_rows / FULL_RATINGS))
                    rows.append(_row(f"export {fmt}: rate", rate, "rows/s", f">= {need:,.0f}", rate >= need))
                    rows.append(_row(f"export {fmt}: peak RSS (baseline {res['rss_baseline_mb']:.0f} MB)",
                                     res["rss_peak_mb"], "MB", f"< {MEMORY_MB:.0f}", res["rss_peak_mb"] < MEMORY_MB))
                else:
                    rows.append(_row(f"export {fmt}: {n_rows:,} rows", res["seconds"], "s"))
                    rows.append(_row(f"export {fmt}: peak RSS (baseline {res['rss_baseline_mb']:.0f} MB)",
                                     res["rss_peak_mb"], "MB", f"< {MEMORY_MB:.0f}", res["rss_peak_mb"] < MEMORY_MB))
                rows.append(_row(f"export {fmt}: file size", res["size"] / 2**20, "MB"))
        t0 = time.perf_counter()
        report = study_report(study)
        report_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        report_plots(report)
        plots_s = time.perf_counter() - t0
        n_ratings = report["counts"]["ratings_analysed"]
        target = TARGETS_S["report"] * n_ratings / FULL_RATINGS
        rows.append(_row(f"full study report: {n_ratings:,} ratings (SQL, agreement + 1000 bootstraps, consensus,"
                         " raters, systems)", report_s, "s", f"< {target:.2f} s (< {TARGETS_S['report']:g} s at 1M)",
                         report_s < target))
        need = FULL_RATINGS / TARGETS_S["report"]
        rows.append(_row("full study report: rate", n_ratings / report_s, "ratings/s", f">= {need:,.0f}",
                         n_ratings / report_s >= need))
        rows.append(_row("report plots (5 SVGs)", plots_s, "s"))
        rows.append(_row("data setup with COPY (not a target)", setup_s, "s"))
    return {"name": "exports", "ratings": n_rows, "items": n_items, "raters": N_RATERS, "criteria": N_CRITERIA,
            "rows": rows}


if __name__ == "__main__":
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    os.environ.setdefault("CONCORD_TESTING", "1")
    result = run(full="--full" in sys.argv)
    for r in result["rows"]:
        print(f"{r['metric']:<95} {r['value']:>14,.3f} {r['unit']:<10} {r['target'] or ''} {r['ok']}")
