"""manage.py plan_study: entered values, a pilot study, text and JSON, and errors naming the option."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from annotation.planning.pilot import pilot_estimates
from annotation.stats import power as pw
from tests.reports.conftest import raters, rated_study  # noqa: F401 (fixtures)

SCORES = ["--delta", "0.5", "--sd", "1.2", "--icc", "0.5", "--corr", "0.4"]


def run(*args: str) -> str:
    out = StringIO()
    call_command("plan_study", *args, stdout=out)
    return out.getvalue()


def test_text_names_the_formulas_and_gives_the_numbers():
    text = run(*SCORES, "--raters", "3", "--win-prob", "0.6", "--ties", "0.2")
    n = pw.items_needed(delta=0.5, sd=1.2, icc=0.5, corr=0.4, raters=3)
    assert f"With 3 raters per output: {n} items" in text
    assert f"Formula: {pw.SCORES_FORMULA}" in text and f"Formula: {pw.PAIRWISE_FORMULA}" in text
    for r in range(1, 7):
        row = next(line for line in text.splitlines() if line.split()[:1] == [str(r)])
        assert int(row.split()[1]) == pw.items_needed(delta=0.5, sd=1.2, icc=0.5, corr=0.4, raters=r)
    decided = pw.judgements_needed(win_prob=0.6)
    assert f"{decided} decided judgements" in text
    assert f"{-(-decided * 10 // 8)} judgements per pair with ties" in text


def test_json_is_the_plan():
    plan = json.loads(run(*SCORES, "--power", "0.9", "--alpha", "0.01", "--bt-diff", "0.4", "--json"))
    assert plan["scores"]["items"] == pw.items_needed(delta=0.5, sd=1.2, icc=0.5, corr=0.4, raters=3,
                                                      power=0.9, alpha=0.01)
    assert plan["pairwise"]["decided"] == pw.judgements_needed(win_prob=pw.bt_win_prob(0.4), power=0.9, alpha=0.01)
    assert plan["sources"]["raters"] == "default" and plan["sources"]["sd"] == "entered"
    assert plan["pilot"] is None


def test_only_comparisons_need_no_score_inputs():
    plan = json.loads(run("--win-prob", "0.7", "--json"))
    assert plan["scores"] is None and plan["pairwise"]["decided"] == pw.judgements_needed(win_prob=0.7)


@pytest.mark.django_db
def test_pilot_supplies_what_was_not_entered(rated_study):
    est = pilot_estimates(rated_study)["scores"]
    plan = json.loads(run("--pilot", rated_study.slug, "--delta", "0.5", "--corr", "0.1", "--json"))
    assert plan["sources"] == {"delta": "entered", "sd": "pilot", "icc": "pilot", "corr": "entered",
                               "raters": "pilot", "power": "default", "alpha": "default"}
    assert plan["scores"]["inputs"]["sd"] == pytest.approx(est["sd"]["value"])
    rpi = rated_study.raters_per_item
    assert plan["scores"]["inputs"]["raters"] == rpi
    assert plan["scores"]["items"] == pw.items_needed(delta=0.5, sd=est["sd"]["value"], icc=est["icc"]["value"],
                                                      corr=0.1, raters=rpi)
    text = run("--pilot", rated_study.slug, "--delta", "0.5", "--criterion", "semantic_relevance")
    assert f"Pilot: study {rated_study.slug}" in text and "(from the pilot)" in text
    assert f"With {rpi} raters per output (from the pilot):" in text


@pytest.mark.django_db
def test_the_pilot_reads_the_reports_icc_and_the_studys_raters_per_output(make_study, raters, researcher):
    """Two raters per output in the pilot: the plan is for two, and its ICC is the report's figure."""
    from annotation.reports.study import study_report
    from tests.reports.conftest import rrgen_value
    from tests.reports.factories import items_jsonl, rate_study

    study = make_study("rrgen-001", annotators=raters[:2], researchers=[researcher], items_text=items_jsonl(8),
                       raters_per_item=2)
    rate_study(study, raters[:2], rrgen_value)
    plan = json.loads(run("--pilot", study.slug, "--delta", "0.5", "--json"))
    report_icc = study_report(study, n_boot=10)["agreement"]["semantic_relevance"]["icc1"]["value"]
    assert plan["scores"]["inputs"]["icc"] == report_icc and plan["scores"]["inputs"]["raters"] == 2
    assert "With 2 raters per output (from the pilot):" in run("--pilot", study.slug, "--delta", "0.5")
    # entered values still win
    assert json.loads(run("--pilot", study.slug, "--delta", "0.5", "--raters", "4", "--json"))[
        "scores"]["inputs"]["raters"] == 4


@pytest.mark.parametrize("args,option", [
    (["--delta", "0", "--sd", "1", "--icc", "0.5", "--corr", "0"], "--delta"),
    (["--delta", "1", "--sd", "-1", "--icc", "0.5", "--corr", "0"], "--sd"),
    (["--delta", "1", "--sd", "1", "--icc", "1.5", "--corr", "0"], "--icc"),
    (["--delta", "1", "--sd", "1", "--icc", "0.5", "--corr", "1"], "--corr"),
    (["--delta", "1", "--sd", "1", "--icc", "0.5", "--corr", "0", "--raters", "0"], "--raters"),
    (["--delta", "1", "--icc", "0.5", "--corr", "0"], "--sd"),
    (["--win-prob", "0.5"], "--win-prob"),
    (["--win-prob", "0.6", "--bt-diff", "0.3"], "--bt-diff"),
    (["--win-prob", "0.6", "--ties", "1"], "--ties"),
    (["--win-prob", "0.6", "--power", "1"], "--power"),
    (["--win-prob", "0.6", "--alpha", "0"], "--alpha"),
    (["--criterion", "x", "--delta", "1"], "--criterion"),
    ([], "--delta"),
])
def test_bad_arguments_name_the_option(args, option):
    with pytest.raises(CommandError) as info:
        run(*args)
    assert str(info.value).startswith(option + ":")


@pytest.mark.django_db
def test_bad_pilot_or_criterion_names_the_option(rated_study):
    with pytest.raises(CommandError, match="^--pilot: no study"):
        run("--pilot", "no-such-study", "--delta", "1")
    with pytest.raises(CommandError, match="^--criterion: 'decision' is not a numeric criterion"):
        run("--pilot", rated_study.slug, "--criterion", "decision", "--delta", "1")


@pytest.mark.django_db
def test_a_pilot_without_ratings_says_why_sd_is_missing(make_study):
    study = make_study("rrgen-001")
    with pytest.raises(CommandError, match=r"^--sd: required.*too little data"):
        run("--pilot", study.slug, "--delta", "1")
