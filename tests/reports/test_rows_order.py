"""The report reads a study's ratings in the order they were stored, whatever plan PostgreSQL picks.

ICC1 takes the first k ratings of each output (k: the most common number of ratings an output has), so an
output rated more often than k counts the ratings stored first. The read of a study too small for parallel
ranges had no ORDER BY: its rows came in the plan's order, and with a hash join over a ratings table whose rows
had moved (an update writes a new row version) the report's ICC1 counted other ratings than the export's rows
say (CI, 2026-12-07: the planted study's ICC1 shown 0.6054 where pingouin on the exported rows gives 0.5999)."""

from __future__ import annotations

import pandas as pd
import pingouin
import pytest
from django.db import connection
from django.db.models import F

from annotation.models import Rating
from annotation.reports.ratings import stats_frame
from annotation.reports.study import criterion_icc1
from tests.conftest import make_user
from tests.reports.factories import items_jsonl, submit

KEY = "fluency"


@pytest.fixture
def study_rated_unevenly(make_study):
    """Two raters on every item, a third on half of them (k = 2: the third's ratings must not count)."""
    raters = [make_user(f"order-r{k}") for k in range(3)]
    study = make_study("rrgen-001", annotators=raters, items_text=items_jsonl(8))
    for i, item in enumerate(study.items.prefetch_related("outputs").order_by("id")):
        for r, rater in enumerate(raters):
            if r == 2 and i % 2:
                continue
            scores = {0: 6 - (i % 3), 1: 4 + (i % 2), 2: 2 + (i % 4) // 2}
            if r == 1:
                scores = {p: s + (i + p) % 2 for p, s in scores.items()}
            if r == 2:  # far from the others: counting it changes ICC1
                scores = {p: 8 - s for p, s in scores.items()}
            submit(study, rater, item, {(p, KEY): s for p, s in scores.items()})
    # The first rater's ratings get new row versions, stored after everyone else's in the table.
    Rating.objects.filter(assignment__rater=raters[0], criterion=KEY).update(score=F("score"))
    return study, raters


def test_the_first_k_ratings_are_the_first_stored_whatever_the_plan(study_rated_unevenly):
    study, raters = study_rated_unevenly
    stored = pd.DataFrame(Rating.objects.filter(assignment__study=study, criterion=KEY)
                          .order_by("assignment_id", "output_id")
                          .values_list("assignment__item_id", "output__position", "assignment__rater_id", "score"),
                          columns=["item_id", "output", "rater_id", "x"])
    with connection.cursor() as cursor:  # a plan that returns the ratings in the table's order
        for setting in ("enable_indexscan", "enable_bitmapscan", "enable_mergejoin", "enable_nestloop", "enable_sort"):
            cursor.execute(f"SET LOCAL {setting} = off")
        frame = stats_frame(study, [KEY])
    frame = frame.assign(x=frame["score"])
    read = frame[["item_id", "output", "rater_id"]].astype("int64").to_numpy().tolist()
    assert read == stored[["item_id", "output", "rater_id"]].astype("int64").to_numpy().tolist()

    stored["unit"] = stored["item_id"].astype(str) + "#" + stored["output"].astype(str)
    stored["slot"] = stored.groupby("unit").cumcount()
    first_two = stored[stored["slot"] < 2]
    expected = pingouin.intraclass_corr(data=first_two, targets="unit", raters="slot", ratings="x")
    icc1, k = criterion_icc1(frame)
    assert k == 2
    assert icc1.value == pytest.approx(expected.set_index("Type").loc["ICC(1,1)", "ICC"], abs=1e-12)
