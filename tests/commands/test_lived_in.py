"""Every management command of the project, with the arguments a user would give, on the demo database
after some use (tests/commands/lived_in.py: an edited stored rubric, a removed member, an erased
participant, a closed study, a stored judge), and what each prints checked. Statistics are checked
against a reference computed here from the same rows (krippendorff, scikit-learn, pandas).

The demo is loaded once for the module; each test's writes are rolled back, except the last test's
(simulate_study must commit), after which the module's teardown empties the database anyway."""

from __future__ import annotations

import csv
import io
import json
from collections import Counter
from pathlib import Path

import pandas as pd
import pytest
from django.core.management import CommandError, call_command

from tests.commands.lived_in import (CLOSED_STUDY, EDITED_DESCRIPTION, EDITED_RUBRIC, ERASED_IN, REMOVED_FROM,
                                     STORED_JUDGE, lived_in)  # noqa: F401  (lived_in: the module's demo)

pytestmark = pytest.mark.django_db

PEERS = Path(__file__).resolve().parent.parent / "fixtures" / "peers"
ALL_COMMANDS = {"agreement", "comparisons", "consensus", "export_study", "gold_eval", "import_items", "import_peer", "plan_study",
                "study_report", "estimate", "judge_request", "load_demo", "load_judge", "parse_judge_output",
                "run_judge", "simulate_study", "load_rubric", "routes", "simulate_policy", "simulate_adaptive",
                "draw_humans"}


def run(*args) -> str:
    out = io.StringIO()
    call_command(*args, stdout=out, stderr=io.StringIO())
    return out.getvalue()


def export_rows(slug: str, tmp_path: Path) -> tuple[Path, list[dict]]:
    path = tmp_path / f"{slug}.csv"
    call_command("export_study", slug, "--format", "csv", "--out", str(path), stderr=io.StringIO())
    return path, list(csv.DictReader(path.open(encoding="utf-8")))


def test_every_command_of_the_project_is_tested_here():
    from django.core.management import get_commands

    ours = {name for name, app in get_commands().items() if app.split(".")[0] in ("annotation", "judges", "rubrics",
                                                                                   "config")}
    assert ours == ALL_COMMANDS, "a new command needs its lived-in test here"


def test_load_demo_printed_the_studies_and_accounts_and_a_second_run_adds_nothing(lived_in):
    from annotation.models import Rating, Study

    assert lived_in.load_demo_s > 0
    for slug in ("demo-rrgen-001", "demo-codegen-002", "demo-compare-pairwise", CLOSED_STUDY):
        assert slug in lived_in.demo_output
    assert "admin       password: admin-demo" in lived_in.demo_output
    from judges.models import JudgeRun

    runs = JudgeRun.objects.filter(study__slug__startswith="demo-")
    assert runs.count() >= 20 and all(r.status == "done" for r in runs), [
        (r.study.slug, r.config.get("name"), r.status, r.error[:200]) for r in runs if r.status != "done"]
    before = (Study.objects.count(), Rating.objects.count())
    out = run("load_demo")
    assert (Study.objects.count(), Rating.objects.count()) == before
    assert f"{CLOSED_STUDY:<22}  16 items  Closed" in out  # the demo's own study, left as the admin closed it


def test_judge_request_reads_the_stored_edited_rubric(lived_in):
    """The crash this fixes: `'RubricVersion' object is not callable` on any stored rubric."""
    out = run("judge_request", str(lived_in.judge_file), "--rubric", EDITED_RUBRIC, "--json")
    [request] = json.loads(out)
    assert request["url"] == "http://127.0.0.1:8001/v1/chat/completions" and request["judge"] == STORED_JUDGE
    prompt = json.dumps(request["json"]["messages"])
    assert EDITED_DESCRIPTION in prompt  # the latest stored version, not the preset file
    out = run("judge_request", str(lived_in.judge_file), "--rubric", "codegen-002")  # a stored preset, unedited
    assert out.startswith(f"# 1/1 judge {STORED_JUDGE} (provider vllm)\nPOST http://127.0.0.1:8001/v1/chat/completions")
    with pytest.raises(CommandError, match="unknown rubric 'rrgen-01'; known: agent-trajectories, aqua-003, codegen-002"):
        run("judge_request", str(lived_in.judge_file), "--rubric", "rrgen-01")


