"""load_demo: a simulated study per preset with ratings, judge runs and a release, room left for
the demo annotators, and nothing new on a second run."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.db.models import Count, Q

from annotation.datasets import FORMATS
from annotation.demo import AGENT_SLUG
from annotation.demo_languages import SLUG as LANGUAGES
from annotation.models import DatasetRelease, Rating, Study
from annotation.services.assignments import assignment_next
from annotation.simulation.items import COMPARE_PRESETS, PRESETS
from judges.models import JudgeRun
from tests.commands.lived_in import fresh_demo  # noqa: F401  (loaded once for the module)

pytestmark = pytest.mark.django_db


def test_load_demo_builds_full_studies_once(fresh_demo):  # noqa: F811
    studies = {s.slug: s for s in Study.objects.filter(slug__startswith="demo-").exclude(slug__in=[LANGUAGES, AGENT_SLUG])}
    assert set(studies) == {f"demo-{p}" for p in PRESETS + COMPARE_PRESETS}
    languages = Study.objects.get(slug=LANGUAGES)
    assert languages.language == "de" and languages.status == "open"
    assert languages.phases["instructions"]["check"][0]["key"] == "punkte"
    assert any("\u0600" <= ch <= "\u06ff" for ch in languages.items.get(external_id="ar-001").context)
    annotator = get_user_model().objects.get(username="annotator")
    for study in studies.values():
        assert Rating.objects.filter(assignment__study=study).count() > 0
        runs = JudgeRun.objects.filter(study=study)
        methods = sorted(r.config.get("method") for r in runs)
        assert all(r.status == "done" for r in runs), [(r.name, r.status, r.error) for r in runs]
        asked = [r for r in runs if r.config.get("method") != "jury"]  # a jury asks no model
        assert all(r.estimate["calls"] > 0 and r.cost_usd <= r.cost_cap_usd for r in asked)  # estimated, capped
        if study.slug == "demo-compare-pairwise":  # judges answer the raters' own pairwise question
            assert methods.count("pairwise") == 2 and all(
                r.config["method_options"].get("key") == "preference" for r in runs if r.config["method"] == "pairwise")
        if study.slug != "demo-compare-ranking":
            assert methods.count("jury") == 1  # the jury of the first two judges
        if study.slug not in ("demo-aqua-003", "demo-compare-ranking"):
            assert "geval" in methods  # a judge that states a distribution: calibration
        if study.slug == "demo-rrgen-001":
            assert "pairwise" in methods
        if study.slug == "demo-rrgen-001":
            assert study.routing.state["comparisons"] and study.status == "open"  # routing on, study kept open
        assert sorted(DatasetRelease.objects.filter(study=study, status="ready").values_list("format", flat=True)) \
            == sorted(FORMATS)  # every format, hf and the items, consensus and raters tables included
        assert assignment_next(study=study, rater=annotator) is not None, f"{study.slug}: nothing left to rate"
    agent = Study.objects.get(slug=AGENT_SLUG)  # trajectories rated per run and per step, by raters and judges
    assert agent.items.filter(outputs__kind="trajectory").exists()
    assert Rating.objects.filter(assignment__study=agent, criterion__startswith="call_needed@").exists()
    agent_runs = JudgeRun.objects.filter(study=agent).order_by("pk")
    assert [(r.status, r.config["method_options"].get("steps")) for r in agent_runs] == [
        ("done", "calls"), ("done", "structured")], [(r.name, r.status, r.error) for r in agent_runs]
    assert assignment_next(study=agent, rater=annotator) is not None
    for slug, policy in (("policy-adaptive-redundancy", "adaptive_redundancy"), ("policy-active-pairs", "active_pairs"),
                         ("policy-active-inference", "active_inference")):
        study = Study.objects.get(slug=slug)  # a study with each sampling policy, open for the demo annotators
        assert study.sampling_policy["name"] == policy and study.status == "open"
        if policy == "active_inference":  # three judges scored it and the pilot is drawn: only its chosen items are served
            assert JudgeRun.objects.filter(study=study, status="done").count() == 3
            assert study.items.filter(sampling_probability__isnull=False).count() == 6
            if not study.items.filter(slots_wanted=1).exists():
                continue
        assert assignment_next(study=study, rater=annotator) is not None
    traffic = Study.objects.get(slug="agent-traffic")  # OTLP traffic admitted by the study's sampling rule
    assert traffic.trace_sampling == {"rate": 0.25, "flags": ["unacceptable"]} and traffic.status == "open"
    admitted = {i.metadata["sampling"]["rule"] for i in traffic.items.all()}
    assert admitted == {"flagged", "random"} and assignment_next(study=traffic, rater=annotator) is not None
    crowd = studies["demo-compare-pairwise"]
    assert crowd.training_pass_mark == 0.5 and crowd.items.filter(is_training=True).count() == 2
    assert crowd.crowd_links.filter(provider="prolific", revoked_at__isnull=True).exists()
    first = assignment_next(study=crowd, rater=get_user_model().objects.get(username="annotator2"))
    assert first.item.is_training  # a demo annotator meets the training first
    from annotation.services.phases import phase_state

    annotator3 = get_user_model().objects.get(username="annotator3")
    assert phase_state(study=crowd, rater=annotator3).state == "consent"  # and on the page, consent before it
    assert crowd.phases["attention_policy"]["reject_after_failed"] == 2
    counts = (Study.objects.count(), Rating.objects.count(), JudgeRun.objects.count())
    call_command("load_demo", stdout=io.StringIO())
    assert (Study.objects.count(), Rating.objects.count(), JudgeRun.objects.count()) == counts
    assert "researcher" in fresh_demo and "demo-rrgen-001" in fresh_demo


def test_the_demo_report_shows_every_trust_section(fresh_demo, client):  # noqa: F811
    """A fresh demo's report: calibration, bias-corrected scores with items only judges scored, the jury,
    pairwise position bias and strengths."""
    from django.urls import reverse

    client.force_login(get_user_model().objects.get(username="researcher"))
    data = client.get(reverse("report", args=["demo-rrgen-001"]), {"download": "json"}).json()
    trust = data["sections"]["Trusting the judges"]
    fluency = trust["criteria"]["fluency"]
    geval = next(r for r in fluency["runs"] if r.get("calibration"))
    assert geval["calibration"]["n"] > 0 and geval["calibration"]["ece"] is not None
    estimates = next(r["systems"] for r in fluency["runs"] if r.get("systems"))
    assert all(e["ppi_plus"]["mean"] is not None for e in estimates.values())  # items only judges scored
    assert trust["pairwise"] and trust["pairwise"][0]["position"]["n"] > 0
    judges = data["sections"]["Judges vs humans"]["criteria"]["fluency"]["judges"]
    assert any(name.startswith("rrgen-001-jury") for name in judges)


def test_the_demo_crowd_study_splits_its_report_by_the_participants_answers(fresh_demo, client):  # noqa: F811
    """The crowd study's simulated participants answered its questionnaires: the report's facets show
    agreement and system means per answer, and the answers download as a table."""
    from django.urls import reverse

    client.force_login(get_user_model().objects.get(username="researcher"))
    data = client.get(reverse("report", args=["demo-compare-pairwise"]), {"download": "json"}).json()
    native = data["sections"]["By participants' answers"]["pre.native_english"]
    assert set(native) == {"yes", "no"} and native["yes"]["n_raters"] == 2 and native["no"]["n_raters"] == 1
    assert native["yes"]["criteria"]["helpfulness"]["alpha"]["value"] is not None
    assert native["yes"]["criteria"]["helpfulness"]["system_means"]
    page = client.get(reverse("report", args=["demo-compare-pairwise"])).content.decode()
    assert 'data-facet="pre.native_english"' in page


def _simulated_ratings(study: Study) -> list[tuple]:
    """The simulated raters' ratings, by names and places only (no ids): item, output, rater (by number),
    criterion, value, the order the outputs were shown in."""
    from annotation.models import Output

    position = dict(Output.objects.filter(item__study=study).values_list("id", "position"))

    def named(value):  # a comparative answer names outputs by id: by position here
        if not isinstance(value, dict):
            return value
        return {k: ([position[i] for i in v] if k == "shown" else position[v] if k in ("winner", "best", "worst")
                    and isinstance(v, int) else v) for k, v in value.items()}

    rows = (Rating.objects.filter(assignment__study=study, assignment__rater__username__contains="-rater-")
            .values_list("assignment__item__external_id", "output__position", "assignment__rater__username",
                         "criterion", "value", "assignment__permutation", "assignment__time_on_task_ms"))
    return sorted((item, -1 if pos is None else pos, user.rsplit("-", 1)[1], key,
                   json.dumps(named(value), sort_keys=True), tuple(perm), ms)
                  for item, pos, user, key, value, perm, ms in rows)


@pytest.mark.parametrize("preset", ["rrgen-001", "compare-pairwise"])
def test_a_demo_study_is_simulated_the_same_with_other_ids_and_another_secret_key(fresh_demo, preset,  # noqa: F811
                                                                                   settings):
    """Two load_demos gave different ratings (the items' random order, the raters' starting points and the
    outputs' order came from PostgreSQL's random(), the ids and the secret key): the demo's study simulated
    again, in a database whose ids have moved on and under another key, has the very same ratings."""
    from annotation.demo import demo_simulation
    from annotation.simulation.study import simulated_study_create

    settings.SECRET_KEY = "another machine's key"
    seed = (PRESETS + COMPARE_PRESETS).index(preset)
    admin = get_user_model().objects.get(username="admin")
    again = simulated_study_create(slug=f"again-{preset}", admin=admin, rater_prefix="again-rater",
                                   **demo_simulation(preset, seed))
    demo = _simulated_ratings(Study.objects.get(slug=f"demo-{preset}"))
    assert len(demo) > 100
    assert _simulated_ratings(again.study) == demo


def _unrated_looked_at_twice(study: Study, unrated) -> dict:
    """For a failure: the unrated items by the count, each item's submitted assignments, and what the NOT EXISTS
    query counts with PostgreSQL's index scans off and on."""
    from django.db import connection

    counted = dict(study.items.annotate(n=Count("assignments", filter=Q(assignments__status="submitted")))
                   .values_list("external_id", "n"))
    anti = study.items.exclude(assignments__status="submitted")
    sql, params = anti.query.sql_with_params()
    with connection.cursor() as cursor:
        cursor.execute("SAVEPOINT look")
        for setting in ("enable_indexonlyscan", "enable_indexscan", "enable_bitmapscan"):
            cursor.execute(f"SET LOCAL {setting} = off")
        cursor.execute(f"SELECT count(*) FROM ({sql}) q", params)
        without_indexes = cursor.fetchone()[0]
        cursor.execute("ROLLBACK TO SAVEPOINT look")
    return {"unrated": list(unrated.values_list("external_id", flat=True)), "submitted per item": counted,
            "NOT EXISTS": anti.count(), "NOT EXISTS without index scans": without_indexes}


