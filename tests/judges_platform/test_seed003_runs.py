"""Seed 003 in the platform: configs for legacy / LLM router / weighted ensemble, runs through the
real worker and the fake server, report.txt's seed table equal to `gold_eval` on the same
predictions, and cached calls counted at what they would have cost."""
from __future__ import annotations

import csv
import io
import json
import re
from io import StringIO

import pytest
from django.core.management import call_command

from judges.config import JudgeConfigError, validate_judge
from judges.models import JudgeScore
from judges.services.files import render_run_files, run_file
from judges.services.runs import JudgeRunError, judge_run_start

from .conftest import wait_run_ends

GOLD = {"aq-001": "TP", "aq-002": "TP", "aq-003": "FP3", "aq-004": "FP2", "aq-005": "FP1", "aq-006": "TP"}
BASE = {"name": "j", "backend": "openai", "model": "m", "endpoint": "http://127.0.0.1:9/v1"}


# ------------------------------------------------------------------ configuration

def test_configs_for_legacy_router_and_ensemble():
    assert validate_judge({**BASE, "method": "legacy"})["method"] == "legacy"
    assert validate_judge({**BASE, "method": "escalation",
                           "method_options": {"experts": ["x"], "router": "llm", "router_two_calls": True}})
    cfg = validate_judge({**BASE, "method": "label",
                          "method_options": {"ensemble": "weighted", "members": ["a", "b", "c"], "weights": [1, 0.5, 2]}})
    assert cfg["method_options"]["weights"] == [1, 0.5, 2]
    assert validate_judge({**BASE, "method": "modular",
                           "method_options": {"ensemble": "weighted", "members": ["a"], "weights": "gold"}})


@pytest.mark.parametrize("options,method,field", [
    ({"experts": ["x"], "router": "coin"}, "escalation", "method_options.router"),
    ({"ensemble": "weighted", "members": ["a"], "weights": [1, 2]}, "label", "method_options.weights"),
    ({"ensemble": "weighted", "members": ["a"], "weights": [0, 0]}, "label", "method_options.weights"),
    ({"ensemble": "weighted"}, "legacy", "method_options.members"),
    ({"ensemble": "majority", "members": ["a"]}, "label", "method_options.ensemble"),
    ({"ensemble": "weighted", "members": ["a"]}, "per_criterion", "method_options.ensemble"),
])
def test_bad_seed003_options_name_the_field(options, method, field):
    with pytest.raises(JudgeConfigError) as exc:
        validate_judge({**BASE, "method": method, "method_options": options})
    assert any(p == field for p, _ in exc.value.errors), exc.value.errors


# ------------------------------------------------------------------ report.txt = gold_eval

def _figures(report: str) -> list[str]:
    row = next(line for line in report.splitlines() if line.startswith("| ") and "Method" not in line)
    return [c.strip() for c in row.strip("|").split("|")][1:]


def test_report_gives_the_seed_table_and_the_same_figures_as_gold_eval(db, make_study, make_judge, make_run,
                                                                       tmp_path):
    study = make_study("aqua-003")
    judge = make_judge("aqua-legacy", method="legacy")
    # two right, one wrong, one unparsed, one backend error, aq-006 right
    preds = {"aq-001": "TP", "aq-002": ("", "unparsed", {}), "aq-003": "FP3", "aq-004": "TP",
             "aq-005": (None, "error", {}), "aq-006": "TP"}
    run = make_run(study, judge, {(k, 0, "label"): v for k, v in preds.items()}, cost=0.0002)
    files = render_run_files(run)
    report = files["report.txt"]
    assert "| Method | 4-class Acc | Macro F1 | Binary Acc | Binary F1 | Cost/10K |" in report
    assert "| legacy (fake-judge) |" in report
    assert "unparsed or failed: 2" in report
    # the same predictions through the command: labeled.csv -> id,label,cost
    rows = list(csv.DictReader(io.StringIO(files["labeled.csv"])))
    pred = tmp_path / "pred.csv"
    pred.write_text("id,label,cost\n" + "".join(
        f"{r['id']},{r['value'] if r['status'] == 'scored' else 'Error'},{r['cost_usd']}\n" for r in rows))
    gold = tmp_path / "gold.csv"
    gold.write_text("id,label\n" + "".join(f"{k},{v}\n" for k, v in GOLD.items()))
    out = StringIO()
    call_command("gold_eval", str(gold), str(pred), "--labels", "TP,FP3,FP2,FP1", "--json", stdout=out)
    rep = json.loads(out.getvalue())
    assert rep["unparsed"] == 2 and rep["accuracy"] == pytest.approx(3 / 6)
    assert _figures(report) == [f"{rep['accuracy']:.3f}", f"{rep['macro_f1']:.3f}",
                                f"{rep['binary']['accuracy']:.3f}", f"{rep['binary']['f1']:.3f}",
                                f"${rep['cost_per_10k']:.2f}"]
    assert rep["cost_per_10k"] == pytest.approx(2.0)  # $0.0002 per output
    out = StringIO()
    call_command("gold_eval", str(gold), str(pred), "--labels", "TP,FP3,FP2,FP1", stdout=out)
    assert _figures(out.getvalue()) == _figures(report)  # the same table row in the text output


