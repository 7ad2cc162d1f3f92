"""Labels the rater models refuse, with the array and entry named; and the choice of model by BIC."""

from __future__ import annotations

import numpy as np
import pytest

from annotation.stats.raters import LabelError, best_label_model, dawid_skene, label_data, majority_vote
from annotation.stats.raters.simulate import planted_labels


@pytest.mark.parametrize("args,kwargs,message", [
    (([0, 1], [0, 1, 2], [0, 1]), {}, r"differ in length \(2, 3, 2\)"),
    (([0, -1], [0, 1], [0, 1]), {}, r"items\[1\] = -1: expected a number from 0"),
    (([0, 1], [0, 1.5], [0, 1]), {}, r"raters\[1\] = 1.5: expected a whole number"),
    (([0, 1], [0, 1], [0, 3]), {"n_classes": 3}, r"labels\[1\] = 3: outside 0..2"),
    (([0, 1], [0, 1], ["a", "b"]), {}, r"labels: expected integers"),
    (([], [], []), {}, "no labels"),
    (([0, 1], [0, 1], [0, 0]), {}, "at least two classes"),
    (([[0, 1]], [0], [0]), {}, r"items: expected a one-dimensional array"),
])
def test_bad_labels_are_named(args, kwargs, message):
    with pytest.raises(LabelError, match=message):
        label_data(*args, **kwargs)


def test_a_unit_nobody_labelled_keeps_the_prior():
    d = label_data([0, 0, 2, 2], [0, 1, 0, 1], [1, 1, 0, 0], n_classes=2)
    assert d.n_items == 3
    assert np.allclose(majority_vote(d).posteriors[1], [0.5, 0.5])
    fit = dawid_skene(d)
    assert np.allclose(fit.posteriors[1], fit.class_prior)


def test_posteriors_are_distributions_and_rater_counts_add_up():
    p = planted_labels(n_items=100, n_raters=7, per_item=3, n_classes=3, seed=2)
    for fit in best_label_model(p.data).fits.values():
        assert np.allclose(fit.posteriors.sum(axis=1), 1.0), fit.method
        assert fit.rater_n.sum() == p.data.n == fit.n_labels
        assert np.all((fit.rater_accuracy >= 0) & (fit.rater_accuracy <= 1)), fit.method


def test_best_model_follows_the_crowd():
    # binary raters who differ only in accuracy: one coin each; no need for confusion matrices
    plain = planted_labels(n_items=2000, n_raters=8, per_item=4, n_classes=2, accuracy=(0.55, 0.95), seed=0)
    choice = best_label_model(plain.data)
    assert choice.best.method == "one_coin" and choice.reason.startswith("one_coin: lowest BIC")
    # raters who always answer the same class: class-specific errors, Dawid–Skene's confusion matrices
    spammed = planted_labels(n_items=2000, n_raters=8, per_item=4, n_classes=2, kinds={"spammer": 2}, seed=0)
    choice = best_label_model(spammed.data)
    assert choice.best.method == "dawid_skene"
    rows = {r["method"]: r for r in choice.table()}
    assert rows["dawid_skene"]["chosen"] and rows["dawid_skene"]["bic"] == min(r["bic"] for r in rows.values())
    with pytest.raises(ValueError, match="unknown method 'wawa'"):
        best_label_model(spammed.data, methods=("wawa",))
