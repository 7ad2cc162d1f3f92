import json

import krippendorff
import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps
from sklearn.metrics import cohen_kappa_score

from annotation.stats.report import DuplicateRating, agreement_report

KEYS = {"n_items", "n_raters", "n_ratings", "krippendorff_alpha", "icc", "fleiss_kappa", "cohen_kappa",
        "mean_pairwise_pearson", "mean_pairwise_spearman", "percent_agreement", "judges"}


def long_table(seed=0, n_items=60):
    rng = np.random.default_rng(seed)
    rows = []
    for crit in ("clarity", "tone"):
        for item in range(n_items):
            truth = rng.normal(3, 1)
            for rater in ("ann", "bob", "cy"):
                if rng.random() < 0.85:
                    rows.append((f"i{item}", rater, crit, float(np.clip(np.rint(truth + rng.normal(0, .7)), 1, 5))))
            rows.append((f"i{item}", "gpt", crit, float(np.clip(np.rint(truth + rng.normal(0, 1)), 1, 5))))
    return pd.DataFrame(rows, columns=["item", "rater", "criterion", "score"])


def test_report_shape_and_values_against_references():
    df = long_table()
    rep = agreement_report(df, judges=["gpt"])
    json.dumps(rep, allow_nan=False)  # plain JSON, no NaN
    assert set(rep["criteria"]) == {"clarity", "tone"}
    c = rep["criteria"]["clarity"]
    assert KEYS <= set(c)
    assert set(c["krippendorff_alpha"]) == {"nominal", "ordinal", "interval", "ratio"}
    assert set(c["icc"]) == {"ICC1", "ICC2", "ICC3", "ICC1k", "ICC2k", "ICC3k"}
    assert set(c["cohen_kappa"]) == {"unweighted", "linear", "quadratic"}
    assert set(c["judges"]) == {"gpt"}
    assert set(c["judges"]["gpt"]) >= {"pearson", "spearman", "kendall_tau_b", "lin_ccc", "mae"}

    humans = df[(df.criterion == "clarity") & (df.rater != "gpt")]
    assert c["n_raters"] == 3 and c["n_ratings"] == len(humans) and c["n_items"] == humans.item.nunique()
    wide = humans.pivot(index="item", columns="rater", values="score")
    ref = krippendorff.alpha(reliability_data=wide.to_numpy().T, level_of_measurement="ordinal")
    assert c["krippendorff_alpha"]["ordinal"] == pytest.approx(ref, abs=1e-10)
    kappas = []
    for a, b in (("ann", "bob"), ("ann", "cy"), ("bob", "cy")):
        both = wide[[a, b]].dropna()
        kappas.append(cohen_kappa_score(both[a], both[b], weights="quadratic"))
    assert c["cohen_kappa"]["quadratic"] == pytest.approx(np.mean(kappas), abs=1e-12)
    hmean = humans.groupby("item").score.mean()
    judge = df[(df.criterion == "clarity") & (df.rater == "gpt")].set_index("item").score.loc[hmean.index]
    assert c["judges"]["gpt"]["pearson"] == pytest.approx(sps.pearsonr(judge, hmean).statistic, abs=1e-12)
    assert c["judges"]["gpt"]["kendall_tau_b"] == pytest.approx(sps.kendalltau(judge, hmean).statistic, abs=1e-12)
    assert c["judges"]["gpt"]["mae"] == pytest.approx(np.mean(np.abs(judge - hmean)))
    assert 0.0 <= c["judges"]["gpt"]["alt_test_advantage_probability"] <= 1.0
    assert c["judges"]["gpt"]["alt_test_winning_rate"] in (0.0, 1 / 3, 2 / 3, 1.0)


def test_report_without_criterion_column_and_without_judges():
    df = long_table().query("criterion == 'tone'").drop(columns="criterion")
    rep = agreement_report(df)
    assert list(rep["criteria"]) == ["score"]
    assert rep["criteria"]["score"]["n_raters"] == 4  # gpt counts as a human rater when not named
    assert rep["criteria"]["score"]["judges"] == {}


def test_undefined_statistics_are_null_with_reasons():
    df = pd.DataFrame({"item": ["a", "b", "c"], "rater": ["r1", "r1", "r1"], "score": [1, 2, 3]})
    c = agreement_report(df)["criteria"]["score"]
    assert c["icc"]["ICC2"] is None and c["krippendorff_alpha"]["interval"] is None
    assert c["fleiss_kappa"] is None and c["mean_pairwise_pearson"] is None
    assert "icc.ICC2" in c["reasons"] and "fleiss_kappa" in c["reasons"]
    json.dumps(c, allow_nan=False)


def test_duplicate_rating_names_the_row():
    df = pd.DataFrame({"item": ["a", "b", "a"], "rater": ["r1", "r1", "r1"], "score": [1, 2, 3]})
    with pytest.raises(DuplicateRating) as err:
        agreement_report(df)
    assert err.value.row == 2


@pytest.mark.parametrize("spread", [1, 10**7])  # keys counted in a table, and hashed
def test_repeats_found_whichever_way_the_keys_are_counted(spread):
    rng = np.random.default_rng(3)
    items = np.arange(300) * spread
    df = pd.DataFrame({"item": np.repeat(items, 3), "rater": np.tile(["r1", "r2", "r3"], 300),
                       "criterion": "c", "score": rng.integers(1, 6, 900)})
    agreement_report(df)  # every (item, rater, criterion) once
    df.loc[700, "rater"] = df.loc[701, "rater"]
    with pytest.raises(DuplicateRating) as err:
        agreement_report(df)
    assert err.value.row == 701
