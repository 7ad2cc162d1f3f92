"""Downloads carry any cell a valid input can hold, and never drop a row silently (issue 55 §1).

One rater's comment at its limit (config/limits.py) in every row of an assignment: the CSV, JSONL and
Parquet exports and a release build hold every row with the whole comment. pyarrow's block is made
smaller than the comment here, as a comment past a 4 MiB block was in the report, so the parsing of
cells longer than a block is what runs. A formatter that wrote fewer rows than the database holds
fails before its last chunk leaves.
"""

from __future__ import annotations

import csv
import io
import json
import logging

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from django.urls import reverse

from annotation.datasets import export_chunks
from annotation.datasets import row_check
from annotation.datasets.releases import release_build, release_path, releases_create
from annotation.datasets.row_check import RowsMissing, csv_rows
from annotation.models import Assignment
from annotation.reports import rating_sql
from annotation.reports.rating_sql import arrow_table
from annotation.reports.ratings import count_rating_rows
from config.limits import limit
from tests.exports.test_row_checks import KINDS as OTHER_KINDS

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def media(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"


@pytest.fixture
def long_comment(rated_study, monkeypatch):
    """The study's first submitted assignment with a comment at its limit, of the characters CSV and
    JSON escape; the parser's block made smaller than that comment."""
    monkeypatch.setattr(rating_sql, "ARROW_BLOCK_BYTES", 4096)
    piece = 'a "quoted", line\nné\\ '
    text = (piece * (limit("assignment.comment") // len(piece) + 1))[:limit("assignment.comment")]
    assignment = Assignment.objects.filter(study=rated_study, status="submitted").order_by("id").first()
    Assignment.objects.filter(pk=assignment.pk).update(comment=text)
    return assignment, text


def _rows(fmt: str, data: bytes) -> list[dict]:
    if fmt == "csv":
        return list(csv.DictReader(io.StringIO(data.decode())))
    if fmt == "jsonl":
        return [json.loads(line) for line in data.decode().splitlines()]
    return pq.read_table(pa.BufferReader(data)).to_pylist()


@pytest.mark.parametrize("fmt", ["csv", "jsonl", "parquet"])
def test_an_export_holds_a_comment_at_the_limit_in_every_row(fmt, rated_study, long_comment, researcher,
                                                               client_for):
    assignment, text = long_comment
    response = client_for(researcher).get(reverse("dataset-export", args=[rated_study.slug, fmt]))
    assert response.status_code == 200
    rows = _rows(fmt, b"".join(response.streaming_content))
    assert len(rows) == count_rating_rows(rated_study)
    with_comment = [r for r in rows if r["comment"] == text]
    assert len(with_comment) == assignment.ratings.count() > 0


@pytest.mark.parametrize("fmt", ["csv", "jsonl", "parquet"])
def test_a_release_holds_a_comment_at_the_limit(fmt, rated_study, long_comment):
    assignment, text = long_comment
    (made,) = releases_create(study=rated_study, version="1.0.0", formats=[fmt])
    built = release_build(release_id=made.pk)
    assert built.status == "ready", built.error
    rows = _rows(fmt, release_path(built).read_bytes())
    assert len(rows) == count_rating_rows(rated_study)
    assert sum(r["comment"] == text for r in rows) == assignment.ratings.count()


def test_a_row_longer_than_a_block_is_parsed_whole():
    schema = pa.schema([("id", pa.int64()), ("text", pa.string())])
    cell = "x" * (3 * rating_sql.ARROW_BLOCK_BYTES)
    data = f"1,a\n2,\"{cell}\"\n3,b\n".encode()
    table = arrow_table(data, schema)
    assert table["id"].to_pylist() == [1, 2, 3] and table["text"].to_pylist() == ["a", cell, "b"]


@pytest.mark.parametrize("text", ["a,b\n1,2\n", 'a,"b\nc"\n"x""\n",2\n', '"\n\n",""\n', "no newline"])
def test_csv_rows_counts_rows_not_newlines(text):
    assert csv_rows(text.encode()) == len(list(csv.reader(io.StringIO(text)))) - (not text.endswith("\n"))


@pytest.mark.parametrize("fmt, count", [(fmt, "count_rating_rows") for fmt in ("csv", "jsonl", "parquet")]
                         + list(OTHER_KINDS.items()))  # (the others: tests/exports/test_row_checks.py)
def test_an_export_short_of_rows_fails_before_its_last_chunk(fmt, count, rated_study, monkeypatch, caplog):
    whole = b"".join(export_chunks(rated_study, fmt))
    real = getattr(row_check, count)(rated_study)
    monkeypatch.setattr(row_check, count, lambda study: real + 1)  # a row the export lost
    sent = []
    with caplog.at_level(logging.ERROR, logger="annotation.datasets.row_check"):
        with pytest.raises(RowsMissing, match=f"wrote {real} rows where the study has {real + 1}"):
            for chunk in export_chunks(rated_study, fmt):
                sent.append(chunk)
    assert len(b"".join(sent)) < len(whole)  # the end of the file never left
    assert "the download is cut short" in caplog.text


def test_a_streamed_export_short_of_rows_is_cut_short(rated_study, researcher, client_for, monkeypatch):
    real = count_rating_rows(rated_study)
    monkeypatch.setattr(row_check, "count_rating_rows", lambda study: real + 1)
    response = client_for(researcher).get(reverse("dataset-export", args=[rated_study.slug, "jsonl"]))
    assert response.status_code == 200  # the headers left before the rows were read
    with pytest.raises(RowsMissing):
        b"".join(response.streaming_content)
