"""Bulk reads in ranges on several connections give exactly what one query gives, from one snapshot.

These tests commit for real (transaction=True): the worker connections cannot see a test
transaction's rows, which is also why a read inside a transaction runs as one query.
"""

from __future__ import annotations

import threading

import pyarrow as pa
import pytest
from django.db import connection, transaction

from annotation.reports import parallel_copy, rating_sql
from annotation.reports.long_arrow import rating_batches
from annotation.reports.long_json import rating_json_lines
from annotation.reports.ratings import copy_ratings, stats_frame
from tests.conftest import make_user
from tests.reports.conftest import rrgen_value
from tests.reports.factories import rate_study

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def calls(monkeypatch):
    """How many jobs each parallel read ran (parallel_copy.run_in_parallel, under copy_in_parallel too)."""
    seen = []
    real = parallel_copy.run_in_parallel

    def spy(*args, **kwargs):
        seen.append(len(args[0]))
        return real(*args, **kwargs)

    monkeypatch.setattr(parallel_copy, "run_in_parallel", spy)
    return seen


def _ranges_of(monkeypatch, assignments: int) -> None:
    """Ranges of this many assignments (a real study's are thousands)."""
    monkeypatch.setattr(rating_sql, "MIN_RANGE_ASSIGNMENTS", 1)
    monkeypatch.setattr(rating_sql, "MAX_RANGE_ASSIGNMENTS", assignments)


def _reads(study) -> dict:
    table = pa.Table.from_batches(list(rating_batches(study)))
    # The categoricals as text before sorting: a categorical sorts by its categories' order, which is the
    # order the values were first read in, and one query's join order is the planner's to choose.
    frame = (stats_frame(study, ["fluency", "decision"]).astype({c: str for c in ("system", "criterion", "label")})
             .sort_values(["item_id", "rater_id", "output", "criterion"]))
    return {"csv": b"".join(copy_ratings(study, fmt="csv")), "jsonl": b"".join(copy_ratings(study, fmt="jsonl")),
            "arrow": table, "jsonl_arrow": b"".join(rating_json_lines(study)),
            "frame": frame.reset_index(drop=True)}


def _one_query(study, settings) -> dict:
    settings.BULK_READ_WORKERS = 1
    return _reads(study)


def test_ranges_on_two_connections_equal_one_query(rated_study, settings, monkeypatch, calls):
    single = _one_query(rated_study, settings)
    assert not calls
    settings.BULK_READ_WORKERS = 2
    _ranges_of(monkeypatch, 5)  # 23 submitted assignments -> 5 ranges
    split = _reads(rated_study)
    # arrow and the stats frame (the names, then a job per range), csv, jsonl, jsonl from arrow (as arrow)
    assert calls == [6, 6, 5, 5, 6]
    assert split["csv"] == single["csv"]
    assert split["jsonl"] == single["jsonl"] == split["jsonl_arrow"] == single["jsonl_arrow"]
    assert split["arrow"].equals(single["arrow"])
    assert split["frame"].equals(single["frame"])
    assert single["csv"].count(b"\n") > 24 * 3  # not two empty reads


def test_an_older_assignment_submitted_after_the_ranges_are_drawn_is_read(rated_study, settings, monkeypatch, calls):
    """The ranges are drawn before the readers' snapshot: the study's first assignment, still active when
    they are drawn and submitted before the snapshot, is read as one query reads it."""
    from annotation.models import Assignment

    single = _one_query(rated_study, settings)
    first = rated_study.assignments.order_by("id").first()
    Assignment.objects.filter(pk=first.pk).update(status=Assignment.Status.ACTIVE)
    real = rating_sql.assignment_id_ranges

    def drawn_then_submitted(*args, **kwargs):
        ranges = real(*args, **kwargs)
        Assignment.objects.filter(pk=first.pk).update(status=Assignment.Status.SUBMITTED)  # committed (no atomic)
        return ranges

    monkeypatch.setattr(rating_sql, "assignment_id_ranges", drawn_then_submitted)
    settings.BULK_READ_WORKERS = 2
    _ranges_of(monkeypatch, 5)
    split = _reads(rated_study)
    assert calls
    assert split["csv"] == single["csv"]
    assert split["jsonl"] == single["jsonl"] == split["jsonl_arrow"]
    assert split["arrow"].equals(single["arrow"])
    assert split["frame"].equals(single["frame"])


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


