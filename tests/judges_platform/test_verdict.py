"""The judge verdict says "comparable to a human" only inside the human-human interval,
never at an agreement of 0 and never when the agreement is undefined."""
from __future__ import annotations

import numpy as np
import pytest

from judges.services.humans import compare_criterion, human_ceiling

# 3 humans over 8 units (codes 0..2); leave-one-out agreement differs per human
# each human is once the odd one out against two who agree, so no human reaches 1.0
HUMANS = np.array([[0, 0, 0], [1, 1, 1], [2, 2, 2], [1, 0, 0], [0, 1, 0], [0, 0, 1], [2, 2, 1], [1, 1, 1]],
                  dtype=float)
MAJORITY = np.array([0, 1, 2, 0, 0, 0, 2, 1], dtype=float)


def verdict(judge, humans=HUMANS, measure="categorical"):
    res = compare_criterion(humans, {"j": np.asarray(judge, dtype=float)}, measure)
    return res, res["judges"]["j"]["verdict"]


def test_the_human_interval_is_from_the_least_to_the_most_agreeing_human():
    ceiling = human_ceiling(HUMANS, "categorical")
    lo, hi = ceiling["agreement_range"]
    assert 0 < lo < hi < 1  # the humans differ here, so the interval is not a point
    # human 0 against the majority of humans 1 and 2 (ties left out): by hand
    others = HUMANS[:, 1:]
    agree = [HUMANS[i, 0] == others[i, 0] for i in range(8) if others[i, 0] == others[i, 1]]
    assert lo <= np.mean(agree) <= hi


def test_within_the_interval_is_comparable():
    ceiling = human_ceiling(HUMANS, "categorical")
    lo, hi = ceiling["agreement_range"]
    majority = MAJORITY
    # flip units until the judge's agreement lands inside [lo, hi]
    for flips in range(9):
        judge = majority.copy()
        judge[:flips] = (judge[:flips] + 1) % 3
        res, v = verdict(judge)
        acc = res["judges"]["j"]["agreement"]["value"]
        if lo <= acc <= hi:
            assert v["label"] == "comparable to a human" and v["passed"] is True
            break
    else:
        pytest.fail("no judge inside the interval was tried")


def test_below_the_interval_is_not_comparable_and_above_is_named_as_such():
    majority = MAJORITY
    _, v = verdict((majority + 1) % 3)  # agrees nowhere
    assert v["label"] == "below human agreement" and v["passed"] is False
    res, v = verdict(majority)  # agrees everywhere: better than every human here
    assert res["judges"]["j"]["agreement"]["value"] == 1.0
    assert v["label"] == "above human agreement" and "comparable" not in v["label"]


def test_agreement_zero_is_never_comparable_even_when_humans_also_agree_zero():
    # two humans who never agree: the human interval is [0, 0]
    humans = np.array([[0, 1], [1, 0], [0, 1], [1, 0]], dtype=float)
    assert human_ceiling(humans, "categorical")["agreement_range"] == [0.0, 0.0]
    # the 3-rater majority is always a tie with two humans; give a third human to form one
    humans3 = np.column_stack([humans, humans[:, 0]])
    judge = 1 - humans3[:, 0]
    res, v = verdict(judge, humans3)
    assert res["judges"]["j"]["agreement"]["value"] == 0.0
    assert v["label"] != "comparable to a human" and v["passed"] is not True


def test_undefined_agreement_is_undetermined():
    # every unit a tie between the two humans: no majority, so no comparable unit
    humans = np.array([[0, 1], [1, 0], [2, 0]], dtype=float)
    res, v = verdict([0, 1, 2], humans)
    assert res["judges"]["j"]["agreement"]["value"] is None
    assert v["label"] == "undetermined" and v["passed"] is None


def test_numeric_pearson_zero_or_undefined_is_never_comparable():
    rng = np.random.default_rng(5)
    truth = np.tile([1.0, 2.0, 3.0, 4.0, 5.0], 3)
    humans = np.column_stack([truth + rng.normal(0, 0.3, truth.size) for _ in range(3)])
    _, v = verdict(np.full(truth.size, 3.0), humans, "numeric")  # constant: Pearson undefined
    assert v["label"] == "undetermined" and v["passed"] is None
    _, v = verdict(6 - truth, humans, "numeric")  # reversed: Pearson -1
    assert v["label"] == "below human agreement" and v["passed"] is False
    res, v = verdict(truth, humans, "numeric")
    r_lo, r_hi = res["ceiling"]["pearson_range"]
    assert v["passed"] is True and v["label"] in ("comparable to a human", "above human agreement")
    assert res["judges"]["j"]["pearson"]["value"] >= r_lo
    assert f"{r_lo:.2f}–{r_hi:.2f}" in v["why"]  # the verdict names the interval it used