def test_parse_judge_output_reads_the_stored_rubric(lived_in, tmp_path):
    answer = tmp_path / "answer.json"
    answer.write_text(json.dumps({"semantic_relevance": 5, "fluency": 6, "sentiment_appropriateness": 4,
                                  "domain_accuracy": 9, "decision": "ACCEPT"}))
    out = json.loads(run("parse_judge_output", "--rubric", EDITED_RUBRIC, "--method", "all_in_one", str(answer)))
    assert out["fluency"] == {"value": 6, "status": "parsed", "detail": "JSON field 'fluency'"}
    assert out["decision"]["value"] == "ACCEPT"
    assert out["domain_accuracy"]["status"] == "unparsed" and out["domain_accuracy"]["value"] is None  # 9 > 7


def test_load_rubric_adds_a_version_after_the_edit_and_keeps_stored_ones(lived_in, tmp_path):
    from rubrics.selectors import rubric_latest_version

    from rubrics.loader import load_preset

    preset = Path("rubrics/presets/rrgen-001.yaml").resolve()
    n = len(load_preset("rrgen-001")["criteria"])
    assert run("load_rubric", str(preset)).strip() == f"rrgen-001: unchanged, already stored as version 1 ({n} criteria)"
    edited = tmp_path / "rrgen.yaml"
    edited.write_text(preset.read_text().replace("name: RRGen response evaluation", "name: RRGen, third edition", 1))
    out = run("load_rubric", str(edited)).strip()
    assert out == f"rrgen-001: created version {lived_in.rubric_version + 1} ({n} criteria)"
    assert rubric_latest_version("rrgen-001").definition["name"] == "RRGen, third edition"


def test_load_judge_updates_the_stored_judge(lived_in, tmp_path):
    from judges.models import JudgeConfig

    path = tmp_path / "judge.yaml"
    path.write_text(lived_in.judge_file.read_text().replace("Qwen/Qwen3-8B", "Qwen/Qwen3-14B"))
    assert run("load_judge", str(path)).strip() == f"updated judge {STORED_JUDGE} (vllm Qwen/Qwen3-14B, method all_in_one)"
    assert JudgeConfig.objects.get(name=STORED_JUDGE).model == "Qwen/Qwen3-14B"
    assert JudgeConfig.objects.filter(name="hosted-gpt-5-mini").exists()  # the demo's own hosted judges stay


def test_run_judge_dry_run_start_and_cap_on_open_and_closed_studies(lived_in):
    from annotation.models import Output
    from judges.models import JudgeRun

    out = run("run_judge", "--study", "demo-rrgen-001", "--judge", STORED_JUDGE, "--dry-run")
    assert out.startswith(f"dry run of {STORED_JUDGE} on demo-rrgen-001 (16 items): nothing is sent\n  calls: 48\n")
    before = JudgeRun.objects.count()
    out = run("run_judge", "--study", CLOSED_STUDY, "--judge", STORED_JUDGE)  # judging a closed study's outputs
    run_ = JudgeRun.objects.latest("pk")
    assert JudgeRun.objects.count() == before + 1 and run_.study.slug == CLOSED_STUDY
    n_outputs = Output.objects.filter(item__study__slug=CLOSED_STUDY).count()
    assert f"run {run_.pk}: {run_.n_expected} slots ({n_outputs} outputs x correctness, clarity" in out
    with pytest.raises(CommandError, match=f"judge {STORED_JUDGE} already has a run in progress on this study"):
        run("run_judge", "--study", CLOSED_STUDY, "--judge", STORED_JUDGE)
    done = JudgeRun.objects.filter(study__slug="demo-rrgen-001", status="done").first()
    assert run("run_judge", "--run", str(done.pk), "--max-cost-usd", "0.5").strip() == f"run {done.pk}: cap $0.5000; done"
    assert JudgeRun.objects.get(pk=done.pk).cost_cap_usd == 0.5
    with pytest.raises(CommandError, match="no judge named 'nope' \\(add one with load_judge FILE\\)"):
        run("run_judge", "--study", "demo-rrgen-001", "--judge", "nope")


