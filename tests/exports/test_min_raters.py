"""Seed 002: consensus and preference pairs need enough evaluators per output.

An output rated by fewer than the study's consensus_min_raters raters gets no consensus (the
report and the consensus export count it as left out); a preference pair needs at least
max(2, consensus_min_raters) raters on both of its outputs: never a pair from one vote.
"""

from __future__ import annotations

import csv
import io
import json

import pytest
from django.urls import reverse

from annotation.datasets import export_chunks
from annotation.reports.study import report_csv_rows, study_report
from tests.conftest import make_user
from tests.exports.conftest import CODEGEN_SYSTEMS
from tests.reports.factories import items_jsonl, submit

pytestmark = pytest.mark.django_db


def _scores(p: int) -> dict:
    """Output p scores 5-p on both criteria: every pair of outputs differs by at least 1."""
    return {(p, "technical_quality"): 5 - p, (p, "aesthetic_quality"): 5 - p}


def _study(make_study, researcher, *, min_raters: int, n_graders: int = 3):
    """Item ch-000 rated by every grader; item ch-001 by the first grader only."""
    graders = [make_user(f"g{k}") for k in range(n_graders)]
    study = make_study("codegen-002", annotators=graders, researchers=[researcher],
                       items_text=items_jsonl(2, systems=CODEGEN_SYSTEMS, prefix="ch"),
                       consensus_min_raters=min_raters)
    first, second = study.items.order_by("id")
    for r, grader in enumerate(graders):
        values = {k: v for p in range(4) for k, v in _scores(p).items()}
        submit(study, grader, first, values)
    submit(study, graders[0], second, {k: v for p in range(4) for k, v in _scores(p).items()})
    return study


def _pairs(study) -> list[dict]:
    return [json.loads(x) for x in b"".join(export_chunks(study, "pairs")).decode().splitlines()]


def _consensus(study) -> list[dict]:
    return list(csv.DictReader(io.StringIO(b"".join(export_chunks(study, "consensus")).decode())))


def test_outputs_with_one_rater_are_left_out_of_consensus_and_pairs(make_study, researcher):
    study = _study(make_study, researcher, min_raters=2)
    report = study_report(study, n_boot=20)
    cons = report["consensus"]
    assert cons["min_raters"] == 2 and cons["left_out"] == 4
    assert {r["item"] for r in cons["rows"]} == {"ch-000"} and cons["n_outputs"] == 4
    assert all(r["vote_count"] == 3 for r in cons["rows"])
    left = next(r for r in report_csv_rows(report) if r[3] == "outputs_left_out")
    assert left[4] == 4 and "fewer than 2 raters" in left[7]

    rows = _consensus(study)
    left_rows = [r for r in rows if r["level"] == "left_out"]
    assert [(r["item"], r["output"], r["n"]) for r in left_rows] == [("ch-001", str(p), "1") for p in range(4)]
    assert {r["item"] for r in rows if r["level"] != "left_out"} == {"ch-000"}

    pairs = _pairs(study)
    assert {p["metadata"]["challenge"] for p in pairs} == {"ch-000"}
    assert len(pairs) == 6  # every pair of the four outputs of ch-000 differs by >= 1
    assert all(p["metadata"]["chosen_scores"]["vote_count"] >= 2 for p in pairs)


def test_pairs_need_two_votes_even_when_the_setting_allows_one(make_study, researcher):
    study = _study(make_study, researcher, min_raters=1)
    cons = study_report(study, n_boot=20)["consensus"]
    assert cons["left_out"] == 0 and cons["n_outputs"] == 8  # consensus of one vote: the study allows it
    assert not [r for r in _consensus(study) if r["level"] == "left_out"]
    assert {p["metadata"]["challenge"] for p in _pairs(study)} == {"ch-000"}  # but never a pair


def test_a_higher_minimum_leaves_everything_out(make_study, researcher, client_for):
    study = _study(make_study, researcher, min_raters=4)
    cons = study_report(study, n_boot=20)["consensus"]
    assert cons["rows"] == [] and cons["left_out"] == 8
    assert "4 or more raters" in cons["reason"]
    assert _pairs(study) == []
    assert {r["level"] for r in _consensus(study)} == {"left_out"}
    page = client_for(researcher).get(reverse("report", args=[study.slug])).content.decode()
    assert "8 outputs left out" in page and "at least 4 raters" in page


def test_changing_the_setting_changes_the_cached_report(make_study, researcher, client_for):
    study = _study(make_study, researcher, min_raters=2)
    client = client_for(researcher)
    url = reverse("report", args=[study.slug])
    assert json.loads(client.get(url, {"download": "json"}).content)["consensus"]["left_out"] == 4
    study.consensus_min_raters = 1
    study.save(update_fields=["consensus_min_raters"])
    assert json.loads(client.get(url, {"download": "json"}).content)["consensus"]["left_out"] == 0
