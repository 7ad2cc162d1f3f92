"""Pilot estimates for the study planner, read from a study's ratings."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pingouin
import pytest
from scipy.stats import pearsonr

from annotation.planning.pilot import pilot_estimates, raters_per_output
from annotation.reports.ratings import stats_frame
from annotation.reports.study import study_report
from annotation.stats.power import InvalidArgument
from tests.conftest import make_user
from tests.reports.factories import items_jsonl, submit

pytestmark = pytest.mark.django_db
KEY = "semantic_relevance"


def test_score_estimates_agree_with_the_report_pingouin_and_scipy(rated_study):
    est = pilot_estimates(rated_study)["scores"]
    assert est["criterion"] == KEY
    # ρ: the report's own ICC1 of the criterion, the figure the report shows
    report = study_report(rated_study, n_boot=10)
    assert est["icc"]["value"] == report["agreement"][KEY]["icc1"]["value"]
    df = stats_frame(rated_study, [KEY])
    df = df[~df["is_attention_check"]]
    # ... which is pingouin's ICC(1,1) over the (item, output) units rated by all three raters
    complete = df.assign(unit=df["item_id"].astype(str) + "/" + df["output"].astype(str))
    full_units = complete.groupby("unit")["rater_id"].transform("nunique") == 3
    ref = pingouin.intraclass_corr(complete[full_units], targets="unit", raters="rater_id", ratings="score")
    assert est["icc"]["value"] == pytest.approx(ref.set_index("Type").loc["ICC(1,1)", "ICC"])
    # σ: the SD of single ratings over every system, as ρ counts the systems' spread too
    assert est["sd"]["value"] == pytest.approx(df["score"].std())
    # c: mean over system pairs of the Pearson correlation of per-item means, corrected by ρk
    means = df.groupby(["item_id", "system"])["score"].mean().unstack()
    pairs = [("sys-a", "sys-b"), ("sys-a", "sys-c"), ("sys-b", "sys-c")]
    observed = np.mean([pearsonr(means[a], means[b]).statistic for a, b in pairs])
    assert est["corr_observed"]["value"] == pytest.approx(observed)
    assert [p["systems"] for p in est["corr_pairs"]] == [list(p) for p in pairs]
    k, rho = est["ratings_per_output"], est["icc"]["value"]
    assert est["corr"]["value"] == pytest.approx(min(0.99, observed * (1 + (k - 1) * rho) / (k * rho)))


def test_a_pilot_simulated_from_the_model_plans_at_least_the_items_its_parameters_need(make_study, db):
    """150 items, two systems two points apart, three raters per output: the raters' noise (1 − ρ)σ² comes
    back as drawn, and the systems' gap, counted as true-score spread by the report's ICC1, only makes the
    plan ask for more items than the planted parameters need, never fewer."""
    from annotation.stats.power import items_needed

    sd, rho, c, n_items, n_raters = 1.0, 0.5, 0.6, 150, 3
    raters = [make_user(f"sim{r}") for r in range(n_raters)]
    study = make_study("rrgen-001", annotators=raters, items_text=items_jsonl(n_items, systems=("sys-a", "sys-b")))
    rng = np.random.default_rng(3)
    truth = rng.multivariate_normal([2.0, 0.0], rho * sd**2 * np.array([[1, c], [c, 1]]), size=n_items)
    noise = rng.normal(0, sd * np.sqrt(1 - rho), size=(n_items, 2, n_raters))
    for i, item in enumerate(study.items.order_by("id")):
        for r, rater in enumerate(raters):
            # numeric criterion values are stored as given; the model is continuous
            submit(study, rater, item, {(p, KEY): float(truth[i, p] + noise[i, p, r]) for p in range(2)})
    est = pilot_estimates(study, criterion=KEY)["scores"]
    gap_var = 1.0  # systems at +-1 around their mean
    assert est["sd"]["value"] == pytest.approx(np.sqrt(sd**2 + gap_var), abs=0.1)
    assert est["icc"]["value"] == pytest.approx((rho * sd**2 + gap_var) / (sd**2 + gap_var), abs=0.08)
    noise_var = (1 - est["icc"]["value"]) * est["sd"]["value"] ** 2
    assert noise_var == pytest.approx((1 - rho) * sd**2, abs=0.08)
    for delta in (0.2, 0.3, 0.5):
        planned = items_needed(delta=delta, sd=est["sd"]["value"], icc=est["icc"]["value"], corr=est["corr"]["value"],
                               raters=n_raters)
        assert planned >= items_needed(delta=delta, sd=sd, icc=rho, corr=c, raters=n_raters)


def test_raters_per_output_follow_the_design_a_pair_of_four_outputs_halves_them(make_study):
    """A pairwise rubric shows each rater two of an item's outputs: six raters per item of four outputs
    are three per output (the plan's R), not six; where every output is shown, the raters per item."""
    import json

    from annotation.simulation.items import items_for

    rows = items_for("compare-pairwise", 3, seed=4)
    assert {len(r["outputs"]) for r in rows} == {4}
    pairwise = make_study("compare-pairwise", items_text="\n".join(json.dumps(r) for r in rows), raters_per_item=6)
    assert raters_per_output(pairwise) == 3 == pilot_estimates(pairwise)["raters_per_output"]
    assert raters_per_output(make_study("rrgen-001", items_text=items_jsonl(2), raters_per_item=2)) == 2


def test_an_unknown_or_non_numeric_criterion_is_named(rated_study):
    with pytest.raises(InvalidArgument) as info:
        pilot_estimates(rated_study, criterion="decision")  # ACCEPT/REJECT, not a scale
    assert info.value.argument == "criterion"


def test_a_study_without_ratings_says_so(make_study):
    est = pilot_estimates(make_study("rrgen-001"))["scores"]
    assert est["n_ratings"] == 0
    for name in ("sd", "icc", "corr"):
        assert est[name]["value"] is None and "too little data" in est[name]["reason"]


def test_one_rater_gives_sd_and_corr_but_no_icc(make_study, raters):
    study = make_study("rrgen-001", annotators=raters[:1], items_text=items_jsonl(5))
    for i, item in enumerate(study.items.order_by("id")):
        submit(study, raters[0], item, {(p, KEY): 2 + (i + p) % 5 for p in range(3)})
    est = pilot_estimates(study, criterion=KEY)
    assert est["scores"]["icc"]["value"] is None
    assert "two or more ratings" in est["scores"]["icc"]["reason"]
    assert est["scores"]["sd"]["value"] is not None
    assert any("rough" in note for note in est["notes"])


def _pairwise_study(make_study, raters, winners):
    """A compare-pairwise study: item k judged once per rater with winners[k][r] in
    {"a", "b", "tie"}, shown in alternating order."""
    study = make_study("compare-pairwise", annotators=raters,
                       items_text=items_jsonl(len(winners), systems=("sys-a", "sys-b")))
    for item, per_rater in zip(study.items.order_by("id").prefetch_related("outputs"), winners):
        ids = {o.system: o.pk for o in item.outputs.all()}
        for r, (rater, w) in enumerate(zip(raters, per_rater)):
            shown = [ids["sys-a"], ids["sys-b"]][:: 1 if r % 2 == 0 else -1]
            winner = "tie" if w == "tie" else ids[f"sys-{w}"]
            submit(study, rater, item, {(None, "preference"): {"shown": shown, "winner": winner, "strength": None},
                                        (0, "helpfulness"): 5, (1, "helpfulness"): 4},
                   permutation=[0, 1] if r % 2 == 0 else [1, 0])
    return study


def test_pairwise_pilot_counts_ties_and_wins(make_study, raters):
    # 12 items x 3 raters = 36 judgements: 6 ties, 30 decided of which sys-a wins 20
    pattern = [("a", "a", "tie"), ("a", "b", "a"), ("b", "a", "tie"), ("a", "a", "b")] * 3
    study = _pairwise_study(make_study, raters, pattern)
    pw = pilot_estimates(study)["pairwise"]
    flat = [w for row in pattern for w in row]
    assert pw["judgements"] == 36
    assert pw["tie_share"] == pytest.approx(flat.count("tie") / 36)
    decided = [w for w in flat if w != "tie"]
    assert pw["pairs"] == [{"systems": ["sys-a", "sys-b"], "decided": len(decided),
                            "win_rate": pytest.approx(decided.count("a") / len(decided))}]
    assert pw["win_rate"] == pytest.approx(decided.count("a") / len(decided))
    assert pw["win_rate_pair"] == ["sys-a", "sys-b"]


def test_pairwise_pilot_with_few_judgements_says_too_little_data(make_study, raters):
    study = _pairwise_study(make_study, raters, [("a", "b", "a")])
    pw = pilot_estimates(study)["pairwise"]
    assert pw["win_rate"] is None and "too little data" in pw["reason"]
    assert pw["tie_share"] == 0


def test_pure_summary_picks_the_closest_pair():
    from annotation.stats.pilot import pairwise_summary

    judgements = [("x", "y", "x")] * 15 + [("y", "x", "y")] * 5 + [("x", "z", "z")] * 6 + [("z", "x", "x")] * 5
    out = pairwise_summary(judgements + [("x", "z", "tie")] * 9)
    assert out["win_rate_pair"] == ["x", "z"]  # 5/11 against 15/20
    assert out["win_rate"] == pytest.approx(6 / 11)  # stated above one half
    assert out["tie_share"] == pytest.approx(9 / 40)


def test_pure_sd_of_constant_ratings_is_undefined():
    from annotation.stats.pilot import within_system_sd

    assert within_system_sd([3, 3, 4, 4], ["a", "a", "b", "b"]).value is None
    assert within_system_sd(pd.Series([1.0, 3.0]), ["a", "a"]).value == pytest.approx(np.std([1, 3], ddof=1))


def test_a_pilot_whose_closest_pair_splits_evenly_says_why_there_is_nothing_to_plan():
    from annotation.planning.plan import study_plan
    from annotation.stats.pilot import pairwise_summary

    even = [("a", "b", "a")] * 6 + [("a", "b", "b")] * 6 + [("a", "c", "a")] * 11 + [("a", "b", "tie")] * 2
    pilot = {"study": "pilot", "scores": None, "pairwise": pairwise_summary(even), "notes": []}
    with pytest.raises(InvalidArgument) as raised:
        study_plan({}, pilot=pilot)
    assert raised.value.argument == "delta"
    assert raised.value.message.endswith("(the pilot gives no win probability: the closest pair splits evenly: "
                                         "enter the win probability worth detecting)")
    plan = study_plan({"win_prob": 0.6}, pilot=pilot)  # entered, with the pilot's ties
    assert plan["sources"] == {"win_prob": "entered", "ties": "pilot", "power": "default", "alpha": "default"}
    assert plan["pairwise"]["inputs"]["ties"] == pytest.approx(2 / 25)
