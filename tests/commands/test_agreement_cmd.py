import json
from io import StringIO

import krippendorff
import numpy as np
import pytest
from django.core.management import CommandError, call_command

CSV = """item,rater,criterion,score
a,ann,clarity,1
a,bob,clarity,2
a,gpt,clarity,2
b,ann,clarity,3
b,bob,clarity,3
b,gpt,clarity,3
c,ann,clarity,2
c,bob,clarity,2
c,gpt,clarity,1
d,ann,clarity,5
d,bob,clarity,4
d,gpt,clarity,4
a,ann,tone,3
a,bob,tone,3
b,ann,tone,3
b,bob,tone,3
"""


def run(path, *args):
    out = StringIO()
    call_command("agreement", str(path), *args, stdout=out)
    return out.getvalue()


def test_json_report(tmp_path):
    path = tmp_path / "r.csv"
    path.write_text(CSV)
    rep = json.loads(run(path, "--judge", "gpt", "--json"))
    clarity = rep["criteria"]["clarity"]
    assert clarity["n_items"] == 4 and clarity["n_raters"] == 2 and clarity["n_ratings"] == 8
    ref = krippendorff.alpha(reliability_data=np.array([[1, 3, 2, 5], [2, 3, 2, 4]]), level_of_measurement="interval")
    assert clarity["krippendorff_alpha"]["interval"] == pytest.approx(ref)
    # judge vs human mean [1.5, 3, 2, 4.5]: |2-1.5| + 0 + |1-2| + |4-4.5| over 4
    assert clarity["judges"]["gpt"]["mae"] == pytest.approx(0.5)
    tone = rep["criteria"]["tone"]
    assert tone["krippendorff_alpha"]["nominal"] is None  # all 3s: undefined, null in JSON
    assert tone["icc"]["ICC1"] is None


def test_human_table(tmp_path):
    path = tmp_path / "r.csv"
    path.write_text(CSV)
    text = run(path, "--judge", "gpt")
    assert "criterion clarity: 4 items, 2 raters, 8 ratings" in text
    assert "judge gpt" in text


@pytest.mark.parametrize("content, expected", [
    ("item,rater,score\na,r1,1\na,r2,two\n", "row 3, column 'score'"),
    ("item,rater\na,r1\n", "column 'score'"),
    ("item,rater,score\na,,1\n", "row 2, column 'rater'"),
    ("item,rater,score\na,r1,1\na,r1,2\n", "row 3"),
])
def test_bad_csv(tmp_path, content, expected):
    path = tmp_path / "bad.csv"
    path.write_text(content)
    with pytest.raises(CommandError, match=expected):
        run(path)


# ---------------------------------------------------------------- text labels and levels of measurement

# Krippendorff (2011), "Computing Krippendorff's alpha-reliability", reliability data with missing
# values: 4 observers x 12 units. Published: nominal 0.743, ordinal 0.815, interval 0.849, ratio 0.797.
KRIPP = {
    "A": [1, 2, 3, 3, 2, 1, 4, 1, 2, None, None, None],
    "B": [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, None, 3],
    "C": [None, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, None],
    "D": [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, None],
}
COLOURS = {1: "red", 2: "green", 3: "blue", 4: "yellow", 5: "black"}
NOT_NOMINAL = [("krippendorff_alpha", "ordinal"), ("krippendorff_alpha", "interval"), ("krippendorff_alpha", "ratio"),
               ("icc", "ICC1"), ("icc", "ICC2k"), ("cohen_kappa", "linear"), ("cohen_kappa", "quadratic"),
               ("mean_pairwise_pearson",), ("mean_pairwise_spearman",)]


def _kripp_csv(tmp_path, as_text: bool):
    lines = ["item,rater,score"]
    for rater, values in KRIPP.items():
        lines += [f"u{u},{rater},{COLOURS[v] if as_text else v}" for u, v in enumerate(values) if v is not None]
    path = tmp_path / "kripp.csv"
    path.write_text("\n".join(lines) + "\n")
    return path


def _at(tree, path):
    for key in path:
        tree = tree[key]
    return tree