def test_import_items_into_an_open_and_a_closed_demo_study(lived_in, tmp_path):
    from annotation.models import Study

    items = tmp_path / "items.jsonl"
    items.write_text("".join(json.dumps({"id": f"new-{n}", "context": f"Review {n}: great stay.",
                                         "outputs": [{"system": s, "content": f"Thank you ({s})"} for s in "abc"]})
                             + "\n" for n in range(2)))
    for slug in ("demo-rrgen-001", CLOSED_STUDY):
        before = Study.objects.get(slug=slug).items.count()
        assert run("import_items", str(items), "--study", slug).strip() == f"{slug}: imported 2 items"
        assert Study.objects.get(slug=slug).items.count() == before + 2
    with pytest.raises(CommandError, match="new-0"):  # the same ids again: refused whole
        run("import_items", str(items), "--study", "demo-rrgen-001")


def test_import_peer_creates_a_study_on_the_stored_rubric(lived_in):
    """The wall this removes: a study to be filled from a peer's export needed a placeholder item."""
    from annotation.models import Rating, Study

    out = run("import_peer", "--create-study", "Hotel replies from Label Studio", "--rubric", EDITED_RUBRIC,
              "--from", "label-studio", str(PEERS / "label_studio" / "export.json"),
              "--mapping", str(PEERS / "label_studio.mapping.yaml"))
    study = Study.objects.get(slug="hotel-replies-from-label-studio")
    assert study.status == "paused" and study.rubric_version.version == lived_in.rubric_version
    assert out.splitlines()[0] == (f"created study {study.slug} (paused; resume it when raters may start) on rubric "
                                   f"rrgen-001 v{lived_in.rubric_version}")
    assert "imported 3 items (9 outputs; 0 already in the study), 6 annotations by 2 raters" in out
    assert Rating.objects.filter(assignment__study=study).count() == 90  # 6 annotations x 3 responses x 5 criteria
    assert sorted(study.members.values_list("user__username", flat=True)) == ["ls.2", "ls.3"]


def test_import_peer_into_an_open_demo_study_and_refusals(lived_in):
    from annotation.models import Study

    potato = ("--from", "potato", str(PEERS / "potato"), "--mapping", str(PEERS / "potato.mapping.yaml"))
    before = Study.objects.get(slug="demo-rrgen-001").items.count()
    out = run("import_peer", "--study", "demo-rrgen-001", *potato)
    assert "imported 3 items (9 outputs; 0 already in the study), 6 annotations by 2 raters" in out
    assert Study.objects.get(slug="demo-rrgen-001").items.count() == before + 3
    from annotation.services.studies import study_set_status

    closed = study_set_status(study=Study.objects.get(slug="demo-languages"), status="closed")  # an rrgen-001 study
    with pytest.raises(CommandError, match="study demo-languages: status: open the study first"):
        run("import_peer", "--study", closed.slug, *potato)
    with pytest.raises(CommandError, match="--create-study: slug: a study 'demo-rrgen-001' already exists"):
        run("import_peer", "--create-study", "demo-rrgen-001", "--rubric", "rrgen-001", *potato)
    with pytest.raises(CommandError, match="--create-study needs --rubric SLUG"):
        run("import_peer", "--create-study", "New", *potato)
    with pytest.raises(CommandError, match="--rubric and --open go with --create-study"):
        run("import_peer", "--study", "demo-rrgen-001", "--open", *potato)


def test_export_study_keeps_the_erased_participant_pseudonymous(lived_in, tmp_path):
    path, rows = export_rows(ERASED_IN, tmp_path)
    raters = {r["rater"] for r in rows}
    assert lived_in.erased in raters and not raters & {"demo-rater-1"}  # the first simulated rater was erased
    ls = tmp_path / "tasks.json"
    call_command("export_study", ERASED_IN, "--format", "label-studio", "--out", str(ls), stderr=io.StringIO())
    tasks = json.loads(ls.read_text())
    assert len(tasks) == 16 and sum(1 for t in tasks if t["predictions"]) > 8  # the demo's judges' scores
    assert (tmp_path / "tasks.labeling_config.xml").read_text().startswith("<View>")


