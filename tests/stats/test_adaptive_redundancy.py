"""Adaptive redundancy (issue 58 §2): the per-item posterior, the decision, and the planted-crowd goal."""

import numpy as np
import pytest

from annotation.stats.adaptive_redundancy import (
    AdaptivePolicy, item_posterior, needs_another, simulate_adaptive_redundancy,
)
from annotation.stats.raters import dawid_skene
from annotation.stats.raters.simulate import planted_labels


def test_item_posterior_matches_dawid_skene_e_step():
    # Dawid-Skene's own posteriors are the E-step with the fitted matrices: the one-item formula
    # must give them item by item (the fit computes them as one sparse product).
    crowd = planted_labels(n_items=60, n_raters=8, per_item=4, n_classes=3, kinds={"spammer": 2}, seed=3)
    fit = dawid_skene(crowd.data)
    d = crowd.data
    for i in range(0, 60, 7):
        mine = d.item == i
        got = item_posterior(d.rater[mine], d.label[mine], confusion=fit.rater["confusion"], prior=fit.class_prior)
        np.testing.assert_allclose(got, fit.posteriors[i], atol=1e-9)


def test_spammer_label_moves_nothing_and_unknown_rater_is_ignored():
    confusion = np.array([[[0.9, 0.2], [0.1, 0.8]],   # a good rater
                          [[1.0, 1.0], [0.0, 0.0]]])  # a spammer: always class 0
    prior = np.array([0.5, 0.5])
    assert item_posterior([1], [0], confusion=confusion, prior=prior) == pytest.approx([0.5, 0.5])
    assert item_posterior([0, 5], [0, 1], confusion=confusion, prior=prior) == pytest.approx([0.9 / 1.1, 0.2 / 1.1])


def test_needs_another_respects_min_max_and_target():
    policy = AdaptivePolicy(min_raters=2, max_raters=4, target=0.9)
    sure, unsure = np.array([0.99, 0.01]), np.array([0.6, 0.4])
    assert needs_another(sure, 1, policy)          # below the minimum, however sure
    assert not needs_another(sure, 2, policy)
    assert needs_another(unsure, 3, policy)
    assert not needs_another(unsure, 4, policy)    # the maximum stops it


@pytest.mark.parametrize("kwargs, field", [({"min_raters": 0}, "min_raters"), ({"max_raters": 1, "min_raters": 2},
                                           "max_raters"), ({"target": 1.0}, "target"), ({"target": 0.3}, "target")])
def test_bad_policy_names_the_field(kwargs, field):
    with pytest.raises(ValueError, match=field):
        AdaptivePolicy(**kwargs)


def test_planted_crowd_goal_fixed_five_accuracy_with_at_most_3_5_labels():
    # 40 raters, 8 spammers and 4 random answerers, 1,000 binary items; seeds 0-3 (the command runs more).
    result = simulate_adaptive_redundancy(policy=AdaptivePolicy(2, 9, 0.83), n_items=1000, seeds=range(4),
                                          accuracy=(0.65, 0.95))
    assert result["adaptive_mean_labels"] <= 3.5
    assert result["adaptive_accuracy"] >= result["fixed_accuracy"]
    assert result["fixed_accuracy"] < 0.95  # the crowd is hard enough for the comparison to mean something
