"""Every figure the researcher sees of a study has an oracle (issue 59 §1): the figure inventory
(tests/planted/figures.py) names each with its check (tests/planted/checks.py), and each check runs on
one planted study driven through the real routes and the real Celery worker (tests/planted/conftest.py).

Fails while an inventory figure has no check, while a figure shown on a scanned surface (the report's
JSON and CSV, the payment sheet's columns, the progress API, the judge run and its estimate, the paper
kit's tables) is not in the inventory, and when a check finds a figure unlike the truth.
"""

from __future__ import annotations

import csv
import io

import pytest

from tests.planted import truth
from tests.planted.checks import CHECKS
from tests.planted.figures import FIGURES, SURFACES, figure_paths, listed

# Figures known to be wrong, each with the file and line that makes it so (issue 59): its check is marked
# a strict xfail, so the test fails once the figure is right and the marker must go. None at present.
KNOWN_WRONG: dict[str, str] = {}


def test_every_figure_in_the_inventory_has_a_check():
    assert {f.surface for f in FIGURES} <= set(SURFACES)
    missing = sorted({f"{f.surface} {f.path} -> {f.check}" for f in FIGURES if f.check not in CHECKS})
    assert not missing, "figures without a check:\n" + "\n".join(missing)
    unused = set(CHECKS) - {f.check for f in FIGURES}
    assert not unused, f"checks no figure names: {sorted(unused)}"
    assert set(KNOWN_WRONG) <= set(CHECKS)


def _names(seen) -> dict[str, str]:
    """The study's own names -> the inventory's placeholders."""
    report = seen.report
    names = {r: "{rater}" for r in report["raters"]}
    names.update({s: "{system}" for row in seen.items for s in (o["system"] for o in row["outputs"])})
    names.update({c["key"]: "{criterion}" for c in seen.study.rubric_version.definition["criteria"]})
    names.update({k: "{question}" for k in report["sections"].get("By participants' answers", {})})
    return names


def _unlisted(surface: str, paths) -> list[str]:
    return sorted(f"{surface}: {p}" for p in paths if listed(surface, p) is None)


def test_every_figure_shown_is_in_the_inventory(seen):
    names = _names(seen)
    unlisted = _unlisted("report.json", figure_paths(seen.report, names))
    rows = list(csv.DictReader(io.StringIO(seen.report_csv)))
    shown = {f"{r['section']}/{r['statistic']}" for r in rows if r["value"] not in ("", "true", "false")
             and r["value"].replace(".", "", 1).replace("-", "", 1).replace("e", "", 1).isdigit()}
    unlisted += _unlisted("report.csv", shown)
    unlisted += _unlisted("paper", [n for n in seen.paper if n.startswith("tables/") and n.endswith(".md")])
    words = {"rater", "provider", "participant_id", "session_id", "started_at", "finished_at", "returned_at", "reason"}
    unlisted += _unlisted("payments.csv", set(csv.DictReader(io.StringIO(seen.payments)).fieldnames) - words)
    unlisted += _unlisted("progress.json", figure_paths(seen.progress, names))
    for run in seen.runs.values():
        run = {k: v for k, v in run.items() if k not in ("id", "config", "estimate")}
        unlisted += _unlisted("run.json", figure_paths(run, names))
    unlisted += _unlisted("estimate", {f"estimate.{p}" for p in figure_paths(
        next(iter(seen.runs.values()))["estimate"], names)})
    assert not unlisted, "figures shown but not in the inventory:\n" + "\n".join(sorted(set(unlisted)))


def _stats(node, path=""):
    if isinstance(node, dict):
        if "value" in node and "reason" in node:
            yield path, node
        for k, v in node.items():
            yield from _stats(v, f"{path}.{k}")
    elif isinstance(node, list):
        for v in node:
            yield from _stats(v, f"{path}[]")


def test_a_figure_that_cannot_be_computed_says_why_and_is_never_zero(seen):
    """Every statistic of the report JSON is a value or None with its reason; the ICCs this design
    cannot give (no output rated by every rater) are None with a reason, not 0."""
    stats = list(_stats(seen.report))
    assert len(stats) >= 5
    for path, s in stats:
        assert (s["value"] is None) == bool(s["reason"]), (path, s)
    details = seen.report["agreement"]["helpfulness"]["details"]
    assert all(v is None and details["reasons"][f"icc.{k}"] for k, v in details["icc"].items())


@pytest.mark.parametrize("check_id", [
    pytest.param(c, marks=pytest.mark.xfail(strict=True, reason=KNOWN_WRONG[c])) if c in KNOWN_WRONG else c
    for c in sorted(CHECKS)])
def test_figures_match_the_planted_truth_or_a_reference(seen, check_id):
    CHECKS[check_id](seen)


def test_every_participant_path_went_as_planted(seen):
    """The phase paths the driver walked, as rate/next named them."""
    last = {pid: p.states[-1] if p.states else None for pid, p in seen.participants.items()}
    want = {"declined": "screened_out", "consent_only": "consent", "failed_training": "screened_out",
            "left_midway": "rate", "finished": "done", "break": "done"}
    assert last == {p.pid: want[p.steps] for p in truth.PATHS}
    assert "training_failed" in seen.participants["p-failed-training"].states