def test_cached_slots_count_at_what_they_would_have_cost_in_the_report(db, make_study, make_judge, make_run):
    study = make_study("aqua-003")
    judge = make_judge("aqua-cached", method="label")
    run = make_run(study, judge, {(k, 0, "label"): v for k, v in GOLD.items()}, cost=0.0)
    JudgeScore.objects.filter(run=run).update(detail={"cached": True, "cached_cost_usd": 0.0005})
    assert _figures(render_run_files(run)["report.txt"])[-1] == "$5.00"


# ------------------------------------------------------------------ runs through the worker

pytestmark_worker = pytest.mark.django_db(transaction=True)


@pytestmark_worker
def test_legacy_and_llm_routed_escalation_runs_end_to_end(celery_worker_session, make_study, make_judge,
                                                          fake_server):
    study = make_study("aqua-003")
    legacy = make_judge("aqua-legacy", endpoint=fake_server.base_url, method="legacy")
    run = wait_run_ends(judge_run_start(study=study, judge=legacy))
    assert run.status == "done", run.error
    assert run.n_scored == 6 and "| legacy (fake-judge) |" in run_file(run, "report.txt").read_text()

    make_judge("aqua-expert", endpoint=fake_server.base_url, method="label")
    small = make_judge("aqua-esc", endpoint=fake_server.base_url, method="escalation",
                       method_options={"experts": ["aqua-expert"], "router": "llm"})
    run = wait_run_ends(judge_run_start(study=study, judge=small))
    assert run.status == "done", run.error
    details = list(JudgeScore.objects.filter(run=run).values_list("detail", flat=True))
    assert len(details) == 6 and all(d["router"] == "llm" and d["router_calls"][0] == "combined" for d in details)
    assert "| escalation (fake-judge→fake-judge, llm router) |" in run_file(run, "report.txt").read_text()


@pytestmark_worker
def test_weighted_ensemble_learns_weights_from_gold_and_runs(celery_worker_session, make_study, make_judge,
                                                              make_run, fake_server):
    study = make_study("aqua-003")
    url = fake_server.base_url
    make_judge("m-baseline", endpoint=url, method="label")
    make_judge("m-legacy", endpoint=url, method="legacy")
    make_judge("m-modular", endpoint=url, method="modular")
    ens = make_judge("m-vote", endpoint=url, method="label",
                     method_options={"ensemble": "weighted", "members": ["m-baseline", "m-legacy", "m-modular"],
                                     "weights": "gold"})
    with pytest.raises(JudgeRunError, match="finished run of judge 'm-baseline'"):
        judge_run_start(study=study, judge=ens)
    # each member's own earlier run: 6/6, 3/6 and 0/6 right
    wrong = {"TP": "FP1", "FP3": "TP", "FP2": "TP", "FP1": "TP"}
    from judges.models import JudgeConfig

    for name, n_right in (("m-baseline", 6), ("m-legacy", 3), ("m-modular", 0)):
        values = {(k, 0, "label"): (v if i < n_right else wrong[v]) for i, (k, v) in enumerate(GOLD.items())}
        make_run(study, JudgeConfig.objects.get(name=name), values)
    run = judge_run_start(study=study, judge=ens)
    assert run.config["ensemble_weights"] == [1.0, 0.5, 0.0]
    assert [m["name"] for m in run.config["members"]] == ["m-baseline", "m-legacy", "m-modular"]
    run = wait_run_ends(run)
    assert run.status == "done", run.error
    for s in JudgeScore.objects.filter(run=run):
        votes = s.detail["votes"]
        assert [v["member"] for v in votes] == ["m-baseline", "m-legacy", "m-modular"]
        # the baseline's weight 1.0 beats the legacy's 0.5 and the modular's 0
        assert s.value == votes[0]["label"] or votes[0]["status"] != "ok"
    report = run_file(run, "report.txt").read_text()
    assert re.search(r"\| label weighted ensemble \(m-baseline, m-legacy, m-modular\) \| \d\.\d{3} \|", report)


