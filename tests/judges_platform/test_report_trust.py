"""The "Trusting the judges" section: calibration, bias-corrected system scores and verbosity,
through the report page and its JSON, on a study whose humans rated only some items."""

from __future__ import annotations

import numpy as np
import pytest
from django.urls import reverse

from annotation.stats.calibration import calibration
from annotation.stats.ppi import estimate_system
from judges.models import JudgeScore
from tests.conftest import make_user
from tests.reports.factories import SYSTEMS, items_jsonl, rate_study

N_ITEMS, N_RATED = 30, 18


def quality(i: int, p: int) -> int:
    return max(1, min(7, 2 + 2 * p + (i % 3) - 1))


def human_value(i: int, p: int, r: int, key: str, rng) -> int:
    return max(1, min(7, quality(i, p) + (r - 1) * (i % 2)))  # raters spread around the quality


def judge_value(i: int, p: int) -> int:
    return min(7, quality(i, p) + 1)  # a judge one point too generous


@pytest.fixture
def trusted_study(make_study, make_judge, make_run, researcher):
    raters = [make_user(f"h{k}") for k in range(3)]
    study = make_study("rrgen-001", annotators=raters, researchers=[researcher], items_text=items_jsonl(N_ITEMS))
    rate_study(study, raters, human_value, criteria=["fluency"],
               ignore={(i, r) for i in range(N_RATED, N_ITEMS) for r in range(3)})  # humans skip the rest
    run = make_run(study, make_judge("generous"),
                   {(f"it-{i:03d}", p, "fluency"): judge_value(i, p) for i in range(N_ITEMS) for p in range(3)})
    for score in JudgeScore.objects.filter(run=run).select_related("item", "output"):
        i = int(score.item.external_id[3:])
        top = judge_value(i, score.output.position)
        score.detail = {"distribution": {str(top): 0.7, str(max(1, top - 1)): 0.3}}
        score.save(update_fields=["detail"])
    return study, run


def expected_systems() -> dict[str, dict]:
    out = {}
    for p, system in enumerate(SYSTEMS):
        y = np.array([np.mean([human_value(i, p, r, "", None) for r in range(3)]) for i in range(N_RATED)])
        yhat = np.array([judge_value(i, p) for i in range(N_RATED)], float)
        unl = np.array([judge_value(i, p) for i in range(N_RATED, N_ITEMS)], float)
        out[system] = estimate_system(y, yhat, unl)
    return out


def test_json_gives_ppi_calibration_and_verbosity(trusted_study, client_for, researcher):
    study, run = trusted_study
    resp = client_for(researcher).get(reverse("report", args=[study.slug]), {"download": "json"})
    flu = resp.json()["sections"]["Trusting the judges"]["criteria"]["fluency"]
    got = flu["runs"][0]
    assert got["name"] == f"generous (run {run.pk})"
    expected = expected_systems()
    assert set(got["systems"]) == set(SYSTEMS)
    for system, e in expected.items():
        g = got["systems"][system]
        assert g["human_only"]["n"] == N_RATED and g["judge_only"]["n"] == N_ITEMS
        assert g["ppi_plus"]["mean"] == pytest.approx(e["ppi_plus"]["mean"])
        assert g["ppi_plus"]["ci"] == pytest.approx(e["ppi_plus"]["ci"])
        assert g["ppi"]["mean"] == pytest.approx(e["ppi"]["mean"])
        # the generous judge alone is too high; corrected by the humans it is not
        assert g["judge_only"]["mean"] > g["human_only"]["mean"] + 0.5
    # win rates: sys-a vs sys-b per item, by human means (rated items) and judge scores (all items)
    wins = got["win_rates"][f"{SYSTEMS[0]} vs {SYSTEMS[1]}"]
    win = lambda a, b: 1.0 if a > b else 0.0 if a < b else 0.5  # noqa: E731
    hm = lambda i, p: np.mean([human_value(i, p, r, "", None) for r in range(3)])  # noqa: E731
    ref = estimate_system(np.array([win(hm(i, 0), hm(i, 1)) for i in range(N_RATED)]),
                          np.array([win(judge_value(i, 0), judge_value(i, 1)) for i in range(N_RATED)], float),
                          np.array([win(judge_value(i, 0), judge_value(i, 1)) for i in range(N_RATED, N_ITEMS)], float))
    assert wins["human_only"]["mean"] == pytest.approx(ref["human_only"]["mean"])
    assert wins["ppi_plus"]["mean"] == pytest.approx(ref["ppi_plus"]["mean"])
    dists, answers = [], []
    for i in range(N_RATED):
        for p in range(3):
            top = judge_value(i, p)
            dists.append({str(top): 0.7, str(max(1, top - 1)): 0.3})
            mean = np.mean([human_value(i, p, r, "", None) for r in range(3)])
            answers.append(float(np.floor(mean + 0.5)))
    ref = calibration(dists, answers)
    assert got["calibration"]["ece"] == pytest.approx(ref["ece"])
    assert got["calibration"]["brier"] == pytest.approx(ref["brier"])
    assert got["calibration"]["n"] == N_RATED * 3
    assert got["verbosity"]["n"] == N_ITEMS * 3
    assert flu["n_human_units"] == N_RATED * 3