def test_agreement_on_an_export_matches_krippendorff(lived_in, tmp_path):
    import krippendorff

    path, rows = export_rows("demo-rrgen-001", tmp_path)
    report = json.loads(run("agreement", str(path), "--json"))
    fluency = pd.DataFrame([r for r in rows if r["criterion"] == "fluency"])
    fluency["unit"] = fluency["item"] + "#" + fluency["output"]
    matrix = fluency.pivot(index="rater", columns="unit", values="score").astype(float).to_numpy()
    expected = krippendorff.alpha(reliability_data=matrix, level_of_measurement="interval")
    assert report["criteria"]["fluency"]["krippendorff_alpha"]["interval"] == pytest.approx(expected)


def test_consensus_models_the_raters_of_a_study_with_an_erased_participant(lived_in, tmp_path):
    _, rows = export_rows(ERASED_IN, tmp_path)
    rated = [r for r in rows if r["criterion"] == "technical_quality" and r["is_attention_check"] == "false"]
    data = json.loads(run("consensus", ERASED_IN, "--criterion", "technical_quality", "--json"))
    [fit] = data["criteria"]
    assert fit["method"] == "rater_effects" and fit["bias_sd"] >= 0 and fit["noise_sd"] > 0
    assert len(fit["units"]) == len({(r["item"], r["output"]) for r in rated})
    assert {r["rater"] for r in fit["raters"]} == {r["rater"] for r in rated} and lived_in.erased in {
        r["rater"] for r in fit["raters"]}  # the erased participant's ratings count, under the pseudonym
    _, labels = export_rows(REMOVED_FROM, tmp_path)
    out = run("consensus", REMOVED_FROM, "--method", "majority")
    n_outputs = len({(r["item"], r["output"]) for r in labels if r["is_attention_check"] == "false"})
    assert out.startswith(f"criterion label: majority (chosen with --method); {n_outputs} outputs, ")
    with pytest.raises(CommandError, match="--criterion 'fluency': not a categorical or numeric criterion"):
        run("consensus", REMOVED_FROM, "--criterion", "fluency")


def test_comparisons_on_the_demo_pairwise_answers(lived_in, tmp_path):
    from annotation.models import Output, Rating

    systems = dict(Output.objects.filter(item__study__slug="demo-compare-pairwise").values_list("pk", "system"))
    lines = ["item,rater,system_a,system_b,winner"]
    for r in Rating.objects.filter(assignment__study__slug="demo-compare-pairwise", criterion="preference"
                                   ).select_related("assignment__item", "assignment__rater"):
        a, b = (systems[pk] for pk in r.value["shown"])
        winner = systems.get(r.value.get("winner"), "tie")
        lines.append(f"{r.assignment.item.external_id},{r.assignment.rater.username},{a},{b},{winner}")
    path = tmp_path / "pairs.csv"
    path.write_text("\n".join(lines) + "\n")
    report = json.loads(run("comparisons", str(path), "--json"))
    assert report["kind"] == "pairwise" and len(lines) > 20
    for system, s in report["systems"].items():
        n = sum(1 for line in lines[1:] if system in line.split(",")[2:4])
        assert s["n"] == n
    assert sum(s["bt"] for s in report["systems"].values()) == pytest.approx(0, abs=1e-9)  # centred on 0
    assert sum(s["n"] for s in report["systems"].values()) == 2 * (len(lines) - 1)  # two systems per answer


