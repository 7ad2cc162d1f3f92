"""Item import streamed from a file (issue 26): written in chunks as it is read, still all or nothing."""

from __future__ import annotations

import io
import json

import pytest

from annotation import importers
from annotation.importers import ItemFileError
from annotation.models import Item, Output
from annotation.services import items as item_service
from annotation.services.items import items_import
from tests.robustness.test_item_import_db import new_study, row_counts  # noqa: F401  (fixture)

pytestmark = pytest.mark.django_db


def lines(n: int) -> list[str]:
    return [json.dumps({"id": f"é-{i}", "context": f"Ünïcode context {i} — ✓",
                        "outputs": [{"system": "a", "content": f"ça {i}"}, {"system": "b", "content": "ß"}]},
                       ensure_ascii=False) for i in range(n)]


@pytest.fixture
def small_chunks(monkeypatch):
    # Chunks of 3 items and reads of 7 bytes: many COPYs, and characters cut between reads.
    monkeypatch.setattr(item_service, "CHUNK_ITEMS", 3)
    monkeypatch.setattr(importers, "READ_BLOCK", 7)


def test_a_file_is_imported_in_chunks_as_the_text_would_be(new_study, small_chunks):
    text = "\ufeff" + "\n".join(lines(10)) + "\n"
    streamed, whole = new_study(), new_study()
    assert items_import(study=streamed, file=io.BytesIO(text.encode()), filename="items.jsonl") == 10
    assert items_import(study=whole, text=text, filename="items.jsonl") == 10

    def stored(study):
        return [(i.external_id, i.context, [(o.position, o.system, o.content) for o in i.outputs.order_by("position")])
                for i in Item.objects.filter(study=study).order_by("id")]

    assert stored(streamed) == stored(whole)
    assert [i.external_id for i in Item.objects.filter(study=streamed).order_by("id")] == [f"é-{i}" for i in range(10)]
    assert Output.objects.filter(item__study=streamed).count() == 20


def test_a_problem_after_chunks_were_written_keeps_nothing(new_study, small_chunks):
    study = new_study()
    before = row_counts()
    text = "\n".join(lines(10) + ['{"id": "é-2", "outputs": [{"system": "a", "content": "x"}]}']) + "\n"
    with pytest.raises(ItemFileError) as caught:
        items_import(study=study, file=io.BytesIO(text.encode()), filename="items.jsonl")
    assert caught.value.errors[0][:2] == (11, "id")  # the duplicate, on the last line
    assert row_counts() == before


def test_bytes_that_are_not_utf8_keep_nothing(new_study, small_chunks):
    study = new_study()
    before = row_counts()
    data = ("\n".join(lines(10)) + "\n").encode() + b'{"id": "\xff"}\n'
    with pytest.raises(UnicodeDecodeError):
        items_import(study=study, file=io.BytesIO(data), filename="items.jsonl")
    assert row_counts() == before


def test_a_csv_file_with_newlines_inside_cells_streams(new_study, small_chunks):
    study = new_study()
    rows = "".join(f'c{i},"line one\nline two {i}",a,"out ✓ {i}"\n' for i in range(5))
    text = "id,context,output_1_system,output_1_content\n" + rows
    assert items_import(study=study, file=io.BytesIO(text.encode()), filename="items.csv") == 5
    assert Item.objects.get(study=study, external_id="c4").context == "line one\nline two 4"


def test_a_copy_that_fails_in_the_writer_stops_the_import_and_keeps_nothing(new_study, small_chunks, monkeypatch):
    """The writer thread copies a chunk while the next is validated: its failure must reach the
    import, end it, and roll back the chunks already written."""
    study = new_study()
    before = row_counts()
    real, calls = item_service._copy_chunk, []

    def copy_chunk(raw, study_id, parsed):
        calls.append(len(parsed))
        if len(calls) == 2:
            with raw.cursor() as cursor:  # a real error from PostgreSQL, on the import's connection
                cursor.execute("SELECT 1 / 0")
        real(raw, study_id, parsed)

    monkeypatch.setattr(item_service, "_copy_chunk", copy_chunk)
    from django.db import DataError

    with pytest.raises(DataError):
        items_import(study=study, file=io.BytesIO(("\n".join(lines(30)) + "\n").encode()), filename="items.jsonl")
    assert row_counts() == before
    assert len(calls) <= 3  # stopped at the failure, not after the whole file
