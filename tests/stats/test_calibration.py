"""Judge calibration against the humans: Brier against scikit-learn, ECE and the reliability
diagram against scikit-learn's calibration_curve and a hand-worked example."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.calibration import calibration_curve
from sklearn.metrics import brier_score_loss

from annotation.stats.calibration import calibration, calibration_long, human_answer_for_scale, nearest_points


def test_hand_worked_example():
    dists = [{"TP": 0.9, "FP1": 0.1}, {"TP": 0.6, "FP1": 0.4}, {"FP1": 0.7, "TP": 0.3}, {"TP": 1.0}]
    human = ["TP", "FP1", "FP1", "TP"]
    c = calibration(dists, human, bins=10)
    # top labels TP .9 (right), TP .6 (wrong), FP1 .7 (right), TP 1.0 (right)
    assert c["ece"] == pytest.approx((abs(1 - .9) + abs(0 - .6) + abs(1 - .7) + abs(1 - 1.0)) / 4)
    assert c["brier"] == pytest.approx(((.1 ** 2 + .1 ** 2) + (.6 ** 2 + .6 ** 2) + (.3 ** 2 + .3 ** 2) + 0) / 4)
    assert [(b["n"], b["accuracy"]) for b in c["bins"]] == [(1, 0.0), (1, 1.0), (1, 1.0), (1, 1.0)]


def test_multiclass_brier_matches_sklearn():
    rng = np.random.default_rng(0)
    labels = [1, 2, 3, 4, 5]
    probs = rng.dirichlet(np.ones(5), 300)
    human = rng.integers(1, 6, 300)
    c = calibration([dict(zip(labels, p)) for p in probs], list(human))
    assert c["brier"] == pytest.approx(brier_score_loss(human, probs, labels=labels))


def test_binary_ece_matches_calibration_curve():
    """With two answers and confidences above 0.5, top-label bins are sklearn's uniform bins."""
    rng = np.random.default_rng(1)
    p_yes = rng.uniform(0.5, 1.0, 500)
    truth = rng.random(500) < p_yes ** 2  # overconfident judge
    c = calibration([{"yes": p, "no": 1 - p} for p in p_yes], ["yes" if t else "no" for t in truth], bins=10)
    prob_true, prob_pred = calibration_curve(truth, p_yes, n_bins=10, strategy="uniform")
    counts = np.histogram(p_yes, bins=np.linspace(0, 1, 11))[0]
    counts = counts[counts > 0]
    assert c["ece"] == pytest.approx(float(np.sum(counts / 500 * np.abs(prob_true - prob_pred))), abs=1e-9)
    assert c["mean_confidence"] > c["accuracy"]  # the planted overconfidence shows


def test_answers_compare_as_values_and_undefined_is_explicit():
    c = calibration([{4: 0.8, 5: 0.2}], [4.0])
    assert c["accuracy"] == 1.0
    empty = calibration([{}], [None])
    assert empty["ece"] is None and empty["reason"].startswith("no output")
    assert human_answer_for_scale(3.5, [1, 2, 3, 4, 5]) == 4.0 and human_answer_for_scale(2.2, [1, 2, 3]) == 2.0
    # many at once: outside the scale, halves between half points (unsorted points)
    assert nearest_points(np.array([0.2, 9, 2.75, 2.25, 1.7]), [3, 1, 1.5, 2, 2.5]).tolist() == [1, 3, 3, 2.5, 1.5]


def _long(dists):
    rows, answers, weights = [], [], []
    for r, d in enumerate(dists):
        for k, p in d.items():
            rows.append(r)
            answers.append(str(k))
            weights.append(p)
    return np.array(rows), np.array(answers, dtype=object), np.array(weights)


def test_long_form_gives_calibrations_figures():
    """The arrays' form (millions of judge answers) against the dict form, itself checked against
    scikit-learn above: unnormalised weights, ties of the top weight, human answers the judge gave
    no weight to, outputs with no human answer, whole numbers as floats."""
    rng = np.random.default_rng(3)
    labels = ["1", "2", "3", "4", "5"]
    dists, human = [], []
    for k in range(400):
        n = rng.integers(1, 6)
        keys = rng.choice(labels, n, replace=False)
        weights = rng.integers(1, 4, n).astype(float) if k % 3 else rng.dirichlet(np.ones(n))  # counts tie often
        dists.append(dict(zip(keys, weights)))
        human.append(None if k % 7 == 0 else float(rng.integers(1, 6)))
    expected = calibration(dists, human)
    got = calibration_long(*_long(dists), human)
    assert got["n"] == expected["n"] == sum(h is not None for h in human)
    for key in ("ece", "brier", "accuracy", "mean_confidence"):
        assert got[key] == pytest.approx(expected[key], abs=1e-12), key
    assert [(b["n"], b["low"]) for b in got["bins"]] == [(b["n"], b["low"]) for b in expected["bins"]]
    probs = np.array([[d.get(lab, 0.0) / sum(d.values()) for lab in labels] for d, h in zip(dists, human) if h])
    truth = [int(h) for h in human if h]
    assert got["brier"] == pytest.approx(brier_score_loss(truth, probs, labels=[1, 2, 3, 4, 5]))


def test_long_form_with_no_pair_says_why():
    got = calibration_long(*_long([{"a": 1.0}]), [None])
    assert got["n"] == 0 and got["ece"] is None and "no output has both" in got["reason"]