def test_estimate_on_the_demo_judge_scores(lived_in, tmp_path):
    from judges.models import JudgeScore

    _, rows = export_rows("demo-rrgen-001", tmp_path)
    judge = {(s.item.external_id, s.output.system): s.score for s in JudgeScore.objects.filter(
        run__judge__name="demo-rrgen-001-judge-1", criterion="fluency", score__isnull=False).select_related("item", "output")}
    human = [(r["item"], r["system"], float(r["score"])) for r in rows if r["criterion"] == "fluency"]
    rated = {(i, s) for i, s, _ in human}
    lines = ["item,system,human,judge"] + [f"{i},{s},{h},{judge.get((i, s), '')}" for i, s, h in human]
    lines += [f"{i},{s},,{v}" for (i, s), v in judge.items() if (i, s) not in rated]  # items only the judge scored
    path = tmp_path / "judged.csv"
    path.write_text("\n".join(lines) + "\n")
    out = json.loads(run("estimate", str(path), "--json"))
    frame = pd.DataFrame(human, columns=["item", "system", "human"]).groupby(["system", "item"]).human.mean()
    for system, e in out.items():
        assert e["human_only"]["mean"] == pytest.approx(frame[system].mean())
        assert e["human_only"]["n"] == len(frame[system])
        assert e["judge_only"]["n"] == sum(1 for (_, s) in judge if s == system) > e["human_only"]["n"] - 1
        assert e["ppi_plus"]["mean"] is not None


def test_gold_eval_of_a_demo_judge_against_the_raters_majority(lived_in, tmp_path):
    from sklearn.metrics import accuracy_score

    from judges.models import JudgeScore

    _, rows = export_rows("demo-aqua-003", tmp_path)
    votes: dict[str, Counter] = {}
    for r in rows:
        votes.setdefault(r["item"], Counter())[r["value"]] += 1
    gold = {item: sorted(c.items(), key=lambda kv: (-kv[1], kv[0]))[0][0] for item, c in votes.items()}
    pred = {s.item.external_id: s.value for s in JudgeScore.objects.filter(
        run__judge__name="demo-aqua-003-judge-1", criterion="label").select_related("item") if isinstance(s.value, str)}
    (tmp_path / "gold.csv").write_text("id,label\n" + "".join(f"{i},{v}\n" for i, v in gold.items()))
    (tmp_path / "pred.csv").write_text("id,label\n" + "".join(f"{i},{v}\n" for i, v in pred.items()))
    report = json.loads(run("gold_eval", str(tmp_path / "gold.csv"), str(tmp_path / "pred.csv"), "--json"))
    ids = sorted(gold)
    assert report["n"] == len(ids) and report["missing"] == len(set(ids) - set(pred))
    assert report["accuracy"] == pytest.approx(accuracy_score([gold[i] for i in ids], [pred.get(i, "") for i in ids]))


def test_plan_study_from_a_closed_pilot_and_a_pairwise_pilot(lived_in):
    out = run("plan_study", "--pilot", CLOSED_STUDY, "--delta", "0.5")
    assert out.startswith(f"Pilot: study {CLOSED_STUDY}\nScores: two systems rated on the same items\n")
    assert "(from the pilot), icc" in out and "raters per output (from the pilot):" in out
    plan = json.loads(run("plan_study", "--pilot", CLOSED_STUDY, "--delta", "0.5", "--json"))
    assert plan["sources"]["sd"] == "pilot" and 0 < plan["scores"]["inputs"]["icc"] < 1
    # The pilot's closest pair may split evenly (the demo is fixed by its seeds, but a change of the simulation
    # may move it), and the command then asks for a win probability.
    from annotation.models import Study
    from annotation.planning.pilot import pilot_estimates

    pairwise = pilot_estimates(Study.objects.get(slug="demo-compare-pairwise"))["pairwise"]
    assert pairwise["judgements"] > 0 and pairwise["win_rate"] is not None
    if pairwise["reason"] is None:
        out = run("plan_study", "--pilot", "demo-compare-pairwise")
        assert "Comparisons: judgements per pair of systems" in out
        assert f"win probability {pairwise['win_rate']:.3f} (from the pilot) (observed for " in out
    else:
        with pytest.raises(CommandError, match="nothing to plan: .* the closest pair splits evenly"):
            run("plan_study", "--pilot", "demo-compare-pairwise")
    out = run("plan_study", "--pilot", "demo-compare-pairwise", "--win-prob", "0.6")
    assert f"win probability 0.600, ties {pairwise['tie_share']:.3f} (from the pilot)" in out


