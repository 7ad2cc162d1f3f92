"""`manage.py comparisons FILE --json` end to end at arena scale (issue 43): 5,000,000 pairwise
judgements among 200 systems (bench_arena's generator, 10% ties) written as the CSV the command
reads, the command run as a user runs it (a fresh process, from the file, JSON on stdout), < 10 s;
beside it, in the same run, choix on the same file (pandas' pyarrow reader into category codes,
the win-count matrix, choix.ilsr_pairwise_dense), and the largest difference of their strengths.

BENCH_SIZES picks other sizes (judgements, comma-separated); the load average is recorded around
each timing, since the machine may be shared.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from bench.bench_arena import write_arena_csv

REPO = Path(__file__).resolve().parent.parent
TARGET_S, TARGET_N, TOLERANCE = 10.0, 5_000_000, 1e-6


def _row(metric: str, value: float, unit: str, target: str | None = None, ok: bool | None = None) -> dict:
    return {"metric": metric, "value": round(float(value), 6), "unit": unit, "target": target, "ok": ok}


def command(path: Path) -> tuple[float, dict]:
    t0 = time.perf_counter()
    done = subprocess.run([sys.executable, "manage.py", "comparisons", str(path), "--json"], cwd=REPO,
                          capture_output=True, text=True, env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"),
                                                               "SECRET_KEY": "x"}, check=True)
    return time.perf_counter() - t0, json.loads(done.stdout)


def choix_from_file(path: Path) -> tuple[float, float, dict[str, float]]:
    """choix's ILSR from the same file, ties one win each way and wins twice (choix's counts have no
    half wins; doubling leaves the estimate unchanged), centred to mean 0 as Concord's. Returns the
    seconds from the file, the seconds of the fit alone, and the strengths."""
    import choix
    import pandas as pd

    t0 = time.perf_counter()
    df = pd.read_csv(path, engine="pyarrow", dtype="category")
    systems = sorted(set(df["system_a"].cat.categories) | set(df["system_b"].cat.categories))
    a, b, w = (pd.Categorical(df[c], categories=systems).codes.astype(np.int64)
               for c in ("system_a", "system_b", "winner"))
    k, tie = len(systems), (df["winner"] == "tie").to_numpy()
    loser = np.where(w == a, b, a)
    counts = np.bincount(np.concatenate([(w * k + loser)[~tie]] * 2 + [(a * k + b)[tie], (b * k + a)[tie]]),
                         minlength=k * k).reshape(k, k).astype(float)
    t1 = time.perf_counter()
    theta = choix.ilsr_pairwise_dense(counts, alpha=0, max_iter=10_000, tol=1e-12)
    t2 = time.perf_counter()
    return t2 - t0, t2 - t1, dict(zip(systems, (theta - theta.mean()).tolist()))


def run(full: bool = False) -> dict:
    sizes = [int(s) for s in os.environ.get("BENCH_SIZES", str(TARGET_N)).split(",")]
    rows, measured = [], []
    for n in sizes:
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "arena.csv"
            write_arena_csv(path, n)
            size_mb = path.stat().st_size / 2**20
            load0 = os.getloadavg()
            ours_s, out = command(path)
            load1 = os.getloadavg()
            choix_s, choix_fit_s, reference = choix_from_file(path)
            load2 = os.getloadavg()
        diff = max(abs(out["systems"][s]["bt"] - v) for s, v in reference.items())
        at_target = n >= TARGET_N
        label = f"{n:,} judgements, {len(reference)} systems"
        rows += [_row(f"manage.py comparisons FILE --json, {label} (from the file, fresh process)", ours_s, "s",
                      f"< {TARGET_S:g} s at 5M" if at_target else None, ours_s < TARGET_S if at_target else None),
                 _row(f"choix ILSR from the same file (pandas pyarrow read + dense counts), {label}", choix_s, "s"),
                 _row(f"choix ILSR fit alone (the counts in memory), {label}", choix_fit_s, "s"),
                 _row(f"command / choix from the file, {label}", ours_s / choix_s, "x"),
                 _row(f"max |command - choix| log-strength, {label}", diff, "", f"< {TOLERANCE:g}", diff < TOLERANCE)]
        measured.append({"judgements": n, "file_mb": round(size_mb, 1), "command_s": ours_s, "choix_s": choix_s,
                         "choix_fit_s": choix_fit_s,
                         "max_abs_diff": diff, "load_before_command": load0, "load_after_command": load1,
                         "load_after_choix": load2})
    return {"name": "arena_command", "rows": rows, "config": {"sizes": measured}}


if __name__ == "__main__":
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    for r in run()["rows"]:
        print(f"{r['metric']:<100} {r['value']:>12,.6g} {r['unit']:<4} {r['target'] or ''} {r['ok']}")
