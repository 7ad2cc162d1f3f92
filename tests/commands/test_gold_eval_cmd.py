import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from sklearn.metrics import accuracy_score, f1_score

GOLD = "id,label\n1,TP\n2,FP3\n3,FP1\n4,TP\n5,FP2\n"
PRED = "id,label,cost\n1,TP,0.001\n2,TP,0.001\n3,FP1,0.002\n4,TP,0.001\n5,FP3,0.001\n"


def run(*args):
    out = StringIO()
    call_command("gold_eval", *map(str, args), stdout=out)
    return out.getvalue()


@pytest.fixture
def files(tmp_path):
    gold, pred = tmp_path / "gold.csv", tmp_path / "pred.csv"
    gold.write_text(GOLD)
    pred.write_text(PRED)
    return gold, pred


def test_json(files):
    rep = json.loads(run(*files, "--json"))
    g = ["TP", "FP3", "FP1", "TP", "FP2"]
    p = ["TP", "TP", "FP1", "TP", "FP3"]
    assert rep["accuracy"] == pytest.approx(accuracy_score(g, p))
    assert rep["macro_f1"] == pytest.approx(f1_score(g, p, average="macro"))
    assert rep["binary"]["f1"] == pytest.approx(f1_score([x == "TP" for x in g], [x == "TP" for x in p]))
    assert rep["cost_per_10k"] == pytest.approx(0.006 / 5 * 10_000)
    assert rep["confusion_matrix"]["labels"] == ["FP1", "FP2", "FP3", "TP"]


def test_positive_class_and_table(files):
    rep = json.loads(run(*files, "--positive", "FP1", "--json"))
    assert rep["binary"]["positive"] == "FP1" and rep["binary"]["f1"] == 1.0
    text = run(*files)
    assert "macro F1" in text and "cost per 10K" in text


def test_bad_files(tmp_path, files):
    gold, _ = files
    bad = tmp_path / "bad.csv"
    bad.write_text("id,label,cost\n1,TP,cheap\n")
    with pytest.raises(CommandError, match="row 2, column 'cost'"):
        run(gold, bad)
    bad.write_text("id,lab\n1,TP\n")
    with pytest.raises(CommandError, match="column 'label'"):
        run(gold, bad)
    bad.write_text("id,label\n1,TP\n1,FP1\n")
    with pytest.raises(CommandError, match="row 3, column 'id'"):
        run(gold, bad)


# ---------------------------------------------------------------- failures count as wrong (issue 10 §4)

LABELS = ["TP", "FP3", "FP2", "FP1"]
GOLD8 = {"1": "TP", "2": "FP3", "3": "FP1", "4": "TP", "5": "FP2", "6": "TP", "7": "FP3", "8": "TP"}
# 6: empty; 7: "Error"; 8: a label outside the set; 9: not in gold; 5: absent from PRED
PRED8 = {"1": "TP", "2": "TP", "3": "FP1", "4": "TP", "6": "", "7": "Error", "8": "TPX", "9": "TP"}


def write(path, rows, header="id,label"):
    path.write_text(header + "\n" + "".join(f"{k},{v}\n" for k, v in rows.items()))
    return path


def sklearn_view(gold, pred, positive="TP"):
    """What the command must say, computed independently: every gold id, failures as 'Error'
    (wrong for their gold class, not a class of the macro average: issue 25); binary: a
    failure is the opposite of gold."""
    from sklearn.metrics import confusion_matrix

    ids = list(gold)
    g = [gold[i] for i in ids]
    p = [pred[i] if pred.get(i) in LABELS else "Error" for i in ids]
    gb = [x == positive for x in g]
    pb = [(not gb[k]) if p[k] == "Error" else p[k] == positive for k in range(len(ids))]
    labels = sorted(set(LABELS) | set(g) | set(p))
    return {"accuracy": accuracy_score(g, p), "macro_f1": f1_score(g, p, average="macro", labels=LABELS),
            "binary_accuracy": accuracy_score(gb, pb), "binary_f1": f1_score(gb, pb),
            "labels": labels, "matrix": confusion_matrix(g, p, labels=labels).tolist()}


def test_missing_and_unparsed_predictions_are_wrong_and_counted(tmp_path):
    gold, pred = write(tmp_path / "g.csv", GOLD8), write(tmp_path / "p.csv", PRED8)
    rep = json.loads(run(gold, pred, "--json", "--labels", ",".join(LABELS)))
    exp = sklearn_view(GOLD8, PRED8)
    assert rep["n"] == 8 and rep["missing"] == 1 and rep["unparsed"] == 3
    assert rep["missing_predictions"] == ["5"] and rep["unparsed_predictions"] == ["6", "7", "8"]
    assert rep["unknown_ids"] == ["9"]
    assert rep["accuracy"] == pytest.approx(exp["accuracy"]) == pytest.approx(3 / 8)  # 1, 3, 4 right
    assert rep["macro_f1"] == pytest.approx(exp["macro_f1"])
    assert rep["binary"]["accuracy"] == pytest.approx(exp["binary_accuracy"])
    assert rep["binary"]["f1"] == pytest.approx(exp["binary_f1"])
    assert rep["confusion_matrix"] == {"labels": exp["labels"], "matrix": exp["matrix"]}
    text = run(gold, pred, "--labels", ",".join(LABELS))
    assert "missing predictions: 1, unparsed: 3" in text


def test_binary_by_hand_a_failure_is_never_a_correct_rest(tmp_path):
    # gold FP3 predicted "Error": sklearn on (pred == TP) would call it a correct negative
    gold = write(tmp_path / "g.csv", {"a": "FP3", "b": "TP"})
    pred = write(tmp_path / "p.csv", {"a": "Error", "b": "TP"})
    rep = json.loads(run(gold, pred, "--json"))
    assert rep["accuracy"] == 0.5 and rep["binary"]["accuracy"] == 0.5
    assert rep["binary"]["precision"] == 0.5 and rep["binary"]["recall"] == 1.0  # the failure is a false TP


def test_default_labels_are_the_gold_labels(tmp_path):
    gold = write(tmp_path / "g.csv", {"a": "TP", "b": "FP3"})
    pred = write(tmp_path / "p.csv", {"a": "TP", "b": "FP1"})
    assert json.loads(run(gold, pred, "--json"))["unparsed"] == 1  # FP1 is not a gold label
    rep = json.loads(run(gold, pred, "--json", "--labels", "TP,FP3,FP2,FP1"))
    assert rep["unparsed"] == 0 and rep["accuracy"] == 0.5
