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
