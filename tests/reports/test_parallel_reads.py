"""Bulk reads in ranges on several connections give exactly what one query gives, from one snapshot.

These tests commit for real (transaction=True): the worker connections cannot see a test
transaction's rows, which is also why a read inside a transaction runs as one query.
"""

from __future__ import annotations

import threading

import pyarrow as pa
import pytest
from django.db import connection, transaction

from annotation.reports import parallel_copy, ratings
from annotation.reports.long_arrow import rating_batches
from annotation.reports.long_json import rating_json_lines
from annotation.reports.ratings import copy_ratings, stats_frame
from tests.conftest import make_user
from tests.reports.conftest import rrgen_value
from tests.reports.factories import rate_study

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def calls(monkeypatch):
    """How many reads went through copy_in_parallel."""
    seen = []
    real = parallel_copy.copy_in_parallel

    def spy(*args, **kwargs):
        seen.append(len(args[0]))
        return real(*args, **kwargs)

    monkeypatch.setattr(parallel_copy, "copy_in_parallel", spy)
    return seen


def _ranges_of(monkeypatch, assignments: int) -> None:
    """Ranges of this many assignments (a real study's are thousands)."""
    monkeypatch.setattr(ratings, "MIN_RANGE_ASSIGNMENTS", 1)
    monkeypatch.setattr(ratings, "MAX_RANGE_ASSIGNMENTS", assignments)


def _reads(study) -> dict:
    table = pa.Table.from_batches(list(rating_batches(study)))
    frame = stats_frame(study, ["fluency", "decision"]).sort_values(["item_id", "rater_id", "output", "criterion"])
    return {"csv": b"".join(copy_ratings(study, fmt="csv")), "jsonl": b"".join(copy_ratings(study, fmt="jsonl")),
            "arrow": table, "jsonl_arrow": b"".join(rating_json_lines(study)),
            "frame": frame.reset_index(drop=True).astype({c: str for c in ("system", "criterion", "label")})}


def _one_query(study, settings) -> dict:
    settings.BULK_READ_WORKERS = 1
    return _reads(study)


def test_ranges_on_two_connections_equal_one_query(rated_study, settings, monkeypatch, calls):
    single = _one_query(rated_study, settings)
    assert not calls
    settings.BULK_READ_WORKERS = 2
    _ranges_of(monkeypatch, 5)  # 23 submitted assignments -> 5 ranges
    split = _reads(rated_study)
    # arrow (a ratings and an assignments read per range), stats frame, csv, jsonl, jsonl from arrow (as arrow)
    assert calls == [10, 5, 5, 5, 10]
    assert split["csv"] == single["csv"]
    assert split["jsonl"] == single["jsonl"] == split["jsonl_arrow"] == single["jsonl_arrow"]
    assert split["arrow"].equals(single["arrow"])
    assert split["frame"].equals(single["frame"])
    assert single["csv"].count(b"\n") > 24 * 3  # not two empty reads


def test_inside_a_transaction_one_query_sees_its_own_rows(rated_study, settings, monkeypatch, calls):
    settings.BULK_READ_WORKERS = 2
    _ranges_of(monkeypatch, 5)
    late = make_user("late-rater")
    with transaction.atomic():
        rate_study(rated_study, [late], rrgen_value)  # not committed yet
        text = b"".join(copy_ratings(rated_study, fmt="csv")).decode()
    assert not calls
    assert "late-rater" in text


def test_one_snapshot_for_every_range(rated_study, settings, monkeypatch, calls):
    """Rows committed after the read began are in none of its ranges, even on a worker
    connection that opened after they were committed."""
    settings.BULK_READ_WORKERS = 2
    _ranges_of(monkeypatch, 2)  # 12 ranges, a window of 3 read ahead
    real_open = parallel_copy._open_on_snapshot

    def late_rater():
        rate_study(rated_study, [make_user("late-rater")], rrgen_value)  # its own connection: committed
        connection.close()

    writers: list[threading.Thread] = []

    def open_after_a_commit(snapshot):
        if not writers:  # before the first worker connection imports the snapshot
            writers.append(threading.Thread(target=late_rater))
            writers[0].start()
            writers[0].join()
        return real_open(snapshot)

    monkeypatch.setattr(parallel_copy, "_open_on_snapshot", open_after_a_commit)
    during = b"".join(copy_ratings(rated_study, fmt="csv"))
    assert calls == [12]
    assert b"late-rater" not in during
    after = b"".join(copy_ratings(rated_study, fmt="csv"))
    assert b"late-rater" in after
    assert len(after) > len(during)


def test_a_reader_that_stops_early_closes_its_connections(rated_study, settings, monkeypatch):
    settings.BULK_READ_WORKERS = 2
    _ranges_of(monkeypatch, 2)
    opened = []
    real_open = parallel_copy._open_on_snapshot

    def track(snapshot):
        conn = real_open(snapshot)
        opened.append(conn)
        return conn

    monkeypatch.setattr(parallel_copy, "_open_on_snapshot", track)
    chunks = copy_ratings(rated_study, fmt="jsonl")
    next(chunks)
    chunks.close()
    assert len(opened) == 2
    assert all(conn.closed for conn in opened)


def test_pairwise_sums_in_ranges_equal_one_query(settings, monkeypatch, calls):
    """The Comparisons section's bulk read (annotation.reports.pairwise_sums), whose ranges bound
    both the assignments and their ratings, sums to what one query gives."""
    from annotation.reports.pairwise_sums import pairwise_sums
    from annotation.simulation.latent import Knobs
    from annotation.simulation.study import simulated_study_create

    study = simulated_study_create(preset="compare-pairwise", slug="ranges-pairwise", n_items=12, n_raters=5,
                                   seed=4, knobs=Knobs(noise=0.4, position_bias=0.6)).study
    settings.BULK_READ_WORKERS = 1
    single = pairwise_sums(study, ["preference"])["preference"]
    assert not calls
    settings.BULK_READ_WORKERS = 2
    _ranges_of(monkeypatch, 7)  # 60 assignments -> 9 ranges
    split = pairwise_sums(study, ["preference"])["preference"]
    assert calls == [9]
    assert split.n_answers == single.n_answers == 60
    assert split.systems == single.systems and (split.wins == single.wins).all()
    assert (split.n_raters, split.n_items, split.first_wins, split.decided) == (
        single.n_raters, single.n_items, single.first_wins, single.decided)