def test_page_shows_the_section_with_its_plots(trusted_study, client_for, researcher):
    study, run = trusted_study
    html = client_for(researcher).get(reverse("report", args=[study.slug])).content.decode()
    assert "Trusting the judges" in html and "System scores, bias-corrected" in html
    assert 'aria-label="judges-reliability-fluency"' in html and 'aria-label="judges-estimates-fluency"' in html


def test_no_distribution_says_so(make_study, make_judge, make_run, client_for, researcher):
    raters = [make_user(f"h{k}") for k in range(2)]
    study = make_study("rrgen-001", annotators=raters, researchers=[researcher], items_text=items_jsonl(6))
    rate_study(study, raters, human_value, criteria=["fluency"])
    make_run(study, make_judge("plain"), {(f"it-{i:03d}", p, "fluency"): judge_value(i, p)
                                          for i in range(6) for p in range(3)})
    html = client_for(researcher).get(reverse("report", args=[study.slug])).content.decode()
    assert "no stated distribution" in html
    # every output rated by humans: PPI has nothing to add and says why
    assert "PPI needs items only the judge scored" in html


def test_length_control_and_self_preference(make_study, make_judge, make_run, client_for, researcher):
    """Outputs of the 'llama' family get +1 from a llama judge on top of its usual view; long
    outputs get +1 from the judge but not from the humans."""
    import json as _json

    from annotation.models import Output
    from annotation.stats.bias import length_controlled, self_preference

    raters = [make_user(f"h{k}") for k in range(2)]
    lines = []
    for i in range(12):
        outputs = [{"system": s, "content": " ".join(["word"] * (20 + 60 * (p == 0) + i)),
                    "metadata": {"family": "llama" if p == 1 else "other"}} for p, s in enumerate(SYSTEMS)]
        lines.append(_json.dumps({"id": f"it-{i:03d}", "context": f"Context {i}", "outputs": outputs}))
    study = make_study("rrgen-001", annotators=raters, researchers=[researcher], items_text="\n".join(lines) + "\n")
    rate_study(study, raters, lambda i, p, r, key, rng: 3 + (i % 3), criteria=["fluency"])
    judge_value_of = lambda i, p: 3 + (i % 3) + (p == 0) + (p == 1)  # noqa: E731  long +1, own family +1
    run = make_run(study, make_judge("llama-judge", model="meta-llama/Llama-3.1-8B"),
                   {(f"it-{i:03d}", p, "fluency"): judge_value_of(i, p) for i in range(12) for p in range(3)})
    data = client_for(researcher).get(reverse("report", args=[study.slug]), {"download": "json"}).json()
    got = data["sections"]["Trusting the judges"]["criteria"]["fluency"]["runs"][0]
    words = {(o.item.external_id, o.position): len(o.content.split())
             for o in Output.objects.filter(item__study=study).select_related("item")}
    keys = [(f"it-{i:03d}", p) for i in range(12) for p in range(3)]
    expected = length_controlled([judge_value_of(int(k[0][3:]), k[1]) for k in keys], [words[k] for k in keys],
                                 [SYSTEMS[k[1]] for k in keys])
    for system in SYSTEMS:
        assert got["length_controlled"]["systems"][system]["length_controlled"] == pytest.approx(
            expected["systems"][system]["length_controlled"])
    own = [1.0 + 0 for i in range(12)]  # judge − human on the llama outputs: +1
    others = [1.0 if p == 0 else 0.0 for i in range(12) for p in (0, 2)]
    assert got["self_preference"]["difference"] == pytest.approx(self_preference(own, others)["difference"])
    html = client_for(researcher).get(reverse("report", args=[study.slug])).content.decode()
    assert "more generous (judge − human) to outputs of its own model family" in html
    assert "At the average length" in html