def test_study_report_of_a_closed_study_and_of_one_with_an_erased_participant(lived_in, tmp_path):
    from annotation.models import Study

    data = json.loads(run("study_report", CLOSED_STUDY, "--format", "json"))
    assert data["study"]["slug"] == CLOSED_STUDY and data["counts"]["ratings_analysed"] > 0
    out = tmp_path / "report.csv"
    call_command("study_report", ERASED_IN, "--format", "csv", "--out", str(out), stderr=io.StringIO())
    text = out.read_text()
    assert text.startswith("section,criterion,subject,statistic,value,ci_low,ci_high,reason\n")
    assert "technical_quality" in text and "demo-rater-1," not in text
    members = Study.objects.get(slug=REMOVED_FROM).members.filter(user__username=lived_in.removed)
    assert members.get().removed_at is not None  # the removed member's ratings stay in the report:
    report = json.loads(run("study_report", REMOVED_FROM, "--format", "json"))
    assert report["counts"]["ratings_analysed"] > 0


def test_simulate_adaptive_beside_the_demo_and_its_policy_studies(lived_in):
    # no database: the same numbers beside a loaded demo; the demo's policy studies are listed by load_demo
    assert "policy-adaptive-redundancy" in lived_in.demo_output and "policy-active-pairs" in lived_in.demo_output
    out = run("simulate_adaptive", "active_pairs", "--seeds", "1", "--systems", "5", "--budget", "400")
    assert out.startswith("1 seeds, 5 systems over 4 logits") and "random pairs" in out and "active pairs" in out


def test_draw_humans_predicts_for_any_study_and_draws_only_under_its_policy(lived_in):
    out = run("draw_humans", "--study", "policy-adaptive-redundancy", "--predict")
    assert "fewer human ratings than uniform sampling" in out or out.startswith("no prediction: ")
    with pytest.raises(CommandError, match="does not use the active_inference sampling policy"):
        run("draw_humans", "--study", "policy-adaptive-redundancy")


def test_routes_prints_the_route_inventory(lived_in):
    out = run("routes")
    assert out.splitlines()[0].startswith("|") and "/studies/<slug:slug>/report/" in out
    counts = dict(line.split(": ") for line in run("routes", "--counts").splitlines())
    assert all(int(v) >= 0 for v in counts.values()) and sum(int(v) for v in counts.values()) > 0


def test_simulate_policy_beside_the_demo_touches_no_study(lived_in):
    from annotation.models import Rating

    before = Rating.objects.count()
    out = run("simulate_policy", "--replications", "10", "--items", "200", "--budget", "20", "--correlations", "0.5",
              "--studies", "20", "--ratings", "30")
    assert "Active sampling: 10 studies per row" in out and "false 'significant'" in out
    assert Rating.objects.count() == before


@pytest.mark.django_db(transaction=True)
def test_simulate_study_beside_the_demo(lived_in):
    """Last in the module: the simulation's judge run must commit (it refuses to run inside a transaction)."""
    from annotation.models import Rating, Study

    from judges.models import JudgeRun

    try:
        out = run("simulate_study", "--preset", "rrgen-001", "--items", "4", "--raters", "2", "--judges", "1",
                  "--worker", "no", "--slug", "sim-lived-in")
    except CommandError:
        pytest.fail(str([(r.status, r.error) for r in JudgeRun.objects.filter(study__slug="sim-lived-in")]))
    study = Study.objects.get(slug="sim-lived-in")
    n = Rating.objects.filter(assignment__study=study).count()
    assert out.splitlines()[0] == (f"study sim-lived-in: 4 items, 2 raters (sim-rater-1, sim-rater-2), "
                                   f"8 submits, {n} ratings")
    assert ": done," in out.splitlines()[1]
    # The simulation answers as the preset's raters would, so it pins the preset's own version, not the edit.
    assert study.rubric_version.version == 1 < lived_in.rubric_version
    with pytest.raises(CommandError, match="a study 'sim-lived-in' already exists"):
        run("simulate_study", "--preset", "rrgen-001", "--slug", "sim-lived-in", "--judges", "0")
