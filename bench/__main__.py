"""`make bench`: run every bench/bench_*.py, print one table, write bench/results/<name>.json.

Each module exposes run(full: bool) -> {"name", "rows": [{"metric","value","unit","target","ok"}], ...}.
`make bench FULL=1` runs DESIGN.md's full sizes. `python -m bench import stats` runs a subset.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import platform
import sys
import time
import traceback
from pathlib import Path

from bench.machine_speed import probe_ms

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"


def machine(probe_before_ms: float | None = None) -> dict:
    """What ran the bench; python_probe_ms: bench/machine_speed.py's figure before and after it (the same kind
    of machine ran the same code at very different speeds, so a figure needs the speed beside it)."""
    return {"cpus": os.cpu_count(), "platform": platform.platform(), "python": platform.python_version(),
            "memory_gb": round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1),
            "python_probe_ms": {"before": probe_before_ms, "after": probe_ms()}}


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench")
    parser.add_argument("only", nargs="*", help="bench names to run (default: all)")
    parser.add_argument("--full", action="store_true", help="DESIGN.md's full sizes")
    args = parser.parse_args(argv)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    os.environ.setdefault("CONCORD_TESTING", "1")
    names = sorted(p.stem.removeprefix("bench_") for p in HERE.glob("bench_*.py"))
    names = [n for n in names if not args.only or n in args.only]
    RESULTS.mkdir(exist_ok=True)
    table, failed = [], []
    for name in names:
        probe_before = probe_ms()
        started = time.perf_counter()
        try:
            result = importlib.import_module(f"bench.bench_{name}").run(full=args.full)
        except Exception:
            traceback.print_exc()
            failed.append(name)
            continue
        result.update(machine=machine(probe_before), full=args.full, seconds=round(time.perf_counter() - started, 1),
                      finished_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
        (RESULTS / f"{result['name']}.json").write_text(json.dumps(result, indent=2, default=str) + "\n")
        table += [(result["name"], row) for row in result["rows"]]
        print(f"[{name}] done in {result['seconds']} s", flush=True)
    print_table(table)
    if failed:
        print(f"benchmarks that failed: {', '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0


def _fmt(value) -> str:
    if isinstance(value, float):
        return f"{value:,.3f}" if abs(value) < 100 else f"{value:,.0f}"
    return str(value)


def print_table(table: list[tuple[str, dict]]) -> None:
    header = ("bench", "metric", "value", "unit", "target", "ok")
    rows = [(name, r["metric"], _fmt(r["value"]), r.get("unit", ""), r.get("target") or "",
             {True: "yes", False: "NO", None: ""}[r.get("ok")]) for name, r in table]
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows)]
    line = " | ".join(h.ljust(w) for h, w in zip(header, widths))
    print("\n" + line + "\n" + "-+-".join("-" * w for w in widths))
    for row in rows:
        print(" | ".join(str(c).ljust(w) for c, w in zip(row, widths)))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
