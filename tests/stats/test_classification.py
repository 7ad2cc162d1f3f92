import numpy as np
import pytest
from sklearn.metrics import accuracy_score, confusion_matrix, f1_score, precision_recall_fscore_support

from annotation.stats.classification import classification_report, gold_eval

LABELS = ["TP", "FP3", "FP2", "FP1"]


def test_metrics_match_sklearn():
    rng = np.random.default_rng(0)
    gold = rng.choice(LABELS, 256, p=[0.6, 0.2, 0.15, 0.05])
    pred = np.where(rng.random(256) < 0.7, gold, rng.choice(LABELS, 256))
    rep = classification_report(list(gold), list(pred), positive="TP")
    assert rep["accuracy"] == pytest.approx(accuracy_score(gold, pred))
    assert rep["macro_f1"] == pytest.approx(f1_score(gold, pred, average="macro"))
    labels = sorted(LABELS)
    p, r, f, s = precision_recall_fscore_support(gold, pred, labels=labels, zero_division=0)
    for i, lab in enumerate(labels):
        assert rep["per_class"][lab]["precision"] == pytest.approx(p[i])
        assert rep["per_class"][lab]["recall"] == pytest.approx(r[i])
        assert rep["per_class"][lab]["f1"] == pytest.approx(f[i])
        assert rep["per_class"][lab]["support"] == s[i]
    assert rep["confusion_matrix"]["labels"] == labels
    assert rep["confusion_matrix"]["matrix"] == confusion_matrix(gold, pred, labels=labels).tolist()
    gb, pb = gold == "TP", pred == "TP"
    assert rep["binary"]["accuracy"] == pytest.approx(accuracy_score(gb, pb))
    assert rep["binary"]["f1"] == pytest.approx(f1_score(gb, pb))


def test_label_never_predicted_counts_zero_like_sklearn():
    gold, pred = ["TP", "FP1", "FP2", "TP"], ["TP", "TP", "TP", "TP"]
    rep = classification_report(gold, pred)
    assert rep["macro_f1"] == pytest.approx(f1_score(gold, pred, average="macro", zero_division=0))
    assert rep["per_class"]["FP1"]["precision"] == 0.0


def test_gold_eval_by_id_with_cost_per_10k():
    gold = {"a": "TP", "b": "FP3", "c": "FP1", "d": "TP"}
    pred = {"b": "FP3", "a": "FP3", "c": "FP1", "z": "TP"}
    cost = {"a": 0.0001, "b": 0.0002, "c": 0.0003, "z": 1.0}
    rep = gold_eval(gold, pred, cost=cost)
    assert rep["n"] == 4  # every gold id counts: "d" has no prediction and is wrong
    assert rep["accuracy"] == pytest.approx(2 / 4)
    assert rep["missing"] == 1 and rep["unparsed"] == 0
    assert rep["missing_predictions"] == ["d"] and rep["unknown_ids"] == ["z"]
    assert rep["cost_per_10k"] == pytest.approx(0.0006 / 3 * 10_000)
    # seed 003: total_cost_usd = 0.04375 over 256 rows is ~$1.71 per 10K
    ids = [str(i) for i in range(256)]
    rep = gold_eval({i: "TP" for i in ids}, {i: "TP" for i in ids}, cost={i: 0.04375 / 256 for i in ids})
    assert round(rep["cost_per_10k"], 2) == 1.71


def test_macro_f1_is_over_the_task_labels_not_the_failed_class():
    """Issue 25: 100 gold items, 99 right and 1 unparsed is accuracy 0.99 and a macro F1 near it,
    with the failure counted wrong for its gold class (sklearn's f1_score with labels=)."""
    labels = ["TP", "FP3", "FP2", "FP1"]
    ids = [str(i) for i in range(100)]
    gold = {i: labels[k % 4] for k, i in enumerate(ids)}
    pred = dict(gold)
    pred["0"] = "I cannot decide"  # unparsed: outside the task's labels
    rep = gold_eval(gold, pred, labels=labels)
    y_true = [gold[i] for i in ids]
    y_pred = [pred[i] if pred[i] in labels else "Error" for i in ids]
    assert rep["accuracy"] == pytest.approx(0.99)
    assert rep["macro_f1"] == pytest.approx(f1_score(y_true, y_pred, labels=labels, average="macro"))
    assert rep["macro_f1"] > 0.98
    assert sorted(rep["per_class"]) == sorted(labels)  # no class "Error"
    assert rep["per_class"]["TP"]["recall"] == pytest.approx(24 / 25)  # wrong for its gold class
    assert rep["confusion_matrix"]["labels"] == sorted(labels + ["Error"])  # where failures went stays visible
    # without --labels the gold labels are the task's; a label nobody predicted or gold has counts 0
    assert gold_eval(gold, pred)["macro_f1"] == pytest.approx(rep["macro_f1"])
    rep5 = gold_eval(gold, pred, labels=labels + ["FP0"])
    assert rep5["macro_f1"] == pytest.approx(
        f1_score(y_true, y_pred, labels=labels + ["FP0"], average="macro", zero_division=0))


def test_missing_predictions_count_wrong_for_their_gold_class():
    rng = np.random.default_rng(3)
    labels = ["TP", "FP3", "FP2", "FP1"]
    ids = [f"e{i}" for i in range(300)]
    gold = {i: str(rng.choice(labels)) for i in ids}
    pred = {i: (gold[i] if rng.random() < 0.7 else str(rng.choice(labels))) for i in ids if rng.random() < 0.9}
    rep = gold_eval(gold, pred, labels=labels)
    y_true = [gold[i] for i in ids]
    y_pred = [pred.get(i, "Error") for i in ids]
    assert rep["macro_f1"] == pytest.approx(f1_score(y_true, y_pred, labels=labels, average="macro"))
    p, r, f, s = precision_recall_fscore_support(y_true, y_pred, labels=labels, zero_division=0)
    for k, lab in enumerate(labels):
        assert rep["per_class"][lab]["recall"] == pytest.approx(r[k])
        assert rep["per_class"][lab]["support"] == s[k]
