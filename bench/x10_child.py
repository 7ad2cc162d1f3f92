"""Measuring one report phase in a fresh child process: its time and its own peak RSS (ru_maxrss),
as bench_exports does for the exports, so the generator's memory never counts.

    measure_in_child(db_name, "report", slug)         -> {"seconds", "rss_baseline_mb", "rss_peak_mb",
                                                          "tree_pss_peak_mb", "memory_peak_mb", ...}
    measure_in_child(db_name, "comparisons", slug)
    measure_in_child(db_name, "sections", slug)        # the sections other apps add (judges, answers' facets)

BENCH_CODE=/path/to/another/checkout[,/path/to/this/one] runs the child on each code in turn, on the
same database: the figures before a change come from the commit before it, on the same data and machine
(`git archive main | tar -x -C /tmp/main` makes such a checkout; it needs a .venv link beside it).
BENCH_PROFILE=1 writes a cProfile of the phase to bench/results/profile_<phase>_<size>.txt.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

REPO = Path(__file__).resolve().parent.parent
RESULTS = REPO / "bench" / "results"

CHILD = r"""
import cProfile, io, json, os, pstats, resource, sys, time
import django
django.setup()
import numpy, pandas, pyarrow, scipy.stats  # imported by the report anyway: count them in the baseline
from annotation.models import Study
from annotation.reports.study import study_report
from annotation.reports.comparisons import comparisons_section
phase, slug, profile_to = sys.argv[1], sys.argv[2], sys.argv[3]
study = Study.objects.get(slug=slug)
rss1 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
from annotation.reports.sections import extra_sections
run = {"report": lambda: study_report(study, n_boot=1000), "comparisons": lambda: comparisons_section(study),
       "sections": lambda: extra_sections(study, {})}[phase]
load0 = os.getloadavg()
profiler = cProfile.Profile() if profile_to else None
t0 = time.perf_counter()
if profiler:
    profiler.enable()
out = run()
if profiler:
    profiler.disable()
seconds = time.perf_counter() - t0
if profiler:
    text = io.StringIO()
    pstats.Stats(profiler, stream=text).sort_stats("cumulative").print_stats(45)
    open(profile_to, "w").write(text.getvalue())
summary = {}
if phase == "report":
    summary = {"ratings_analysed": out["counts"]["ratings_analysed"],
               "alpha": {k: a["alpha"]["value"] for k, a in out["agreement"].items()}}
elif phase == "sections":
    summary = {"titles": [section["title"] for section in out]}
else:
    summary = {k: {"n_answers": e["n_answers"], "top": max(e.get("systems", {"-": {"bt": 0}}).items(),
                                                             key=lambda kv: kv[1]["bt"] or 0)[0]}
               for k, e in out.items()}
print(json.dumps({"seconds": seconds, "rss_baseline_mb": rss1, "load_before": load0, "load_after": os.getloadavg(),
                  "rss_peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, "summary": summary}))
"""


def _child_env(db_name: str, code: Path) -> dict:
    env = dict(os.environ)
    url = urlsplit(os.environ["DATABASE_URL"])
    env["DATABASE_URL"] = urlunsplit(url._replace(path="/" + db_name))
    env.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    env.setdefault("CONCORD_TESTING", "1")
    env["PYTHONPATH"] = str(code) + os.pathsep + env.get("PYTHONPATH", "")
    return env


def codes() -> list[tuple[str, Path]]:
    """(label, checkout) of the code to measure: this checkout, or BENCH_CODE=path[,path...] (each
    measured on the same data; label "before" for a checkout other than this one)."""
    paths = [Path(p).resolve() for p in (os.environ.get("BENCH_CODE") or str(REPO)).split(",")]
    return [("after" if p == REPO else "before", p) for p in paths]


def measure_in_child(db_name: str, phase: str, slug: str, size_label: str = "", code: Path = REPO,
                     tag: str = "after") -> dict:
    profile_to = ""
    if os.environ.get("BENCH_PROFILE"):
        RESULTS.mkdir(exist_ok=True)
        profile_to = str(RESULTS / f"profile_{phase}_{size_label}_{tag}.txt")
    proc = subprocess.Popen([sys.executable, "-c", CHILD, phase, slug, profile_to], env=_child_env(db_name, code),
                            cwd=code, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    with TreeMemory(proc.pid) as tree:
        stdout, stderr = proc.communicate(timeout=1800)
    if proc.returncode != 0:
        raise RuntimeError(f"{phase} failed:\n{stderr[-3000:]}")
    result = json.loads(stdout.strip().splitlines()[-1])
    result["tree_pss_peak_mb"] = tree.peak_mb
    # A report that forks a child for a section holds memory in two processes: its own ru_maxrss
    # would leave the child's out, the sum of both processes' ru_maxrss would count the pages they
    # share twice. The peak is the larger of its own RSS and the two's summed PSS.
    result["memory_peak_mb"] = max(result["rss_peak_mb"], tree.peak_mb or 0.0)
    return result


class TreeMemory:
    """The peak of the summed PSS (proportional set size: a page two processes share counts half
    in each) of a process and its descendants, sampled every `every` seconds (Linux's /proc)."""

    def __init__(self, pid: int, every: float = 0.2):
        self.pid, self.every, self.peak_mb = pid, every, None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> "TreeMemory":
        if Path(f"/proc/{self.pid}/smaps_rollup").exists():
            self.peak_mb = 0.0
            self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()

    def _run(self) -> None:
        while not self._stop.wait(self.every):
            self.peak_mb = max(self.peak_mb, sum(_pss_kb(p) for p in _tree(self.pid)) / 1024)


def _tree(pid: int) -> list[int]:
    pids, at = [pid], 0
    while at < len(pids):
        for task in Path(f"/proc/{pids[at]}/task").glob("*/children"):
            try:
                pids += [int(c) for c in task.read_text().split()]
            except OSError:  # (the task ended)
                pass
        at += 1
    return pids


def _pss_kb(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                return int(line.split()[1])
    except OSError:  # (the process ended)
        pass
    return 0