ROOT = Path(__file__).resolve().parents[2]
NUMBER_WORDS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5}


def test_the_readme_states_the_demos_own_figures(fresh_demo):  # noqa: F811
    """Every figure the README's tour quotes of the demo is the freshly loaded demo's."""
    from annotation.selectors import study_progress
    from judges.models import JudgeScore

    text = " ".join((ROOT / "README.md").read_text().split())
    said = re.search(r"In this one (\d+) simulated raters rated the first (\d+) of its (\d+) items \(the last (\d+) "
                     r"only the judges scored.*?each item wants (\d+) raters, so its progress page reads (\d+) of "
                     r"(\d+) ratings and no item complete", text)
    assert said, "the README's tour no longer states the RRGen demo's figures where this test reads them"
    raters, rated, n_items, judged_only, rpi, submitted, places = map(int, said.groups())
    study = Study.objects.get(slug="demo-rrgen-001")
    progress = study_progress(study)
    done = study.assignments.filter(status="submitted")
    assert raters == done.values("rater").distinct().count()
    assert rated == done.values("item").distinct().count()
    assert (n_items, rpi, submitted, places) == (progress.items, study.raters_per_item, progress.submitted,
                                                  progress.slots)
    assert progress.items_complete == 0 and n_items - rated == judged_only
    # Counted per item, not by NOT EXISTS: in full runs (embedded PostgreSQL 16.2, the demo restored from its
    # snapshot) that anti-join's index plan counted three unrated items as rated, which the same query without
    # index scans and these counts did not (tests/demo_snapshot.py; docs/reference/test-suite.md).
    unrated = study.items.annotate(n=Count("assignments", filter=Q(assignments__status="submitted"))).filter(n=0)
    assert unrated.count() == judged_only, _unrated_looked_at_twice(study, unrated)
    assert all(JudgeScore.objects.filter(item=i).exists() for i in unrated)
    languages = re.search(r"German interface\* has no ratings on purpose: its (\d+) items", text)
    study = Study.objects.get(slug=LANGUAGES)
    assert languages and int(languages.group(1)) == study.items.count()
    assert not Rating.objects.filter(assignment__study=study).exists()
    assert "every report below is full" not in text


