"""Exports: files read back equal the database rows; pairs follow seed 002's schema and delta rule."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse

from annotation.datasets import FORMATS, export_chunks, export_to_file
from annotation.datasets import tables as export_datasets
from annotation.reports.ratings import LONG_NAMES
from annotation.stats.consensus import consensus_table
from tests.reports.test_selectors_ratings import expected_rows

pytestmark = pytest.mark.django_db


def _normalise(row: dict) -> dict:
    row = dict(row)
    if row.get("spans") is not None and isinstance(row["spans"], str):
        row["spans"] = json.loads(row["spans"])
    return row


def _expected(study) -> list[dict]:
    out = []
    for e in expected_rows(study):
        if e["value"] is not None and not isinstance(e["value"], str):
            e["value"] = str(e["value"])
        out.append(e)
    return out


def test_parquet_reads_back_equal_to_the_database(rated_study, tmp_path):
    written = export_to_file(rated_study, "parquet", tmp_path / "r.parquet")
    table = pq.read_table(written.path)
    assert table.schema.names == LONG_NAMES
    assert str(table.schema.field("submitted_at").type) == "timestamp[us, tz=UTC]"
    assert table.schema.metadata[b"concord.study"] == rated_study.slug.encode()
    got = [_normalise(r) for r in table.to_pylist()]
    assert got == _expected(rated_study)


def test_csv_command_writes_the_long_format(rated_study, tmp_path):
    out = tmp_path / "ratings.csv"
    call_command("export_study", rated_study.slug, "--format", "csv", "--out", str(out))
    rows = list(csv.DictReader(io.StringIO(out.read_text())))
    exp = _expected(rated_study)
    assert len(rows) == len(exp)
    for got, e in zip(rows, exp):
        assert got["item"] == e["item"] and got["rater"] == e["rater"]
        assert got["criterion"] == (e["criterion"] or "")
        assert got["value"] == (e["value"] or "")
        assert (float(got["score"]) if got["score"] else None) == e["score"]
        assert got["ignored"] == ("true" if e["ignored"] else "false")
        assert int(got["time_on_task_ms"]) == e["time_on_task_ms"]


def test_jsonl_command_to_stdout(rated_study, capfdbinary):
    call_command("export_study", rated_study.slug, "--format", "jsonl")
    lines = capfdbinary.readouterr().out.decode().splitlines()
    exp = _expected(rated_study)
    assert len(lines) == len(exp)
    first = json.loads(lines[0])
    assert list(first) == LONG_NAMES and first["item"] == exp[0]["item"]


def test_exports_are_deterministic(rated_study):
    for fmt in FORMATS:
        assert b"".join(export_chunks(rated_study, fmt)) == b"".join(export_chunks(rated_study, fmt)), fmt


def read_pairs(study, **options) -> list[dict]:
    return [json.loads(x) for x in b"".join(export_chunks(study, "pairs", **options)).decode().splitlines()]


def test_pairs_follow_the_seed_schema_and_delta_rule(codegen_study):
    pairs = read_pairs(codegen_study)
    # item 0: overall 4.5 / 4.0 / 3.75 / 2.0 -> every pair but m2-m3 (0.25 < 0.5); item 1: all ties
    got = {(p["metadata"]["chosen_model"], p["metadata"]["rejected_model"]) for p in pairs}
    assert got == {("m1", "m2"), ("m1", "m3"), ("m1", "m4"), ("m2", "m4"), ("m3", "m4")}
    by = {(p["metadata"]["chosen_model"], p["metadata"]["rejected_model"]): p for p in pairs}
    p = by[("m1", "m3")]
    assert set(p) == {"prompt", "chosen", "rejected", "metadata"}
    assert set(p["metadata"]) == {"challenge", "chosen_model", "rejected_model", "chosen_scores",
                                  "rejected_scores", "score_difference", "dataset_version", "evaluation_date"}
    assert set(p["metadata"]["chosen_scores"]) == {"technical", "aesthetic", "overall", "confidence_interval",
                                                   "vote_count"}
    item = codegen_study.items.order_by("id")[0]
    assert p["prompt"] == item.context
    assert p["chosen"] == item.outputs.get(system="m1").content
    assert p["rejected"] == item.outputs.get(system="m3").content
    meta = p["metadata"]
    assert meta["challenge"] == "ch-000"
    assert meta["chosen_scores"] == {"technical": 5.0, "aesthetic": 4.0, "overall": 4.5,
                                     "confidence_interval": [4.5, 4.5], "vote_count": 2}
    half = 1.959963984540054 * np.std([4.0, 3.5], ddof=1) / np.sqrt(2)
    assert meta["rejected_scores"]["technical"] == 4.0 and meta["rejected_scores"]["aesthetic"] == 3.5
    assert meta["rejected_scores"]["confidence_interval"] == pytest.approx([3.75 - half, 3.75 + half])
    assert meta["score_difference"] == pytest.approx(0.75)
    assert meta["dataset_version"] == "0.0.0-dev"
    assert meta["evaluation_date"] is not None and len(meta["evaluation_date"]) == 10
    assert all(q["metadata"]["chosen_scores"]["overall"] > q["metadata"]["rejected_scores"]["overall"] for q in pairs)
    assert all(q["metadata"]["challenge"] != "ch-002" for q in pairs)  # attention check left out


def test_pairs_delta_is_configurable(codegen_study, tmp_path):
    assert len(read_pairs(codegen_study, delta=0.5)) == 5
    assert len(read_pairs(codegen_study, delta=0.25)) == 6  # m2-m3 exactly 0.25: included (>= delta)
    assert len(read_pairs(codegen_study, delta=1.0)) == 3
    out = tmp_path / "pairs.jsonl"
    call_command("export_study", codegen_study.slug, "--format", "pairs", "--delta", "2.0", "--out", str(out))
    assert [json.loads(x)["metadata"]["chosen_model"] for x in out.read_text().splitlines()] == ["m1", "m2"]
    with pytest.raises(CommandError, match="positive"):
        call_command("export_study", codegen_study.slug, "--format", "pairs", "--delta", "0")
    with pytest.raises(ValueError):
        read_pairs(codegen_study, delta=0)


def test_consensus_table_equals_the_statistics(codegen_study, monkeypatch):
    monkeypatch.setattr(export_datasets, "ITEMS_PER_CHUNK", 1)  # one item per chunk: chunking is exercised
    text = b"".join(export_chunks(codegen_study, "consensus")).decode()
    table = pd.read_csv(io.StringIO(text))
    crit = table[table["level"] == "criterion"]
    rows = []
    for a in codegen_study.assignments.filter(item__is_attention_check=False).prefetch_related("ratings__output"):
        for r in a.ratings.all():
            rows.append({"item": a.item.external_id, "output": r.output.position, "rater": a.rater.username,
                         "criterion": r.criterion, "score": float(r.value)})
    ref = consensus_table(pd.DataFrame(rows))
    merged = crit.merge(ref, on=["item", "output", "criterion"], suffixes=("", "_ref"))
    assert len(merged) == len(ref) == len(crit) == 2 * 4 * 2
    np.testing.assert_allclose(merged["consensus"], merged["consensus_ref"])
    np.testing.assert_allclose(merged["ci_low"], merged["ci_low_ref"])
    overall = table[(table["level"] == "overall") & (table["item"] == "ch-000")].set_index("system")["consensus"]
    assert overall.to_dict() == pytest.approx({"m1": 4.5, "m2": 4.0, "m3": 3.75, "m4": 2.0})
    assert "ch-002" not in set(table["item"])


@pytest.mark.parametrize("fmt", list(FORMATS))
def test_only_readers_download_exports(fmt, rated_study, raters, researcher, outsider, admin_user, client_for):
    url = reverse("dataset-export", args=[rated_study.slug, fmt])
    for user in (raters[0], outsider):
        assert client_for(user).get(url).status_code == 404
    for user in (researcher, admin_user):
        response = client_for(user).get(url)
        assert response.status_code == 200
        assert response.streaming
        assert response["Content-Disposition"].startswith("attachment; filename=")
        body = b"".join(response.streaming_content)
        assert body == b"".join(export_chunks(rated_study, fmt))


def test_datasets_page_access(rated_study, raters, researcher, outsider, admin_user, client_for, client):
    url = reverse("datasets", args=[rated_study.slug])
    assert client_for(raters[0]).get(url).status_code == 404
    assert client_for(outsider).get(url).status_code == 404
    assert client.get(url).status_code == 302
    page = client_for(researcher).get(url)
    assert page.status_code == 200
    html = page.content.decode()
    for fmt in FORMATS:
        assert reverse("dataset-export", args=[rated_study.slug, fmt]) in html
    assert client_for(admin_user).get(url).status_code == 200


def test_bad_delta_and_unknown_format(rated_study, researcher, client_for):
    c = client_for(researcher)
    assert c.get(reverse("dataset-export", args=[rated_study.slug, "pairs"]), {"delta": "-1"}).status_code == 400
    assert c.get(reverse("dataset-export", args=[rated_study.slug, "pairs"]), {"delta": "x"}).status_code == 400
    assert c.get(reverse("dataset-export", args=[rated_study.slug, "xlsx"])).status_code == 404


def test_empty_study_exports(make_study, tmp_path):
    study = make_study("codegen-002")
    assert b"".join(export_chunks(study, "csv")).decode().strip() == ",".join(LONG_NAMES)
    assert b"".join(export_chunks(study, "jsonl")) == b""
    assert b"".join(export_chunks(study, "pairs")) == b""
    table = pq.read_table(export_to_file(study, "parquet", tmp_path / "e.parquet").path)
    assert table.num_rows == 0 and table.schema.names == LONG_NAMES
    assert Path(tmp_path / "e.parquet").stat().st_size > 0
