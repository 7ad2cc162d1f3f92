"""`consensus`, `agreement` and `comparisons` on files (no database): planted truth recovered from a plain CSV,
the same figures from CSV, JSON lines and Parquet, and errors that name the row and column."""

from __future__ import annotations

import json
from io import StringIO

import numpy as np
import pandas as pd
import pytest
from django.core.management import CommandError, call_command

from annotation.stats.raters import dawid_skene, label_data

N_ITEMS, GOOD = 80, ("ann", "bob", "cat")


def _run(*args) -> dict:
    out = StringIO()
    call_command(*args, "--json", stdout=out)
    return json.loads(out.getvalue())


def _planted(tmp_path) -> tuple[pd.DataFrame, dict]:
    """Three raters right 85% of the time, a spammer who always says 'A'; a scale where `cat` is 1.5 points harsh."""
    rng = np.random.default_rng(7)
    truth = {f"it-{i:02d}": rng.choice(["A", "B", "C"]) for i in range(N_ITEMS)}
    level = {item: float(rng.integers(2, 7)) for item in truth}
    rows = []
    for item, label in truth.items():
        for rater in GOOD:
            right = rng.random() < 0.85
            rows.append((item, rater, "label", label if right else rng.choice([x for x in "ABC" if x != label])))
            rows.append((item, rater, "scale", level[item] - (1.5 if rater == "cat" else 0) + rng.normal(0, 0.3)))
        rows.append((item, "spam", "label", "A"))
    return pd.DataFrame(rows, columns=["item", "rater", "criterion", "score"]), truth


def test_consensus_from_a_plain_csv_recovers_the_planted_truth_and_equals_a_direct_fit(tmp_path):
    df, truth = _planted(tmp_path)
    path = tmp_path / "ratings.csv"
    df.to_csv(path, index=False)
    got = {c["criterion"]: c for c in _run("consensus", str(path), "--method", "dawid-skene")["criteria"]}
    label = got["label"]
    found = {u["item"]: u["label"] for u in label["units"]}
    assert sum(found[i] == t for i, t in truth.items()) >= 0.9 * N_ITEMS  # (three raters right 85% of the time)
    raters = {r["rater"]: r for r in label["raters"]}
    assert min(raters, key=lambda n: raters[n]["agreement"]) == "spam"
    # the same posteriors as the model fitted on the same codes (labels in sorted order)
    sub = df[df["criterion"] == "label"]
    units, raters_ = pd.factorize(sub["item"])[0], pd.factorize(sub["rater"])[0]
    fit = dawid_skene(label_data(units, raters_, sub["score"].map({"A": 0, "B": 1, "C": 2}).to_numpy(), n_classes=3))
    ours = np.array([[u["p_A"], u["p_B"], u["p_C"]] for u in label["units"]])
    assert np.abs(ours - fit.posteriors).max() < 1e-12
    # the scale: rater effects find `cat` 1.5 points below the others
    bias = {r["rater"]: r["bias"] for r in got["scale"]["raters"]}
    assert bias["cat"] - np.mean([bias["ann"], bias["bob"]]) == pytest.approx(-1.5, abs=0.15)


def test_csv_json_lines_and_parquet_give_the_same_figures(tmp_path):
    df, _ = _planted(tmp_path)
    df["score"] = df["score"].astype(str)
    paths = {"csv": tmp_path / "r.csv", "jsonl": tmp_path / "r.jsonl", "parquet": tmp_path / "r.parquet"}
    df.to_csv(paths["csv"], index=False)
    df.to_json(paths["jsonl"], orient="records", lines=True)
    df.to_parquet(paths["parquet"])
    for command in ("agreement", "consensus"):
        results = {fmt: _run(command, str(p)) for fmt, p in paths.items()}
        results = {fmt: {k: v for k, v in r.items() if k != "file"} for fmt, r in results.items()}
        assert results["jsonl"] == results["csv"] == results["parquet"], command


