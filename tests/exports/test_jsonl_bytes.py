"""The JSONL export, written in Arrow, is byte for byte what PostgreSQL's json_build_object writes
(ratings.copy_ratings(fmt="jsonl"), the reference), and reads back to the database's values.

The study holds what JSON text must escape or quote: every control character, quotes and
backslashes, non-ASCII text, float scores that JSON cannot hold as numbers, nested values, an
item-level rating, a criterion the rubric no longer has, an ignored assignment without ratings.
"""

from __future__ import annotations

import json
from datetime import datetime, timezone

import pytest

from annotation.datasets import export_chunks
from annotation.models import Assignment, Rating
from annotation.reports.ratings import LONG_NAMES, copy_ratings
from tests.conftest import make_user
from tests.reports.factories import submit
from tests.reports.test_selectors_ratings import expected_rows

pytestmark = pytest.mark.django_db

CONTROL = "".join(chr(c) for c in range(1, 32)) + "\x7f"  # (PostgreSQL text holds no NUL)
SCORES = (float("nan"), float("inf"), float("-inf"), 0.1, 1e20, 1.5e-07, -0.0, 123456789.125)
HOSTILE = f'a "quoted" \\back\\slash\\\\, {CONTROL} tab\tnew\nline é 😀 \u2028 \\u0041 end'


def _items() -> str:
    rows = [
        {"id": 'it"em\\1\t', "context": "ctx", "outputs": [{"system": 'sys "a"\\', "content": "x"},
                                                             {"system": "sys-é\n", "content": "y"},
                                                             {"system": "plain", "content": "z"}]},
        {"id": "item-2", "context": "ctx", "outputs": [{"system": "plain", "content": "z"}]},
    ]
    return "".join(json.dumps(r) + "\n" for r in rows)


@pytest.fixture
def hostile_json_study(make_study, researcher):
    raters = [make_user('rater "one"\\'), make_user("rater-é")]
    study = make_study("rrgen-001", annotators=raters, researchers=[researcher], items_text=_items())
    first, second = study.items.order_by("id")
    when = datetime(2026, 1, 2, 3, 4, 5, 120000, tzinfo=timezone.utc)  # fractional digits trimmed in JSON
    a = submit(study, raters[0], first, {
        (0, "fluency"): 4, (1, "fluency"): 2, (0, "decision"): HOSTILE, (2, "decision"): "REJECT",
        (1, "highlights"): [{"start": 0, "end": 3, "text": 'x"\\\n', "label": "é"}],
        (None, "decision"): {"nested": [1, 2.5, None, True, "s\tt"]},
    }, permutation=[2, 0], comment=HOSTILE, reasoning=HOSTILE, time_ms=0, submitted_at=when)
    Rating.objects.create(assignment=a, output=first.outputs.get(position=2), criterion="gone", value=7,
                          score=7.0, reasoning="")  # a criterion the rubric no longer has
    for n, score in enumerate(SCORES):  # scores as a judge or an import could store them
        b = submit(study, make_user(f"z{n}"), second, {(0, "fluency"): 3})
        Rating.objects.filter(assignment=b).update(score=score)
    submit(study, raters[1], first, {}, ignored=True, ignore_reason=HOSTILE, submitted_at=when.replace(microsecond=0))
    submit(study, raters[1], second, {(0, "fluency"): 5, (0, "decision"): "ACCEPT"}, comment="\\", reasoning='"')
    return study


def test_jsonl_bytes_equal_postgresql_json(hostile_json_study):
    made = b"".join(export_chunks(hostile_json_study, "jsonl"))
    assert made == b"".join(copy_ratings(hostile_json_study, fmt="jsonl"))
    assert made.count(b"\n") == Rating.objects.filter(assignment__study=hostile_json_study).count() + 1 == 18


def test_jsonl_reads_back_the_database_values(hostile_json_study):
    # expected_rows knows the rubric's criteria only, and outputs that were shown
    Rating.objects.filter(criterion="gone").delete()
    Assignment.objects.filter(permutation=[2, 0]).update(permutation=[2, 0, 1])
    lines = b"".join(export_chunks(hostile_json_study, "jsonl")).decode().split("\n")[:-1]  # not splitlines: \u2028
    got = [json.loads(line) for line in lines]
    assert all(list(row) == LONG_NAMES for row in got)
    for row, e in zip(got, expected_rows(hostile_json_study)):
        for key in ("item", "rater", "system", "criterion", "criterion_kind", "reasoning", "comment",
                    "ignore_reason", "output", "shown_position", "time_on_task_ms", "ignored", "is_attention_check"):
            assert row[key] == e[key], key
        assert row["spans"] == e["spans"]
        assert datetime.fromisoformat(row["submitted_at"]) == e["submitted_at"]
    scores = [row["score"] for row in got if row["rater"].startswith("z")]
    assert scores == ["NaN", "Infinity", "-Infinity", 0.1, 1e20, 1.5e-07, -0.0, 123456789.125]
    decision = next(row for row in got if row["criterion"] == "decision" and row["output"] == 0)
    assert decision["value"] == HOSTILE and HOSTILE in (decision["reasoning"], decision["comment"])
    nested = next(row for row in got if row["criterion"] == "decision" and row["output"] is None)
    assert nested["value"] == {"nested": [1, 2.5, None, True, "s\tt"]} and nested["output"] is None


@pytest.mark.django_db(transaction=True)  # committed, so that the range readers' connections see the rows
def test_jsonl_bytes_equal_when_read_in_ranges_on_two_connections(hostile_json_study, settings, monkeypatch):
    from annotation.reports import rating_sql

    settings.BULK_READ_WORKERS = 1
    one_query = b"".join(copy_ratings(hostile_json_study, fmt="jsonl"))
    settings.BULK_READ_WORKERS = 2
    monkeypatch.setattr(rating_sql, "MIN_RANGE_ASSIGNMENTS", 1)
    monkeypatch.setattr(rating_sql, "MAX_RANGE_ASSIGNMENTS", 2)  # 11 assignments: 6 ranges, each read twice
    assert b"".join(export_chunks(hostile_json_study, "jsonl")) == one_query
    assert one_query.count(b"\n") == 18
