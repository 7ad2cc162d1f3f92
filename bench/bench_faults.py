"""Fault scenarios with a pass/fail verdict: the tests in tests/faults/, run as one bench.

Each test does the damage for real (kills a gunicorn worker mid-submit, crash-restarts PostgreSQL,
restarts Redis during a judge run, SIGKILLs a Celery worker mid-chunk or mid-export, takes the LLM
backend down...) and asserts the verdict: nothing lost, nothing duplicated, the work completes after
recovery. The tests record their figures with pytest's `record_property`; this bench runs them under
pytest, reads the JUnit XML and prints one row per scenario. The same tests run in `make test`, so CI
proves the verdicts on every change; this bench puts them in the README's table.

    python -m bench faults
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TESTS = ["tests/faults", "tests/judges_platform/test_worker_kill.py"]
VERDICT = "nothing lost or duplicated; completes after recovery"


def _label(case: ET.Element) -> str:
    name = case.get("name", "")
    module = case.get("classname", "").rsplit(".", 1)[-1].removeprefix("test_")
    return f"{module}: {name.removeprefix('test_').replace('_', ' ')}"


def _figures(case: ET.Element) -> str:
    props = [(p.get("name"), p.get("value")) for p in case.iter("property")]
    return ", ".join(f"{k} {v}" for k, v in props)


def parse(xml_text: str) -> list[dict]:
    rows = []
    for case in ET.fromstring(xml_text).iter("testcase"):
        problem = next((c for c in case if c.tag in ("failure", "error")), None)
        skipped = case.find("skipped") is not None
        outcome = "skipped" if skipped else "FAIL" if problem is not None else "pass"
        figures = _figures(case)
        rows.append({"metric": f"fault: {_label(case)}", "value": outcome, "unit": "",
                     "target": "pass", "ok": outcome == "pass",
                     "seconds": float(case.get("time", 0) or 0), "figures": figures,
                     "message": (problem.get("message", "")[:500] if problem is not None else "")})
    return rows


def run(full: bool = False) -> dict:
    env = {**os.environ, "CONCORD_TESTING": "1"}
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "faults.xml"
        proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                               f"--junitxml={report}", "-o", "junit_family=xunit1", *TESTS],
                              cwd=ROOT, env=env, capture_output=True, text=True)
        if not report.exists():
            raise RuntimeError(f"pytest wrote no report (exit {proc.returncode}):\n{proc.stdout[-3000:]}{proc.stderr[-3000:]}")
        rows = parse(report.read_text())
    if not rows:
        raise RuntimeError(f"no fault scenarios ran:\n{proc.stdout[-3000:]}")
    for row in rows:  # the figures ride along in the table's value column
        row["value"] = f"{row['value']} ({row['figures']})" if row["figures"] else row["value"]
    return {"name": "faults", "rows": rows, "verdict": VERDICT, "pytest_exit": proc.returncode,
            "tests": TESTS}
