"""Judge answers read as arrays for the report's judge sections (judges.score_arrays): the
distributions the answers state, in each form the judging methods store, come out of
PostgreSQL as the judging methods mean them."""

from __future__ import annotations

import numpy as np
import pytest

from annotation.models import Output
from judges import score_arrays
from judges.models import JudgeScore
from tests.reports.factories import SYSTEMS, items_jsonl

DETAILS = {  # output position -> (the answer's detail, what it states)
    0: ({"distribution": {"4": 0.6, "5": 0.3, "3": 0.1}}, {"4": 0.6, "5": 0.3, "3": 0.1}),
    # self-consistency: whole numbers however written are one answer; others keep their text
    1: ({"samples": [4, 4.0, "4", 3.5, 5]}, {"4": 3.0, "3.5": 1.0, "5": 1.0}),
    2: ({"counts": {"2": 3, "3": 1}}, {"2": 3.0, "3": 1.0}),
}
PRECEDENCE = {  # item -> detail for position 0, what it states: the first form present wins
    1: ({"distribution": {"2": 1.0}, "samples": [5, 5]}, {"2": 1.0}),
    2: ({"distribution": {}, "samples": [5, 5, 1]}, {"5": 2.0, "1": 1.0}),
    3: ({"samples": [], "counts": {"1": 2}}, {"1": 2.0}),
    4: ({"reasoning": "no distribution here"}, {}),
}


@pytest.fixture
def run(make_study, make_judge, make_run):
    study = make_study("rrgen-001", items_text=items_jsonl(5))
    run = make_run(study, make_judge("stating"),
                   {(f"it-{i:03d}", p, "fluency"): 4 for i in range(5) for p in range(3)})
    for score in JudgeScore.objects.filter(run=run).select_related("item", "output"):
        i, p = int(score.item.external_id[3:]), score.output.position
        score.detail = PRECEDENCE[i][0] if i in PRECEDENCE and p == 0 else DETAILS[p][0]
        score.save(update_fields=["detail"])
    return run


def test_each_stored_form_of_a_distribution_is_read_as_it_is_meant(run):
    scores = {s.pk: (int(s.item.external_id[3:]), s.output.position)
              for s in JudgeScore.objects.filter(run=run).select_related("item", "output")}
    long = score_arrays.stated([run], ["fluency"])
    got: dict[tuple[int, int], dict[str, float]] = {}
    for row, answer, weight in long.itertuples(index=False):
        assert answer not in got.setdefault(scores[row], {}), "an answer twice in one distribution"
        got[scores[row]][answer] = weight
    expected = {(i, p): (PRECEDENCE[i][1] if i in PRECEDENCE and p == 0 else DETAILS[p][1])
                for i in range(5) for p in range(3)}
    assert got == {k: v for k, v in expected.items() if v}


def test_scored_answers_carry_their_output_as_a_unit(run):
    df = score_arrays.scored([run], ["fluency"])
    outputs = score_arrays.outputs(run.study)
    assert len(df) == 15 and set(df["unit"]) == set(outputs["unit"])
    by_id = {s.pk: score_arrays.units_of(np.array([s.item_id]), np.array([s.output.position]))[0]
             for s in JudgeScore.objects.filter(run=run).select_related("output")}
    assert [by_id[r] for r in df["row"]] == df["unit"].tolist()
    assert (df["score"] == 4).all() and df["unit"].is_monotonic_increasing
    words = {score_arrays.units_of(np.array([o.item_id]), np.array([o.position]))[0]: (o.system, len(o.content.split()))
             for o in Output.objects.filter(item__study=run.study)}
    assert {u: (s, w) for u, s, w in zip(outputs["unit"], outputs["system"], outputs["words"])} == words
    assert set(outputs["system"]) == set(SYSTEMS)