def test_the_screenshots_show_what_the_demo_shows(fresh_demo, client):  # noqa: F811
    """scripts/screenshots.py writes what its screenshots show beside them; the demo must still show it
    (else take them again), and the README's words about them must say the same."""
    from django.urls import reverse

    shown = json.loads((ROOT / "docs" / "img" / "screenshots.json").read_text())
    client.force_login(get_user_model().objects.get(username="researcher"))
    data = client.get(reverse("report", args=[shown["report"]["study"]]), {"download": "json"}).json()
    assert shown["report"]["verdicts"] == [r["verdict"] for r in data["summary"]["reliability"]]
    assert shown["report"]["raters"] == len(data["raters"])
    # the RRGen demo's gold is a decision per output: every rater has a gold accuracy, and only raters
    # planted to answer badly (a spammer, one strict by far) can fall below the bar that "what to do next" names
    gold = {name: r["gold_accuracy"] for name, r in data["raters"].items()}
    assert all(g is not None and g > 0 for g in gold.values()), gold
    low = {r["rater"] for r in data["summary"]["next"]["raters_to_check"] if any("gold" in w for w in r["reasons"])}
    assert low <= {"demo-rater-4", "demo-rater-5"} and len(low) < len(gold), gold
    study = Study.objects.get(slug=shown["workspace"]["study"])
    first = study.items.order_by("id").first()
    assert shown["workspace"]["responses"] == first.outputs.count()
    alt = re.search(r"workspace: a hotel review as context, (\w+) responses in tabs", (ROOT / "README.md").read_text())
    assert alt and NUMBER_WORDS[alt.group(1)] == shown["workspace"]["responses"]