def test_comparisons_from_json_lines_and_parquet_equal_the_csv(tmp_path):
    rows = pd.DataFrame([(f"i{k}", f"r{k % 3}", a, b, w) for k, (a, b, w) in enumerate(
        [("x", "y", "x"), ("y", "z", "y"), ("x", "z", "tie"), ("z", "x", "x"), ("y", "x", "y"), ("z", "y", "z")] * 3)],
        columns=["item", "rater", "system_a", "system_b", "winner"])
    rows.to_csv(tmp_path / "p.csv", index=False)
    rows.to_json(tmp_path / "p.jsonl", orient="records", lines=True)
    rows.to_parquet(tmp_path / "p.parquet")
    want = _run("comparisons", str(tmp_path / "p.csv"))
    for name in ("p.jsonl", "p.parquet"):
        got = _run("comparisons", str(tmp_path / name))
        assert got["systems"].keys() == want["systems"].keys()
        for s in want["systems"]:
            assert got["systems"][s]["bt"] == pytest.approx(want["systems"][s]["bt"], abs=1e-9)
        assert got["position"] == want["position"]


def test_errors_name_the_row_and_column(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"item": "a", "rater": "r", "score": 1}\n{"item": "a", "rater": "s", "score": 2}\nnot json\n')
    with pytest.raises(CommandError, match=r"row 3: not JSON"):
        _run("agreement", str(bad))
    with pytest.raises(CommandError, match=r"row 3: not JSON"):
        _run("consensus", str(bad))
    table = pd.DataFrame({"item": ["a", "b"], "rater": ["r", "r"], "criterion": ["pref", "pref"],
                          "kind": ["pairwise", "pairwise"], "shown": [["x", "y"], ["x", "y"]],
                          "winner": ["x", "q"], "ranks": [None, None], "best": [None, None], "worst": [None, None]})
    table.to_parquet(tmp_path / "client.parquet")
    with pytest.raises(CommandError, match=r"row 3, column 'winner': 'q' is not one of the shown \['x', 'y'\] nor"):
        _run("comparisons", str(tmp_path / "client.parquet"))
    (tmp_path / "kinds.csv").write_text("item,rater,criterion,criterion_kind,value\na,r,text,text,hello\n")
    with pytest.raises(CommandError, match=r"column 'criterion_kind': no pairwise, ranking or best_worst answers"):
        _run("comparisons", str(tmp_path / "kinds.csv"))


def _pair(item: str, chosen: str, rejected: str, won: float, lost: float, n: int) -> str:
    scores = lambda overall: {"overall": overall, "confidence_interval": None, "vote_count": n}  # noqa: E731
    return json.dumps({"prompt": "p", "chosen": "c", "rejected": "r", "metadata": {
        "challenge": item, "chosen_model": chosen, "rejected_model": rejected, "chosen_scores": scores(won),
        "rejected_scores": scores(lost), "score_difference": won - lost, "dataset_version": "1.0.0",
        "evaluation_date": None}}) + "\n"


def test_preference_pairs_of_shares_count_each_judgement_and_pairs_of_scores_one_each(tmp_path):
    shares = tmp_path / "shares.jsonl"  # a comparative study: x won 3 of 4 against y, 2 of 3 against z
    shares.write_text(_pair("i1", "x", "y", 0.75, 0.25, 4) + _pair("i2", "x", "z", 2 / 3, 1 / 3, 3))
    got = _run("comparisons", str(shares))
    assert "share" in got["source"]
    assert got["systems"]["x"]["n"] == pytest.approx(7) and got["systems"]["y"]["n"] == pytest.approx(4)
    assert got["win_rates"]["x"]["y"] == pytest.approx(0.75) and got["win_rates"]["x"]["z"] == pytest.approx(2 / 3)
    scores = tmp_path / "scores.jsonl"  # a rated study: consensus scores, one judgement per pair
    scores.write_text(_pair("i1", "x", "y", 4.5, 2.0, 2) + _pair("i2", "y", "x", 4.0, 3.0, 2))
    got = _run("comparisons", str(scores))
    assert "one judgement per pair" in got["source"]
    assert got["win_rates"]["x"]["y"] == pytest.approx(0.5) and got["systems"]["x"]["n"] == pytest.approx(2)
    mixed = tmp_path / "mixed.jsonl"
    mixed.write_text(shares.read_text() + scores.read_text())
    with pytest.raises(CommandError, match="mixed"):
        _run("comparisons", str(mixed))