def test_text_labels_are_nominal_codes_checked_against_published_values(tmp_path):
    rep = json.loads(run(_kripp_csv(tmp_path, as_text=True), "--json"))["criteria"]["score"]
    assert rep["level"] == "nominal" and rep["labels"] == ["black", "blue", "green", "red", "yellow"]
    assert round(rep["krippendorff_alpha"]["nominal"], 3) == 0.743  # Krippendorff's published value
    data = np.array([[np.nan if v is None else v for v in vals] for vals in KRIPP.values()], dtype=float)
    ref = krippendorff.alpha(reliability_data=data, level_of_measurement="nominal")
    assert rep["krippendorff_alpha"]["nominal"] == pytest.approx(ref)
    assert rep["n_items"] == 12 and rep["n_raters"] == 4 and rep["n_ratings"] == 41
    for stat in ("fleiss_kappa", "percent_agreement"):
        assert rep[stat] is not None
    assert rep["cohen_kappa"]["unweighted"] is not None
    for path in NOT_NOMINAL:
        assert _at(rep, path) is None, path
        assert "nominal level" in rep["reasons"][".".join(path)]
    # the same data as numbers at --level nominal give the same nominal statistics
    numbers = json.loads(run(_kripp_csv(tmp_path, as_text=False), "--json", "--level", "nominal"))["criteria"]["score"]
    for path in [("krippendorff_alpha", "nominal"), ("fleiss_kappa",), ("cohen_kappa", "unweighted"),
                 ("percent_agreement",)]:
        assert _at(numbers, path) == pytest.approx(_at(rep, path))
    assert numbers["icc"]["ICC2"] is None


def test_ordinal_adds_ordinal_alpha_weighted_kappa_and_spearman(tmp_path):
    rep = json.loads(run(_kripp_csv(tmp_path, as_text=False), "--json", "--level", "ordinal"))["criteria"]["score"]
    assert rep["level"] == "ordinal"
    assert round(rep["krippendorff_alpha"]["ordinal"], 3) == 0.815
    assert rep["cohen_kappa"]["linear"] is not None and rep["cohen_kappa"]["quadratic"] is not None
    assert rep["mean_pairwise_spearman"] is not None
    for path in [("krippendorff_alpha", "interval"), ("krippendorff_alpha", "ratio"), ("icc", "ICC1"),
                 ("mean_pairwise_pearson",)]:
        assert _at(rep, path) is None, path


@pytest.mark.parametrize("level", [None, "interval", "ratio"])
def test_numbers_default_to_interval_and_interval_reports_everything(tmp_path, level):
    args = ["--json"] + (["--level", level] if level else [])
    rep = json.loads(run(_kripp_csv(tmp_path, as_text=False), *args))["criteria"]["score"]
    assert rep["level"] == (level or "interval") and "labels" not in rep
    published = {"nominal": 0.743, "ordinal": 0.815, "interval": 0.849, "ratio": 0.797}
    assert {k: round(v, 3) for k, v in rep["krippendorff_alpha"].items()} == published
    assert rep["icc"]["ICC1"] is not None and rep["mean_pairwise_pearson"] is not None


def test_mixed_file_numbers_and_labels_per_criterion_with_a_judge(tmp_path):
    from sklearn.metrics import cohen_kappa_score

    ann = ["Yes", "No", "Yes", "Yes", "No", "No", "Yes", "No"]
    bob = ["Yes", "No", "No", "Yes", "No", "Yes", "Yes", "No"]
    gpt = ["Yes", "No", "Yes", "No", "No", "No", "Yes", "No"]
    lines = ["item,rater,criterion,score"]
    for i in range(8):
        lines += [f"i{i},ann,decision,{ann[i]}", f"i{i},bob,decision,{bob[i]}", f"i{i},gpt,decision,{gpt[i]}",
                  f"i{i},ann,clarity,{1 + i % 5}", f"i{i},bob,clarity,{1 + (i + 1) % 5}"]
    path = tmp_path / "mixed.csv"
    path.write_text("\n".join(lines) + "\n")
    rep = json.loads(run(path, "--json", "--judge", "gpt"))["criteria"]
    decision, clarity = rep["decision"], rep["clarity"]
    assert decision["level"] == "nominal" and decision["labels"] == ["No", "Yes"]
    assert decision["cohen_kappa"]["unweighted"] == pytest.approx(cohen_kappa_score(ann, bob))
    assert decision["percent_agreement"] == pytest.approx(6 / 8)
    assert decision["icc"]["ICC1"] is None and decision["mean_pairwise_pearson"] is None
    judge = decision["judges"]["gpt"]
    assert all(judge[k] is None for k in ("pearson", "spearman", "kendall_tau_b", "lin_ccc", "mae"))
    assert "alt_test_advantage_probability" in judge
    # the judge against the human majority: items 2 and 5 tie (Yes/No), gpt matches the other six but item 3
    assert judge["majority_agreement"] == pytest.approx(5 / 6)
    assert clarity["level"] == "interval" and clarity["icc"]["ICC1"] is not None
    text = run(path, "--judge", "gpt")
    block = text.split("criterion clarity")[0]
    assert "nominal level; labels No, Yes" in block
    assert "ICC" not in block and "Pearson" not in block and "alpha interval" not in block
    assert "alpha nominal" in block and "Fleiss kappa" in block
    assert "ICC2" in text.split("criterion clarity")[1]


