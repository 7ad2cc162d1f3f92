"""Item import at ten times the size (issue 26): 200k, 600k and 2M items x 3 outputs with --full
(20k, 60k, 200k by default), from a file on disk, streamed through the real validator and COPY path.

Targets at 2,000,000 items: < 5 min, peak memory < 1.5 GB, all or nothing. Each import runs in a
fresh child process that reads the file itself and reports its own peak RSS (ru_maxrss), so the
memory row is the import's, not the file generator's. Each size gets its own throwaway database.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.bench_exports import _child_env
from bench.dbtools import bench_database
from bench.growth import growth_rows

FULL_ITEMS = (200_000, 600_000, 2_000_000)
DEFAULT_ITEMS = (20_000, 60_000, 200_000)
TARGET_ITEMS, TARGET_S, MEMORY_MB = 2_000_000, 300.0, 1536.0
REPO = Path(__file__).resolve().parent.parent

CHILD = r"""
import json, resource, sys, time
import django
django.setup()
from annotation.models import Output, Study
from annotation.services.items import items_import
study = Study.objects.get(slug=sys.argv[1])
rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
t0 = time.perf_counter()
with open(sys.argv[2], "rb") as f:
    n = items_import(study=study, file=f, filename="items.jsonl")
seconds = time.perf_counter() - t0
outputs = Output.objects.filter(item__study=study).count()
print(json.dumps({"seconds": seconds, "items": n, "outputs": outputs, "rss_baseline_mb": rss0,
                  "rss_peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def write_items(path: Path, n: int) -> int:
    """bench_import's items, written line by line (the file is never held whole here either)."""
    with path.open("w", encoding="utf-8") as f:
        for i in range(n):
            f.write(json.dumps({
                "id": f"item-{i:07d}",
                "context": f"Review {i}: the room was clean but the staff at the front desk were slow to help us.",
                "outputs": [{"system": f"model-{s}", "content": f"Response {s} to review {i}. Thank you for staying "
                             "with us."} for s in "abc"],
                "metadata": {"domain": "hotel" if i % 2 else "restaurant"},
            }) + "\n")
    return path.stat().st_size


def measure_size(n: int, tmp: Path) -> dict:
    path = tmp / "items.jsonl"
    size = write_items(path, n)
    with bench_database("import_x10") as db_name:
        from annotation.services.studies import study_create
        from rubrics.services import rubric_presets_install

        versions = {v.rubric.slug: v for v in rubric_presets_install()}
        study = study_create(name="bench import x10", rubric_version=versions["rrgen-001"])
        load_before = os.getloadavg()
        started = time.perf_counter()
        proc = subprocess.run([sys.executable, "-c", CHILD, study.slug, str(path)], env=_child_env(db_name),
                              cwd=REPO, capture_output=True, text=True, timeout=1800)
        wall = time.perf_counter() - started
        if proc.returncode != 0:
            raise RuntimeError(f"import of {n} items failed:\n{proc.stderr[-3000:]}")
        res = json.loads(proc.stdout.strip().splitlines()[-1])
    path.unlink()
    assert res["items"] == n and res["outputs"] == 3 * n, res
    res.update(n=n, file_mb=size / 2**20, wall_s=wall, loadavg_before=load_before, loadavg_after=os.getloadavg())
    print(f"  {n:>9,} items {res['seconds']:8.1f} s {res['rss_peak_mb']:7.0f} MB  load {load_before[0]:.2f}",
          flush=True)
    return res


def run(full: bool = False) -> dict:
    sizes = FULL_ITEMS if full else DEFAULT_ITEMS
    with tempfile.TemporaryDirectory() as tmp:
        measured = [measure_size(n, Path(tmp)) for n in sizes]
    rows = []
    largest = measured[-1]
    target_s = TARGET_S * largest["n"] / TARGET_ITEMS
    for m in measured:
        last = m is largest
        rows.append({"metric": f"import {m['n']:,} items x 3 outputs ({m['file_mb']:.0f} MB file, load "
                     f"{m['loadavg_before'][0]:.1f})", "value": round(m["seconds"], 2), "unit": "s",
                     "target": f"< {target_s:.0f} s (< {TARGET_S:.0f} s at 2M)" if last else None,
                     "ok": m["seconds"] < target_s if last else None})
        rows.append({"metric": f"import {m['n']:,} items: peak RSS (baseline {m['rss_baseline_mb']:.0f} MB)",
                     "value": round(m["rss_peak_mb"], 1), "unit": "MB", "target": f"< {MEMORY_MB:.0f}",
                     "ok": m["rss_peak_mb"] < MEMORY_MB})
    # Peak RSS itself: what an import adds above the child's baseline is a few MB, too small for a slope.
    series = {"seconds": [(m["n"], m["seconds"]) for m in measured],
              "peak MB": [(m["n"], m["rss_peak_mb"]) for m in measured]}
    rows += growth_rows("import_x10", "items", series)
    return {"name": "import_x10", "sizes": measured, "rows": rows}
