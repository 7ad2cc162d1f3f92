"""Every download that streams rows from the database checks its rows against the database before
its last chunk leaves (issue 55 §1): the ratings downloads (tests/exports/test_long_cells.py), and here
the pairs, the consensus tables, the items tables and the full Hugging Face folder. A normal export
passes the check; a planted mismatch raises RowsMissing and the file's end never leaves: here a row the
stream lost, and in tests/exports/test_long_cells.py a count the database moves to (every kind below)."""

from __future__ import annotations

import io
import json
import zipfile

import pyarrow.parquet as pq
import pytest

from annotation.datasets import export_chunks, formatters, row_check, tables
from annotation.datasets.row_check import RowsMissing
from annotation.models import Item, Output, Rating
from annotation.datasets.tables import count_analysed_ratings
from annotation.reports.ratings import count_item_rows, count_rating_rows

pytestmark = pytest.mark.django_db

# format -> the count its check compares with
KINDS = {
    "pairs": "count_analysed_ratings",
    "consensus": "count_analysed_ratings",
    "consensus-parquet": "count_analysed_ratings",
    "consensus-jsonl": "count_analysed_ratings",
    "items-parquet": "count_item_rows",
    "items-jsonl": "count_item_rows",
    "hf-full": "count_item_rows",  # and its ratings and consensus: one planted mismatch is enough to cut it
}


def test_the_counts_match_planted_truth(rated_study):
    from tests.reports.conftest import N_ITEMS

    assert count_item_rows(rated_study) == N_ITEMS * 3  # three outputs an item
    Item.objects.create(study=rated_study, external_id="bare", context="no outputs")
    assert count_item_rows(rated_study) == N_ITEMS * 3 + 1  # an item without outputs: one row
    analysed = Rating.objects.filter(assignment__study=rated_study, assignment__status="submitted",
                                     assignment__ignored=False, assignment__is_attention_check=False,
                                     criterion__in=[c["key"] for c in tables.analysed(rated_study)[0]]).count()
    assert analysed > 0 and count_analysed_ratings(rated_study) == analysed


@pytest.mark.parametrize("fmt", list(KINDS))
def test_a_normal_export_passes_its_check(fmt, rated_study):
    data = b"".join(export_chunks(rated_study, fmt))
    if fmt == "items-jsonl":
        assert data.count(b"\n") == count_item_rows(rated_study)
    elif fmt == "items-parquet":
        assert pq.read_table(io.BytesIO(data)).num_rows == count_item_rows(rated_study)
    elif fmt == "hf-full":
        with zipfile.ZipFile(io.BytesIO(data)) as folder:  # whole: its central directory left last
            ratings = pq.read_table(io.BytesIO(folder.read("data/ratings.parquet")))
        assert ratings.num_rows == count_rating_rows(rated_study)
    elif fmt == "pairs":
        assert data and all(json.loads(line)["chosen"] for line in data.splitlines())
    else:
        assert data


@pytest.mark.parametrize("fmt", ["pairs", "consensus", "consensus-parquet", "hf-full"])
def test_a_rating_the_stream_lost_fails(fmt, rated_study, monkeypatch):
    """Not the count but the stream is wrong: the first chunk of items loses one rating on its way."""
    real = tables.item_chunks

    def lossy(study, **kwargs):
        for n, (df, outputs) in enumerate(real(study, **kwargs)):
            yield (df.iloc[1:] if n == 0 else df), outputs

    monkeypatch.setattr(tables, "item_chunks", lossy)
    monkeypatch.setattr(formatters, "item_chunks", lossy)
    with pytest.raises(RowsMissing, match="rows where the study has"):
        b"".join(export_chunks(rated_study, fmt))


def test_an_output_the_items_stream_lost_fails(rated_study, monkeypatch):
    Output.objects.filter(item__study=rated_study).first()  # (the study has outputs)
    real = formatters.item_batches

    def lossy(study, **kwargs):
        for n, batch in enumerate(real(study, **kwargs)):
            yield batch.slice(1) if n == 0 else batch

    monkeypatch.setattr(formatters, "item_batches", lossy)
    for fmt in ("items-jsonl", "items-parquet", "hf-full"):
        with pytest.raises(RowsMissing, match="items"):
            b"".join(export_chunks(rated_study, fmt))


def test_a_comparative_studys_pairs_check_the_answers_they_read(admin_user):
    """A comparative study's pairs come from its answers to the first comparative question: every stored
    answer must be read. One stored in a shape the reader cannot take (here written past the API, as a
    damaged row would be) is a row lost: the download is cut, not quietly short of that answer."""
    from annotation.datasets.tables import count_comparative_answers
    from annotation.simulation.study import simulated_study_create

    study = simulated_study_create(preset="compare-pairwise", slug="rc-pairwise", n_items=6, n_raters=3,
                                   admin=admin_user).study
    stored = Rating.objects.filter(assignment__study=study, criterion="preference", output__isnull=True)
    assert count_comparative_answers(study, "preference") == stored.count() == 6 * 3
    data = b"".join(export_chunks(study, "pairs"))
    assert data and all(json.loads(line)["chosen"] for line in data.splitlines())
    stored.filter(pk=stored.first().pk).update(value="damaged")
    with pytest.raises(RowsMissing, match="the pairs export: wrote 17 rows where the study has 18"):
        b"".join(export_chunks(study, "pairs"))