def _per_step_rows(html: str) -> dict[tuple[str, str, str], tuple[str, str, str]]:
    """(criterion, unit, judge) -> (n, agreement or Pearson, MAE) as the report's per-step tables show them."""
    rows = {}
    for block in html.split('data-testid="judges-per-step"')[1:]:
        criterion = re.search(r"<h3>(.*?) <span", block).group(1)
        table = block.split("</table>")[0]
        for unit, judge, n, figure, mae in re.findall(
                r"<tr><td>(.*?)</td><td>(.*?)</td><td>(\d+)</td>\s*<td>(.*?)</td>\s*<td>(.*?)</td>", table, re.S):
            rows[(criterion, unit, judge)] = (n, figure.strip(), mae.strip())
    return rows


def test_the_demo_agent_study_report_compares_judges_with_humans_per_step(fresh_demo, client):  # noqa: F811
    """The agent study's judges (one call per step, one structured call per criterion) against its simulated
    raters: each tool call's "was it needed" and the per-trajectory share of needed calls, with figures that an
    independent computation from the stored ratings and scores gives (scipy, krippendorff)."""
    from collections import defaultdict

    import krippendorff
    import numpy as np
    from django.urls import reverse
    from scipy import stats

    from annotation.models import Output
    from annotation.simulation.agent import AGENT_RUBRIC
    from judges.models import JudgeScore

    study = Study.objects.get(slug=AGENT_SLUG)
    client.force_login(get_user_model().objects.get(username="researcher"))
    html = client.get(reverse("report", args=[AGENT_SLUG])).content.decode()
    data = client.get(reverse("report", args=[AGENT_SLUG]), {"download": "json"}).json()
    shown = _per_step_rows(html)
    name = {c["key"]: c["name"] for c in AGENT_RUBRIC["criteria"]}["call_needed"]
    truth = {(o.pk, k.split("@")[1]): v for o in Output.objects.filter(item__study=study)
             for k, v in o.metadata["truth"].items() if k.startswith("call_needed@")}
    # the humans' answers per (output, step), and per output each rater's share of calls found needed
    humans: dict[tuple[int, str], dict[int, str]] = defaultdict(dict)
    for rater, output, criterion, value in Rating.objects.filter(
            assignment__study=study, assignment__status="submitted", criterion__startswith="call_needed@"
    ).values_list("assignment__rater_id", "output_id", "criterion", "value"):
        humans[(output, criterion.split("@")[1])][rater] = value
    raters = sorted({r for answers in humans.values() for r in answers})
    units = sorted(humans)
    majority = {}
    for unit, answers in humans.items():
        votes = list(answers.values())
        top = max(set(votes), key=votes.count)
        if votes.count(top) * 2 > len(votes):
            majority[unit] = top
    shares: dict[int, dict[int, list[float]]] = defaultdict(lambda: defaultdict(list))
    for (output, _step), answers in humans.items():
        for rater, value in answers.items():
            shares[output][rater].append(value == "yes")
    human_share = {o: np.mean([np.mean(v) for v in by_rater.values()]) for o, by_rater in shares.items()}
    for run in JudgeRun.objects.filter(study=study):
        label = f"{run.name} (run {run.pk})"
        judged = {(o, c.split("@")[1]): v for o, c, v in JudgeScore.objects.filter(
            run=run, status="scored", criterion__startswith="call_needed@").values_list("output_id", "criterion", "value")}
        assert len(judged) > 0.8 * len(units)
        # answered from the simulation's planted truth (not the fake server's coin): it mostly matches
        assert np.mean([judged[u] == truth[u] for u in judged]) > 0.8
        both = [u for u in units if u in judged and u in majority]
        agreement = np.mean([judged[u] == majority[u] for u in both])
        n, figure, _ = shown[(name, "each tool call", label)]
        assert (int(n), figure) == (len(both), f"{agreement:.3f}"), label
        # Krippendorff's alpha of the humans with the judge as one more rater, on the steps it judged
        rows = [u for u in units if u in judged]
        coded = [[{"yes": 0, "no": 1}.get(humans[u].get(r), np.nan) for u in rows] for r in raters]
        coded.append([{"yes": 0, "no": 1}[judged[u]] for u in rows])
        reported = data["sections"]["Judges vs humans"]["steps"]["per_step"]["call_needed"]["tool_call"]
        assert reported["judges"][label]["alpha"]["with_judge"]["value"] == pytest.approx(
            krippendorff.alpha(reliability_data=np.array(coded, dtype=float), level_of_measurement="nominal"))
        # per trajectory: the share of its calls found needed, the judge's against the humans' mean
        judge_share: dict[int, list[float]] = defaultdict(list)
        for (output, _step), value in judged.items():
            judge_share[output].append(value == "yes")
        outputs = sorted(o for o in human_share if o in judge_share)
        j = np.array([np.mean(judge_share[o]) for o in outputs])
        h = np.array([human_share[o] for o in outputs])
        n, figure, mae = shown[(name, "per trajectory", label)]
        assert (int(n), figure, mae) == (len(outputs), f"{stats.pearsonr(j, h).statistic:.3f}",
                                         f"{np.mean(np.abs(j - h)):.3f}"), label
    assert {k for k in shown if k[1] == "each assistant"}  # the turns' question is compared per step too
    assert "\u2014" not in "".join(f for row in shown.values() for f in row[:2])  # no "—" where a figure belongs