@pytest.mark.parametrize("read_all", [True, False])
def test_readers_end_their_snapshot_transaction_before_closing(rated_study, settings, monkeypatch, read_all):
    """A bare close only sends Terminate: the server may still list the session as idle in transaction
    after the download ended (CI saw it). Each reader's session must already be idle when it closes."""
    settings.BULK_READ_WORKERS = 2
    _ranges_of(monkeypatch, 2)
    at_close: list[str | None] = []
    real_open = parallel_copy._open_on_snapshot

    def track(snapshot):
        conn = real_open(snapshot)
        real_close, pid = conn.close, conn.info.backend_pid

        def close():
            with connection.cursor() as cursor:  # another session: what the server lists for this one now
                cursor.execute("SELECT state FROM pg_stat_activity WHERE pid = %s", [pid])
                at_close.append(cursor.fetchone()[0])
            real_close()

        conn.close = close
        return conn

    monkeypatch.setattr(parallel_copy, "_open_on_snapshot", track)
    chunks = copy_ratings(rated_study, fmt="jsonl")  # (csv's first chunk is its header, before any read)
    if read_all:
        assert b"".join(chunks).count(b"\n") > 24 * 3
    else:
        next(chunks)
        chunks.close()
    assert at_close == ["idle", "idle"]


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


def _reference_join(ratings: list[dict], assignments: list[dict]) -> list[dict]:
    """long_sql's LEFT JOIN in plain Python: each assignment's ratings, or one row of nulls."""
    rating_cols = [k for k in (ratings[0] if ratings else {}) if k != "assignment_id"]
    rows = []
    for a in assignments:
        own = [r for r in ratings if r["assignment_id"] == a["assignment_id"]]
        for r in own or [dict.fromkeys(rating_cols)]:
            rows.append({**{k: v for k, v in r.items() if k != "assignment_id"},
                         **{k: v for k, v in a.items() if k != "assignment_id"}})
    return rows


@pytest.mark.parametrize("seed", range(6))
def test_range_join_equals_a_left_join_on_hostile_rows(seed):
    """The worker-side join (rating_ids._joined): ratings of other studies' or unsubmitted
    assignments between the range's ids are dropped; an assignment without ratings is one row of
    nulls, first, last or between; NULL outputs and values, unicode text."""
    import random

    from annotation.reports.rating_ids import _joined

    rng = random.Random(seed)
    columns = (("output_id", "r.output_id", pa.int64()), ("reasoning", "r.reasoning", pa.string()),
               ("comment", "a.comment", pa.string()), ("item_id", "a.item_id", pa.int64()))
    ids = sorted(rng.sample(range(1, 60), rng.choice([0, 1, 5, 20])))
    assignments = [{"assignment_id": i, "comment": rng.choice([None, "", "ç€ \\ \"q\"\n", "x"]),
                    "item_id": i * 10} for i in ids]
    ratings = []
    for a in range(0, 61):  # this range's assignments and others' (foreign) between them
        for output in sorted(rng.sample(range(3), rng.choice([0, 0, 1, 3]))):
            ratings.append({"assignment_id": a, "output_id": None if output == 2 else output,
                            "reasoning": rng.choice([None, "", "naïve 🙂", "a,b"])})
    rating_table = pa.Table.from_pylist(ratings, schema=pa.schema(
        [("assignment_id", pa.int64()), ("output_id", pa.int64()), ("reasoning", pa.string())]))
    assignment_table = pa.Table.from_pylist(assignments, schema=pa.schema(
        [("assignment_id", pa.int64()), ("comment", pa.string()), ("item_id", pa.int64())]))
    joined = _joined(rating_table, assignment_table, columns)
    assert joined.column_names == ["output_id", "reasoning", "comment", "item_id"]
    expected = _reference_join(ratings, assignments)
    assert joined.to_pylist() == [{k: row[k] for k in joined.column_names} for row in expected]
    if ids:
        assert any(r["assignment_id"] not in ids for r in ratings)  # foreign rows were there to drop