def test_pairwise_runs_give_position_bias_and_strengths(make_study, make_judge, client_for, researcher):
    """A pairwise judge that prefers sys-a, and in a third of the pairs just picks the first shown."""
    from django.utils import timezone

    from annotation.stats import comparisons as cmp
    from judges.models import JudgeRun

    study = make_study("rrgen-001", researchers=[researcher], items_text=items_jsonl(12))
    run = JudgeRun.objects.create(study=study, judge=make_judge("pj", method="pairwise"),
                                  config={"name": "pj", "method": "pairwise"}, criteria=[], status="done",
                                  finished_at=timezone.now())
    rank = {0: 0, 1: 1, 2: 2}  # position p holds SYSTEMS[p]; lower rank is better
    shown, wins = [], []
    for item in study.items.all():
        for a, b in ((0, 1), (0, 2), (1, 2)):
            better = a if rank[a] < rank[b] else b
            biased = (item.pk + a + b) % 3 == 0
            v1, v2 = (a, b) if biased else (better, better)  # biased: the first shown wins both orders
            value, status = (better, "scored") if v1 == v2 else (None, "unparsed")  # the engine stores a flip so
            JudgeScore.objects.create(run=run, item=item, output=None, criterion=f"pair:overall:{a}-{b}",
                                      value=value, status=status, detail={"verdicts": [v1, v2]},
                                      doubt={"swap_disagreement": v1 != v2})
            shown += [(str(a), str(b), str(v1)), (str(b), str(a), str(v2))]
            if value is not None:
                wins += cmp.pairs_from_pairwise(SYSTEMS[a], SYSTEMS[b], SYSTEMS[value])
    data = client_for(researcher).get(reverse("report", args=[study.slug]), {"download": "json"}).json()
    got = data["sections"]["Trusting the judges"]["pairwise"][0]
    expected = cmp.position_effect(shown)
    assert got["position"]["first_wins"] == pytest.approx(expected["first_wins"]) and expected["first_wins"] > 0.5
    assert got["flip_rate"] == pytest.approx(sum(1 for i in range(len(shown) // 2)
                                                 if shown[2 * i][2] != shown[2 * i + 1][2]) / (len(shown) // 2))
    assert got["strengths"]["reason"] == cmp.bradley_terry(wins)["reason"]
    html = client_for(researcher).get(reverse("report", args=[study.slug])).content.decode()
    assert "the first-shown response won" in html and 'aria-label="pairwise-' in html


def test_the_summary_says_whether_the_judge_stands_in_from_the_sections(trusted_study, client_for, researcher):
    """Issue 25 §1: the judges app's part of the report summary: the alt-test (or rule) verdict of
    "Judges vs humans" and PPI++ against human-only from "Trusting the judges", per criterion."""
    study, run = trusted_study
    c = client_for(researcher)
    data = c.get(reverse("report", args=[study.slug]), {"download": "json"}).json()
    part = data["summary"]["judges"]["judges"]
    [row] = [r for r in part["rows"] if r["criterion"] == "fluency"]
    name = f"generous (run {run.pk})"
    section = data["sections"]["Judges vs humans"]["criteria"]["fluency"]["judges"][name]
    assert row["judge"] == name and row["stands_in"] == section["verdict"]["passed"]
    assert row["verdict"] == section["verdict"]["label"] and row["method"] == section["verdict"]["method"]
    assert part["stands_in"]["fluency"] == ([name] if row["stands_in"] else [])
    expected = expected_systems()
    width = lambda ci: ci[1] - ci[0]  # noqa: E731
    assert row["ppi"]["ppi_plus_width"] == pytest.approx(np.mean([width(e["ppi_plus"]["ci"]) for e in expected.values()]))
    assert row["ppi"]["human_only_width"] == pytest.approx(
        np.mean([width(e["human_only"]["ci"]) for e in expected.values()]))
    human_rank = sorted(expected, key=lambda s: -expected[s]["human_only"]["mean"])
    ppi_rank = sorted(expected, key=lambda s: -expected[s]["ppi_plus"]["mean"])
    assert row["ppi"]["same_ranking"] == (human_rank == ppi_rank)
    html = c.get(reverse("report", args=[study.slug])).content.decode()
    summary_html = html[html.index('id="answer-judges"'):html.index('id="answer-next"')]
    assert name in summary_html and "PPI++ against human-only" in summary_html
    # the scatter's data on demand: per output the human mean and the judge's score
    section_html = html[html.index("<h2>Judges vs humans</h2>"):]
    table = section_html[section_html.index("This plot's data as a table"):]
    table = table[:table.index("</table>")]
    assert "<th scope=\"col\">Human mean</th>" in table and f"<th scope=\"col\">{name}</th>" in table
    mean0 = np.mean([human_value(0, 0, r, "", None) for r in range(3)])
    assert f'<th scope="row">it-000 #0</th><td class="num">{mean0:.2f}</td><td class="num">{judge_value(0, 0):.2f}</td>' in table
    rows = c.get(reverse("report", args=[study.slug]), {"download": "csv"}).content.decode().splitlines()
    assert any(r.startswith(f"summary,fluency,{name},judge_stands_in,") for r in rows)


def test_a_choice_criterion_is_calibrated_against_the_unique_human_majority(make_study, make_judge, make_run,
                                                                          client_for, researcher):
    """Two raters label every output ACCEPT or REJECT: where they split there is no majority and the
    output is left out; the judge states a distribution leaning to its own label."""
    raters = [make_user(f"c{k}") for k in range(2)]
    study = make_study("rrgen-001", annotators=raters, researchers=[researcher], items_text=items_jsonl(12))
    label = lambda i, p, r: "ACCEPT" if (i + p + r * (i % 3 == 0)) % 2 else "REJECT"  # noqa: E731 - split when i % 3 == 0
    rate_study(study, raters, lambda i, p, r, key, rng: label(i, p, r), criteria=["decision"])
    judge = lambda i, p: "ACCEPT" if (i * 3 + p) % 4 else "REJECT"  # noqa: E731 - agrees with the humans on some
    run = make_run(study, make_judge("labeller"),
                   {(f"it-{i:03d}", p, "decision"): judge(i, p) for i in range(12) for p in range(3)})
    lean = {"ACCEPT": 0.8, "REJECT": 0.2}
    for score in JudgeScore.objects.filter(run=run).select_related("item", "output"):
        i, p = int(score.item.external_id[3:]), score.output.position
        mine = judge(i, p)
        score.detail = {"distribution": {k: lean[k] if mine == "ACCEPT" else 1 - lean[k] for k in lean}}
        score.save(update_fields=["detail"])
    resp = client_for(researcher).get(reverse("report", args=[study.slug]), {"download": "json"})
    got = resp.json()["sections"]["Trusting the judges"]["criteria"]["decision"]
    majority = {(i, p): label(i, p, 0) for i in range(12) for p in range(3) if label(i, p, 0) == label(i, p, 1)}
    assert got["n_human_units"] == len(majority) == 24  # the 12 outputs of split items left out
    dists = [{k: lean[k] if judge(i, p) == "ACCEPT" else 1 - lean[k] for k in lean} for i, p in majority]
    ref = calibration(dists, list(majority.values()))
    calib = got["runs"][0]["calibration"]
    assert calib["n"] == 24
    assert calib["ece"] == pytest.approx(ref["ece"]) and calib["brier"] == pytest.approx(ref["brier"])
    assert calib["accuracy"] == pytest.approx(np.mean([judge(i, p) == m for (i, p), m in majority.items()]))
