"""The study report alone at 1M ratings, on two checkouts, with its JSON compared: a speed-up that must not move a
figure (issue 57 §4). The study (bench/x10_data.py's, 20 ratings an item) stays in a kept database, so each code
runs on the same rows; each run is a fresh child (time of `study_report(n_boot=1000)`), the load and
bench/machine_speed.py's probe beside it.

    python -m bench.report_same build [N_RATINGS]           # once: database concord_reportsame
    python -m bench.report_same time BEFORE_CHECKOUT [ROUNDS] # BEFORE and this checkout in turn, JSON compared,
                                                             # bench/results/report_same.json
(`git archive <commit> | tar -x -C /tmp/before` makes a BEFORE checkout; it needs a .venv link beside it.)
Run with DATABASE_URL unset: the launcher's embedded PostgreSQL under .data/ serves it.
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

REPO = Path(__file__).resolve().parent.parent
DB = "concord_reportsame"
BUILD = r"""
import sys, django
django.setup()
from django.core.management import call_command
call_command("migrate", verbosity=0)
from bench.x10_data import report_study
print(report_study(int(sys.argv[1]) // 20).slug)
"""
CHILD = r"""
import json, sys, time
import django
django.setup()
import numpy, pandas, pyarrow, scipy.stats  # imported by the report anyway
from annotation.models import Study
from annotation.reports.study import study_report
study = Study.objects.filter(slug__startswith="bench-x10-report").get()
t0 = time.perf_counter()
out = study_report(study, n_boot=1000)
seconds = time.perf_counter() - t0
out.pop("generated_at")
open(sys.argv[1], "w").write(json.dumps(out, sort_keys=True))
print(json.dumps({"seconds": seconds, "ratings": out["counts"]["ratings_analysed"]}))
"""


def _env(code: Path) -> dict:
    url = urlsplit(os.environ["DATABASE_URL"])
    return dict(os.environ, DATABASE_URL=urlunsplit(url._replace(path="/" + DB)), PYTHONPATH=str(code),
                DJANGO_SETTINGS_MODULE="config.settings", CONCORD_TESTING="1")


def build(n: int) -> None:
    import psycopg

    from bench.dbtools import _admin_conninfo

    with psycopg.connect(**_admin_conninfo(), autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{DB}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{DB}"')
    subprocess.run([sys.executable, "-c", BUILD, str(n)], env=_env(REPO), cwd=REPO, check=True)


def report_in_child(code: Path, out: Path) -> dict:
    proc = subprocess.run([sys.executable, "-c", CHILD, str(out)], env=_env(code), cwd=code, capture_output=True,
                          text=True)
    if proc.returncode:
        raise RuntimeError(f"the report on {code} failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def time_both(before: Path, rounds: int) -> dict:
    from bench.machine_speed import probe_ms

    runs, texts = [], {}
    with tempfile.TemporaryDirectory() as tmp:
        for n in range(rounds):
            for tag, code in (("before", before), ("after", REPO)):
                out = Path(tmp) / f"{tag}{n}.json"
                load = os.getloadavg()[0]
                res = report_in_child(code, out)
                runs.append({"code": tag, **res, "load_before": load, "probe_ms": probe_ms()})
                texts.setdefault(tag, out.read_text())
                print(json.dumps(runs[-1]), flush=True)
    same = texts["before"] == texts["after"]
    best = {tag: min(r["seconds"] for r in runs if r["code"] == tag) for tag in texts}
    return {"name": "report_same", "json_identical": same, "best_seconds": best, "runs": runs,
            "finished_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}


def main(argv: list[str]) -> int:
    from config.embedded import services

    with services(REPO / ".data") as urls:
        os.environ.update(urls)
        if argv[0] == "build":
            build(int(argv[1]) if len(argv) > 1 else 1_000_000)
            return 0
        result = time_both(Path(argv[1]).resolve(), int(argv[2]) if len(argv) > 2 else 2)
    (REPO / "bench" / "results" / "report_same.json").write_text(json.dumps(result, indent=2) + "\n")
    print(f"report JSON identical before and after: {result['json_identical']}; fastest {result['best_seconds']}")
    return 0 if result["json_identical"] else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
