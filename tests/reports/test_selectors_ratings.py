"""The long format from one streamed query equals what the ORM says, row for row."""

from __future__ import annotations

import csv
import io
import json

import pyarrow as pa
import pytest

from annotation.models import Assignment, Rating
from annotation.reports.long_arrow import rating_batches
from annotation.reports.ratings import (
    LONG_NAMES, copy_ratings, count_rating_rows, iter_rating_rows, stats_frame,
)
from tests.reports.conftest import N_ITEMS
from tests.reports.factories import submit

pytestmark = pytest.mark.django_db


def expected_rows(study) -> list[dict]:
    """The long format rebuilt independently from ORM objects."""
    kinds = {c["key"]: c["kind"] for c in study.rubric_version.criteria}  # a per-step <key>@<step>: its key's
    rows = []
    assignments = (Assignment.objects.filter(study=study, status="submitted")
                   .select_related("item", "rater").order_by("id"))
    for a in assignments:
        ratings = sorted(Rating.objects.filter(assignment=a).select_related("output"),
                         key=lambda r: (r.output_id is None, r.output_id or 0, r.criterion))
        base = {"item": a.item.external_id, "rater": a.rater.username, "ignored": a.ignored,
                "ignore_reason": a.ignore_reason, "comment": a.comment, "time_on_task_ms": a.time_on_task_ms,
                "is_attention_check": a.is_attention_check, "submitted_at": a.submitted_at,
                "sampling": a.sampling or None, "sampling_probability": a.sampling_probability}
        if not ratings:
            rows.append({**base, "output": None, "system": None, "criterion": None, "criterion_kind": None,
                         "value": None, "score": None, "reasoning": None, "spans": None, "shown_position": None})
        for r in ratings:
            kind = kinds[r.criterion.partition("@")[0]]
            pos = r.output.position if r.output else None
            rows.append({
                **base, "output": pos, "system": r.output.system if r.output else None,
                "criterion": r.criterion, "criterion_kind": kind,
                "value": None if kind == "spans" else (r.value if isinstance(r.value, str) else json.dumps(r.value)),
                "score": r.score, "reasoning": r.reasoning,
                "spans": r.value if kind == "spans" else None,
                "shown_position": a.permutation.index(pos) + 1 if pos is not None else None,
            })
    return rows


@pytest.fixture
def study_with_spans(rated_study, raters):
    item = rated_study.items.order_by("id")[0]
    other = raters[0].__class__.objects.create_user(username="r-spans")
    submit(rated_study, other, item, {
        (1, "semantic_relevance"): 5, (1, "decision"): "ACCEPT",
        (1, "highlights"): [{"start": 0, "end": 6, "text": "Answer", "label": "relevant"}],
    }, permutation=[2, 1, 0], comment='He said "no", then left\nearly', time_ms=1234)
    return rated_study


def test_streamed_rows_equal_orm_rows(study_with_spans):
    exp = expected_rows(study_with_spans)
    got = [dict(zip(LONG_NAMES, row)) for chunk in iter_rating_rows(study_with_spans, chunk_size=7)
           for row in chunk]
    assert len(got) == len(exp) == count_rating_rows(study_with_spans)
    for g, e in zip(got, exp):
        g = dict(g)
        g["spans"] = json.loads(g["spans"]) if g["spans"] is not None else None
        if e["value"] is not None and not isinstance(e["value"], str):
            e["value"] = str(e["value"])
        assert g == e


def test_shown_position_comes_from_the_permutation(study_with_spans):
    rows = [dict(zip(LONG_NAMES, r)) for c in iter_rating_rows(study_with_spans) for r in c]
    spans_rater = [r for r in rows if r["rater"] == "r-spans"]
    # permutation [2, 1, 0]: output 1 was shown second
    assert {r["shown_position"] for r in spans_rater} == {2}
    ignored = [r for r in rows if r["ignored"]]
    assert len(ignored) == 1 and ignored[0]["criterion"] is None and ignored[0]["item"] == f"it-{N_ITEMS - 1:03d}"


def test_csv_copy_parses_back_to_the_same_rows(study_with_spans):
    text = b"".join(copy_ratings(study_with_spans, fmt="csv")).decode()
    reader = list(csv.reader(io.StringIO(text)))
    assert reader[0] == LONG_NAMES
    exp = expected_rows(study_with_spans)
    assert len(reader) - 1 == len(exp)
    spans_row = next(dict(zip(LONG_NAMES, r)) for r in reader[1:] if r[5] == "spans")
    assert json.loads(spans_row["spans"])[0]["label"] == "relevant"
    assert spans_row["comment"] == 'He said "no", then left\nearly'
    decision = next(dict(zip(LONG_NAMES, r)) for r in reader[1:] if r[4] == "decision")
    assert decision["value"] in {"ACCEPT", "REJECT"}


def test_jsonl_copy_is_valid_json_with_nested_values(study_with_spans):
    lines = b"".join(copy_ratings(study_with_spans, fmt="jsonl")).decode().splitlines()
    exp = expected_rows(study_with_spans)
    assert len(lines) == len(exp)
    objs = [json.loads(x) for x in lines]
    assert list(objs[0]) == LONG_NAMES
    spans = next(o for o in objs if o["criterion"] == "highlights")
    assert spans["spans"] == [{"start": 0, "end": 6, "text": "Answer", "label": "relevant"}]
    assert spans["comment"] == 'He said "no", then left\nearly'
    likert = next(o for o in objs if o["criterion"] == "fluency")
    assert isinstance(likert["value"], int) and likert["score"] == float(likert["value"])