@pytest.mark.parametrize("content, args, expected", [
    ("item,rater,score\na,r1,Yes\na,r2,No\nb,r1,1\n", [], "row 4, column 'score': a number among text labels: '1'"),
    ("item,rater,score\na,r1,1\na,r2,2\nb,r1,TP\n", [], "row 4, column 'score': not a number: 'TP'"),
    ("item,rater,score\na,r1,TP\na,r2,FP1\n", ["--level", "interval"], "criterion 'score' has text labels (FP1, TP)"),
    ("item,rater,score\na,r1,TP\na,r2,FP1\n", ["--level", "ordinal"], "level ordinal needs numbers"),
])
def test_labels_and_levels_refused_with_a_clear_error(tmp_path, content, args, expected):
    path = tmp_path / "bad.csv"
    path.write_text(content)
    with pytest.raises(CommandError) as exc:
        run(path, *args)
    assert expected in str(exc.value)


@pytest.mark.django_db
def test_concords_own_export_is_read_as_it_is_and_agrees_with_the_study_report(tmp_path, make_study):
    """agreement on `export_study --format csv` gives the study report's alpha: units are (item, output),
    ignored items left out, ACCEPT/REJECT read as nominal labels, text and highlights not ratings."""
    import random

    from annotation.datasets import export_chunks
    from annotation.reports.study import study_report
    from annotation.services.assignments import assignment_next
    from annotation.services.ratings import assignment_submit
    from tests.conftest import make_user
    from tests.workspace.conftest import items_jsonl, rrgen_answers

    rs = [make_user(f"exp{i}") for i in range(3)]
    study = make_study("rrgen-001", annotators=rs, items_text=items_jsonl(6), raters_per_item=3)
    rng = random.Random(4)
    for r in rs:
        while (a := assignment_next(study=study, rater=r)) is not None:
            if a.item.external_id == "it-0005" and r == rs[0]:
                answers = {"ignored": True, "ignore_reason": "The REVIEW text is deemed unsuitable"}
            else:
                answers = rrgen_answers(3)
                for block in answers["responses"].values():
                    block["semantic_relevance"] = rng.randint(1, 7)
                    block["decision"] = rng.choice(["ACCEPT", "REJECT"])
                block["highlights"] = [{"start": 0, "end": 4, "label": "relevant"}]
            assignment_submit(assignment=a, answers=answers, time_on_task_ms=1)
    path = tmp_path / "export.csv"
    path.write_bytes(b"".join(export_chunks(study, "csv")))
    rep = json.loads(run(path, "--json"))["criteria"]
    report = study_report(study, n_boot=10)["agreement"]
    assert "highlights" not in rep
    sr, decision = rep["semantic_relevance"], rep["decision"]
    assert sr["level"] == "interval" and decision["level"] == "nominal" and decision["labels"] == ["ACCEPT", "REJECT"]
    assert sr["n_items"] == 6 * 3 and sr["n_ratings"] == 6 * 3 * 3 - 3  # one rater ignored one item
    assert sr["krippendorff_alpha"]["interval"] == pytest.approx(report["semantic_relevance"]["alpha"]["value"])
    assert decision["krippendorff_alpha"]["nominal"] == pytest.approx(report["decision"]["alpha"]["value"])
    assert decision["icc"]["ICC1"] is None
