"""`manage.py consensus SLUG --method ...`: per-output posteriors and per-rater estimates from a stored
study, as a summary, JSON and CSV; the same numbers as the rater models on the same codes."""

from __future__ import annotations

import csv
import io
import json

import numpy as np
import pytest
from django.core.management import CommandError, call_command

from annotation.stats.raters import dawid_skene, label_data
from tests.conftest import make_user
from tests.reports.factories import items_jsonl, rate_study

N_ITEMS = 20
SPAMMER, STRICT = 3, 2


def planted(i: int, p: int, r: int, key: str, rng) -> object:
    level = 6 - 2 * p + (i % 2)  # sys-a best, then sys-b, then sys-c on a 1-7 scale
    if key == "decision":
        if r == SPAMMER:
            return "ACCEPT"  # always the same answer
        right = "ACCEPT" if level >= 4 else "REJECT"
        return right if (i + p + r) % 7 else ("REJECT" if right == "ACCEPT" else "ACCEPT")
    return max(1, min(7, level + (i + p + r) % 3 - 1 - (2 if r == STRICT else 0)))


@pytest.fixture
def crowd(make_study, researcher):
    raters = [make_user(f"rater{k}") for k in range(5)]
    study = make_study("rrgen-001", annotators=raters, researchers=[researcher], items_text=items_jsonl(N_ITEMS))
    rate_study(study, raters, planted)
    return study


def _run(*args) -> str:
    out = io.StringIO()
    call_command("consensus", *args, stdout=out)
    return out.getvalue()


@pytest.mark.django_db
def test_json_has_posteriors_per_output_and_the_same_numbers_as_the_model(crowd):
    got = json.loads(_run(crowd.slug, "--method", "dawid-skene", "--criterion", "decision", "--json"))
    (decision,) = got["criteria"]
    assert decision["method"] == "dawid_skene" and len(decision["units"]) == N_ITEMS * 3
    first = decision["units"][0]
    assert set(first) >= {"item", "output", "label", "p_ACCEPT", "p_REJECT"}
    assert first["p_ACCEPT"] + first["p_REJECT"] == pytest.approx(1.0)
    # refit from the rows the study holds: the same posteriors
    items = sorted({(u["item"], u["output"]) for u in decision["units"]})
    assert len(items) == N_ITEMS * 3
    raters = {r["rater"]: r for r in decision["raters"]}
    assert set(raters) == {f"rater{k}" for k in range(5)}
    assert all(r["n"] == N_ITEMS * 3 for r in raters.values())
    # the rater who always says ACCEPT: the lowest agreement and a confusion matrix that never says REJECT
    assert min(raters, key=lambda n: raters[n]["agreement"]) == f"rater{SPAMMER}"
    assert raters[f"rater{SPAMMER}"]["p_right_REJECT"] < 0.01


@pytest.mark.django_db
def test_posteriors_equal_a_fit_on_the_same_codes(crowd):
    got = json.loads(_run(crowd.slug, "--method", "dawid-skene", "--criterion", "decision", "--json"))["criteria"][0]
    units = {(u["item"], u["output"]): k for k, u in enumerate(got["units"])}
    names = {r["rater"]: k for k, r in enumerate(got["raters"])}
    item, rater, label = [], [], []
    for i in range(N_ITEMS):
        for p in range(3):
            for r in range(5):
                item.append(units[(f"it-{i:03d}", p)])
                rater.append(names[f"rater{r}"])
                label.append(["ACCEPT", "REJECT"].index(planted(i, p, r, "decision", None)))
    fit = dawid_skene(label_data(item, rater, label, n_classes=2))
    ours = np.array([[u["p_ACCEPT"], u["p_REJECT"]] for u in got["units"]])
    assert np.abs(ours - fit.posteriors).max() < 1e-12


@pytest.mark.django_db
def test_best_and_scales_and_csv(crowd):
    text = _run(crowd.slug)
    assert "criterion decision:" in text and "lowest BIC" in text
    got = json.loads(_run(crowd.slug, "--json"))
    scales = [c for c in got["criteria"] if c["method"] == "rater_effects"]
    assert scales, "the rubric's Likert criteria get the rater-effects model"
    for c in scales:
        bias = {r["rater"]: r["bias"] for r in c["raters"]}
        assert min(bias, key=bias.get) == f"rater{STRICT}"  # two points strict everywhere
        u = c["units"][0]
        assert u["ci_low"] < u["adjusted_mean"] < u["ci_high"]
    rows = list(csv.DictReader(io.StringIO(_run(crowd.slug, "--method", "mace", "--csv"))))
    decision = [r for r in rows if r["criterion"] == "decision"]
    assert {r["table"] for r in decision} == {"units", "raters"}
    assert all(r["method"] == "mace" for r in decision)
    spam = [r for r in decision if r["table"] == "raters" and r["rater"] == f"rater{SPAMMER}"][0]
    assert float(spam["competence"]) < 0.3


@pytest.mark.django_db
def test_unknown_study_and_criterion_are_named(crowd):
    with pytest.raises(CommandError, match="no study with slug 'nope'"):
        _run("nope")
    with pytest.raises(CommandError, match="--criterion 'colour': not a categorical or numeric criterion"):
        _run(crowd.slug, "--criterion", "colour")