def test_arrow_batches_equal_orm_rows(study_with_spans):
    table = pa.Table.from_batches(list(rating_batches(study_with_spans)))
    exp = expected_rows(study_with_spans)
    got = table.to_pylist()
    assert len(got) == len(exp)
    for g, e in zip(got, exp):
        if g["spans"] is not None:
            g["spans"] = json.loads(g["spans"])
        if e["value"] is not None and not isinstance(e["value"], str):
            e["value"] = str(e["value"])
        assert g == e


def test_stats_frame_leaves_out_ignored_and_other_criteria(rated_study):
    df = stats_frame(rated_study, ["fluency", "decision"])
    assert set(df["criterion"]) == {"fluency", "decision"}
    n_outputs = 3
    # 8 items x 3 raters minus one ignored assignment, x 3 outputs x 2 criteria
    assert len(df) == (N_ITEMS * 3 - 1) * n_outputs * 2
    assert df.loc[df.criterion == "decision", "label"].isin(["ACCEPT", "REJECT"]).all()
    assert (df["seconds"] >= 10).all()


def test_arrow_rows_equal_the_sql_rows_at_the_edges(rated_study, raters):
    """The Arrow read names ids itself (annotation.reports.long_arrow): on an item-level rating, a
    criterion the pinned rubric no longer has, and an output missing from the stored permutation it
    must give what the SQL read gives."""
    item = rated_study.items.order_by("id")[1]
    other = raters[0].__class__.objects.create_user(username="r-edges")
    a = submit(rated_study, other, item, {(1, "fluency"): 4, (2, "fluency"): 2}, permutation=[2, 0])
    Rating.objects.create(assignment=a, output=None, criterion="fluency", value=3, score=3.0, reasoning="")
    Rating.objects.create(assignment=a, output=item.outputs.get(position=0), criterion="retired_key",
                          value="old", score=None, reasoning="=1+1")
    sql_rows = [dict(zip(LONG_NAMES, row)) for chunk in iter_rating_rows(rated_study) for row in chunk]
    arrow_rows = pa.Table.from_batches(list(rating_batches(rated_study))).to_pylist()
    assert len(arrow_rows) == len(sql_rows)
    for got, want in zip(arrow_rows, sql_rows):
        if want["value"] is not None and not isinstance(want["value"], str):
            want["value"] = str(want["value"])
        assert got == want
    edges = [r for r in arrow_rows if r["rater"] == "r-edges"]
    assert {(r["output"], r["criterion"], r["criterion_kind"], r["shown_position"]) for r in edges} == {
        (0, "retired_key", None, 2), (1, "fluency", "likert", None), (2, "fluency", "likert", 1),
        (None, "fluency", "likert", None)}


def _joined_stats_rows(study, criteria) -> list[tuple]:
    """The statistics' rows as the joined SQL read gave them before the id read (the reference):
    items, outputs and the unpacked permutation joined in PostgreSQL, every name written per row."""
    from django.db import connection

    from annotation.reports.rating_sql import VALUE_TEXT as _VALUE_TEXT
    from annotation.reports.ratings import _A, _I, _O, _PERM_JOIN, _R, _SHOWN

    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT a.item_id, i.external_id, COALESCE(o.position, -1), o.system, a.rater_id, r.criterion,"
            f" r.score, {_VALUE_TEXT}, a.time_on_task_ms / 1000.0, {_SHOWN}::smallint, a.is_attention_check,"
            f" i.gold -> r.criterion #>> '{{}}'"
            f" FROM {_A} a {_PERM_JOIN} JOIN {_I} i ON i.id = a.item_id JOIN {_R} r ON r.assignment_id = a.id"
            f" LEFT JOIN {_O} o ON o.id = r.output_id"
            f" WHERE a.study_id = %s AND a.status = %s AND NOT a.ignored AND r.criterion = ANY(%s)",
            [study.pk, "submitted", list(criteria)])
        return [tuple(None if v is None else float(v) if k in (6, 8) else v for k, v in enumerate(row))
                for row in cursor.fetchall()]


def test_stats_frame_read_by_ids_equals_the_joined_read(rated_study, raters):
    """stats_frame reads ids and names them in Arrow (annotation.reports.stats_ids): gold answers
    (text, number, null, a list), an attention check, item-level ratings, an output missing from
    the permutation and a criterion left out must come back as the joined SQL read gives them."""
    items = list(rated_study.items.order_by("id"))
    items[0].gold = {"decision": "ACCEPT", "fluency": 4}
    items[1].gold = {"decision": None, "fluency": [1, 2]}
    items[0].save(update_fields=["gold"])
    items[1].save(update_fields=["gold"])
    other = raters[0].__class__.objects.create_user(username="r-stats-edges")
    a = submit(rated_study, other, items[2], {(1, "fluency"): 4, (2, "fluency"): 2, (2, "decision"): "REJECT"},
               permutation=[2, 0], time_ms=45_123)
    Rating.objects.create(assignment=a, output=None, criterion="fluency", value=3, score=3.0, reasoning="")
    Assignment.objects.filter(pk=a.pk).update(is_attention_check=True)
    criteria = ["fluency", "decision"]
    df = stats_frame(rated_study, criteria)
    got = sorted((tuple(None if isinstance(v, float) and v != v else v for v in row)
                  for row in df.astype(object).itertuples(index=False, name=None)), key=repr)
    want = sorted(_joined_stats_rows(rated_study, criteria), key=repr)
    assert got == want
    assert {r[11] for r in want} >= {"ACCEPT", "4", "[1, 2]", None}  # the gold cases really occur
    assert any(r[4] == other.pk and r[9] is None for r in want)  # item-level and unshown outputs too
