"""Judge calibration against the humans: Brier against scikit-learn, ECE and the reliability
diagram against scikit-learn's calibration_curve and a hand-worked example."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.calibration import calibration_curve
from sklearn.metrics import brier_score_loss

from annotation.stats.calibration import calibration, human_answer_for_scale


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