def test_interleaved_studies_read_in_ranges_equal_one_query(make_study, raters, researcher, settings, monkeypatch):
    """Studies whose assignments interleave: ranges dense enough to read the ratings alone (others'
    rows dropped) and sparse ones read with the join give what one query gives; drafts with
    ratings, item-level ratings, assignments without ratings, ignored ones with ratings and unicode
    names included."""
    from annotation.models import Assignment
    from annotation.reports import rating_ids
    from tests.reports.factories import items_jsonl, submit

    studies = [make_study(annotators=raters, researchers=[researcher], items_text=items_jsonl(8, prefix=p),
                          slug=f"interleaved-{n}") for n, p in enumerate(("ünï", "b", "c"))]
    people = raters + [make_user("名前-rater")]
    for k in range(8):
        for s, study in enumerate(studies[: 2 if k < 4 else 3]):  # 2 studies, then 3, interleave
            item = study.items.order_by("id")[k]
            for r, rater in enumerate(people):
                values = {} if (k + r) % 5 == 0 else {(0, "fluency"): 1 + (k + r) % 7, (None, "decision"): "ACCEPT",
                                                      (1, "fluency"): 3}
                a = submit(study, rater, item, values, reasoning="½ \"why\"", comment="é" if r == 1 else "")
                if (k + r + s) % 7 == 0:  # a draft with ratings among the submitted ones
                    Assignment.objects.filter(pk=a.pk).update(status=Assignment.Status.ACTIVE)
                elif (k + r + s) % 5 == 1 and values:  # ignored, its ratings kept: out of the report's rows
                    Assignment.objects.filter(pk=a.pk).update(ignored=True)
    seen_sql: list[str] = []
    real_sql = rating_ids._ratings_sql
    monkeypatch.setattr(rating_ids, "_ratings_sql", lambda *a: seen_sql.append(real_sql(*a)[0]) or real_sql(*a))
    for study in studies:
        settings.BULK_READ_WORKERS = 1
        single = _reads(study)
        settings.BULK_READ_WORKERS = 2
        _ranges_of(monkeypatch, 4)
        split = _reads(study)
        assert split["arrow"].equals(single["arrow"])
        assert split["jsonl_arrow"] == single["jsonl_arrow"] == single["jsonl"]
        assert split["frame"].equals(single["frame"])  # the report's read, ranges split the same way
        assert split["arrow"].num_rows > 8 and len(split["frame"]) > 8
    assert any("LEFT JOIN" in sql for sql in seen_sql) and any("LEFT JOIN" not in sql for sql in seen_sql)


def test_assignment_ranges_start_at_every_nth_submitted_id(rated_study, make_study, raters, researcher):
    """rating_sql.assignment_id_ranges (percentile_disc) against every n-th id counted in Python; another
    study's and unsubmitted assignments interleaved, none left out."""
    from annotation.models import Assignment
    from tests.reports.factories import items_jsonl, submit

    other = make_study(annotators=raters, researchers=[researcher], items_text=items_jsonl(3, prefix="o"),
                       slug="ranges-other")
    for item in other.items.all():
        submit(other, raters[0], item, {(0, "fluency"): 3})
    Assignment.objects.filter(pk__in=list(rated_study.assignments.order_by("id").values_list("pk", flat=True)[3:6])
                              ).update(status=Assignment.Status.ACTIVE)
    ids = list(rated_study.assignments.filter(status=Assignment.Status.SUBMITTED).order_by("id")
               .values_list("id", flat=True))
    assert len(ids) > 12
    for per_range in (1, 2, 3, 5, 7, len(ids) - 1, len(ids), len(ids) + 4):
        ranges = rating_sql.assignment_id_ranges(rated_study, parts=1, smallest=per_range, largest=per_range)
        assert [lo for lo, _ in ranges] == ids[::per_range]
        assert [hi for _, hi in ranges] == ids[::per_range][1:] + [2**63 - 1]
    # The study's first assignment still active: the first range starts at it, so that it is read if it
    # is submitted after the ranges are drawn and before the readers' snapshot.
    first = rated_study.assignments.order_by("id").first()
    Assignment.objects.filter(pk=first.pk).update(status=Assignment.Status.ACTIVE)
    ranges = rating_sql.assignment_id_ranges(rated_study, parts=1, smallest=3, largest=3)
    assert ranges[0][0] == first.pk
    assert [lo for lo, _ in ranges[1:]] == ids[1:][::3][1:]
    empty = make_study(annotators=raters, researchers=[researcher], items_text=items_jsonl(1, prefix="e"),
                       slug="ranges-empty")
    assert rating_sql.assignment_id_ranges(empty, parts=4) == []


def test_a_range_without_assignments_reads_nothing(rated_study, settings, monkeypatch, calls):
    """A range holding none of the study's submitted assignments (one whose assignments were
    withdrawn after the ranges were drawn) adds no rows and reads no ratings."""
    from annotation.reports import rating_ids

    settings.BULK_READ_WORKERS = 1
    single = _reads(rated_study)
    settings.BULK_READ_WORKERS = 2
    real_ranges = rating_sql.assignment_id_ranges

    def with_an_empty_first_range(study, **kwargs):
        ranges = real_ranges(study, **kwargs)
        return [(0, ranges[0][0])] + ranges

    monkeypatch.setattr(rating_sql, "assignment_id_ranges", with_an_empty_first_range)
    _ranges_of(monkeypatch, 6)
    rating_reads = []
    real_sql = rating_ids._ratings_sql
    monkeypatch.setattr(rating_ids, "_ratings_sql", lambda *a: rating_reads.append(a) or real_sql(*a))
    table = pa.Table.from_batches(list(rating_batches(rated_study)))
    assert calls == [1 + 1 + 4]  # the names, the empty range, 4 ranges of 6 of the 23 assignments
    assert len(rating_reads) == 4
    assert table.equals(single["arrow"])