@pytestmark_worker
def test_run_judge_ensemble_weighted_from_the_command_line(celery_worker_session, make_study, make_judge,
                                                           fake_server):
    from django.core.management import CommandError

    study = make_study("aqua-003")
    make_judge("c-baseline", endpoint=fake_server.base_url, method="label")
    make_judge("c-legacy", endpoint=fake_server.base_url, method="legacy")
    out = StringIO()
    call_command("run_judge", "--study", study.slug, "--judge", "c-baseline", "--judge", "c-legacy",
                 "--ensemble", "weighted", "--weights", "2,1", "--wait", "--interval", "0.2", "--timeout", "60",
                 stdout=out)
    text = out.getvalue()
    assert "weighted ensemble ensemble-c-baseline-c-legacy: members c-baseline, c-legacy; weights [2.0, 1.0]" in text
    from judges.models import JudgeRun

    run = JudgeRun.objects.get(config__name="ensemble-c-baseline-c-legacy")
    assert run.status == "done" and run.n_scored == 6
    # weight 2 against 1: the baseline's label always wins where it gave one
    for s in JudgeScore.objects.filter(run=run):
        assert s.value == s.detail["votes"][0]["label"]
    with pytest.raises(CommandError, match="go with --ensemble weighted"):
        call_command("run_judge", "--study", study.slug, "--judge", "c-baseline", "--judge", "c-legacy")
    with pytest.raises(CommandError, match="no judge named nobody"):
        call_command("run_judge", "--study", study.slug, "--judge", "nobody", "--ensemble", "weighted")
    with pytest.raises(CommandError, match="weights"):
        call_command("run_judge", "--study", study.slug, "--judge", "c-baseline", "--ensemble", "weighted",
                     "--weights", "x")


def test_gold_page_counts_missing_and_unparsed_as_wrong(db, make_study, make_judge, make_run, client_for,
                                                        researcher):
    study = make_study("aqua-003", researchers=[researcher])
    preds = {"aq-001": "TP", "aq-002": ("", "unparsed", {}), "aq-003": "FP3", "aq-004": "FP2", "aq-005": "FP2"}
    make_run(study, make_judge("aqua-partial", method="label"), {(k, 0, "label"): v for k, v in preds.items()})
    html = client_for(researcher).get(f"/judges/studies/{study.slug}/gold/").content.decode()
    # aq-006 has no prediction, aq-002 none readable: 3 of 6 right
    assert "<td>0.500</td>" in html and "<td>1 / 1</td>" in html


@pytestmark_worker
def test_an_ensemble_served_from_the_cache_is_priced_at_what_its_calls_would_have_cost(
        celery_worker_session, make_study, make_judge, fake_server):
    study = make_study("aqua-003")
    cached = {"method_options": {"use_cache": True}, "sampling": {"temperature": 0, "max_tokens": 128, "seed": 3}}
    member = make_judge("k-baseline", endpoint=fake_server.base_url, method="label", **cached)
    solo = wait_run_ends(judge_run_start(study=study, judge=member))
    assert solo.status == "done" and solo.cost_usd > 0
    sent = fake_server.stats().completion_requests
    ens = make_judge("k-vote", endpoint=fake_server.base_url, method="label",
                     method_options={"ensemble": "weighted", "members": ["k-baseline"], "weights": [1],
                                     "use_cache": True})
    run = wait_run_ends(judge_run_start(study=study, judge=ens))
    assert run.status == "done", run.error
    assert fake_server.stats().completion_requests == sent  # every member call came from the cache
    assert run.cost_usd == 0
    solo_cost = _figures(run_file(solo, "report.txt").read_text())[-1]
    assert solo_cost != "$0.00" and _figures(run_file(run, "report.txt").read_text())[-1] == solo_cost
