"""tests/demo_snapshot.py: a database and media folder copied back are the ones copied, row for row (the
rating-change counters that triggers keep included, not counted twice), with the same sequences and files."""

from __future__ import annotations

import shutil

import pytest
from django.core.management import call_command
from django.db import connection

from annotation.services.assignments import assignment_next
from annotation.services.ratings import assignment_submit
from tests.conftest import make_user
from tests.demo_snapshot import restore, take

pytestmark = pytest.mark.django_db(transaction=True)


def rows_by_table() -> dict[str, str]:
    """Each table's rows, as text in a fixed order, hashed."""
    tables = connection.introspection.django_table_names(only_existing=True, include_views=False)
    with connection.cursor() as cursor:
        cursor.execute(" UNION ALL ".join(
            f"SELECT '{t}', count(*), md5(coalesce(string_agg(r::text, '|' ORDER BY r::text), '')) FROM \"{t}\" r"
            for t in tables))
        return {t: f"{n}:{digest}" for t, n, digest in cursor.fetchall()}


def sequences() -> dict[str, int | None]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT sequencename, last_value FROM pg_sequences WHERE schemaname = current_schema()")
        return dict(cursor.fetchall())


def test_a_snapshot_gives_back_the_same_rows_sequences_and_files(make_study, tmp_path):
    rater = make_user("snap-rater")
    study = make_study("aqua-003", annotators=[rater])
    assignment_submit(assignment=assignment_next(study=study, rater=rater),
                      answers={"responses": {"1": {"label": "TP"}}})
    media = tmp_path / "media"
    (media / "releases" / "1").mkdir(parents=True)
    (media / "releases" / "1" / "data.jsonl").write_bytes(b'{"a": 1}\n')
    rows, seqs = rows_by_table(), sequences()
    assert rows["annotation_ratingchanges"] != "0:" + "d41d8cd98f00b204e9800998ecf8427e"  # the triggers counted

    snapshot = take(connection, "what load_demo printed", media)
    # what a later module meets: the database emptied (sequences reset), other rows, no media folder
    call_command("flush", interactive=False, verbosity=0)
    make_user("someone-else")
    shutil.rmtree(media)

    restore(connection, snapshot, media)
    assert rows_by_table() == rows
    assert sequences() == seqs
    assert (media / "releases" / "1" / "data.jsonl").read_bytes() == b'{"a": 1}\n'
    assert snapshot.output == "what load_demo printed"


def test_the_workers_of_a_run_load_the_demo_once_through_their_shared_folder(make_study, tmp_path, monkeypatch):
    """The first worker to need the demo loads it and leaves its snapshot in the run's folder; another worker (here:
    this process with its own snapshot forgotten, its database emptied) copies that back instead of loading."""
    from tests import demo_snapshot

    shared, media = tmp_path / "run", tmp_path / "media"
    shared.mkdir()
    loads = []

    def load():
        loads.append(1)
        rater = make_user("shared-rater")
        study = make_study("aqua-003", annotators=[rater])
        assignment_submit(assignment=assignment_next(study=study, rater=rater),
                          answers={"responses": {"1": {"label": "TP"}}})
        (media / "releases").mkdir(parents=True)
        (media / "releases" / "data.jsonl").write_bytes(b"{}\n")
        return "printed", 1.5

    monkeypatch.setattr(demo_snapshot, "_kept", {})
    assert demo_snapshot.demo(connection, media, load, shared) == ("printed", 1.5)
    rows, seqs = rows_by_table(), sequences()
    assert (shared / "demo" / "rows.pickle").exists() and not list(shared.glob(".writing-*"))

    monkeypatch.setattr(demo_snapshot, "_kept", {})  # another worker: nothing of its own yet
    call_command("flush", interactive=False, verbosity=0)
    shutil.rmtree(media)
    assert demo_snapshot.demo(connection, media, load, shared) == ("printed", 1.5)
    assert len(loads) == 1
    assert rows_by_table() == rows and sequences() == seqs
    assert (media / "releases" / "data.jsonl").read_bytes() == b"{}\n"
