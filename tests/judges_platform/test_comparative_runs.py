"""Ranking and best-worst judge runs end to end: a real Celery worker, the loopback fake server over
HTTP, the JudgeScores they store (item-level, output NULL), and simulate_study with judges on the
comparative presets down to the report."""

from __future__ import annotations

import io
import json
from collections import Counter, defaultdict

import pytest
from django.core.management import call_command
from django.urls import reverse

from annotation.models import Output, Study
from annotation.simulation.items import items_for
from judges.models import JudgeRun, JudgeScore
from judges.services.runs import JudgeRunError, judge_run_start

from .conftest import wait_run_ends

pytestmark = pytest.mark.django_db(transaction=True)


def ranking_items(n: int) -> str:
    return "".join(json.dumps(row) + "\n" for row in items_for("compare-ranking", n=n, seed=1))


def test_a_ranking_run_stores_one_ranking_per_item(celery_worker_session, make_study, make_judge, fake_server,
                                                  client_for, researcher):
    study = make_study("compare-ranking", items_text=ranking_items(5), researchers=[researcher])
    run = judge_run_start(study=study, judge=make_judge("ranker", endpoint=fake_server.base_url, method="ranking"))
    assert run.criteria == [] and run.n_expected == 5
    wait_run_ends(run)
    assert run.status == "done", run.error
    scores = list(JudgeScore.objects.filter(run=run))
    assert len(scores) == 5 and run.n_scored == 5  # the fake server answers every ranking prompt in format
    assert fake_server.stats().completion_requests == 10  # each item in two orders (swap by default)
    for s in scores:
        assert s.output_id is None and s.criterion == "rank:order" and s.score is None
        assert sorted(s.value["shown"]) == list(range(6)) and sorted(s.value["ranks"]) == [1, 2, 3, 4, 5, 6]
        assert s.detail["orders"][1] == s.detail["orders"][0][::-1]
        assert 0 <= s.doubt["swap_distance"] <= 1 and "[[" in s.raw_text
    assert run.tokens_in > 0 and run.cost_usd > 0
    data = client_for(researcher).get(reverse("report", args=[study.slug]), {"download": "json"}).json()
    got = data["sections"]["Trusting the judges"]["comparative"][0]
    assert got["method"] == "ranking" and got["swap"]["n"] == 5
    assert got["swap"]["mean_distance"] == pytest.approx(sum(s.doubt["swap_distance"] for s in scores) / 5)
    first_best = [r[0] == 1 for s in scores for r in s.detail["rankings"]]
    assert got["position"]["n"] == 10 and got["position"]["first_best"] == pytest.approx(sum(first_best) / 10)
    assert got["position"]["chance"] == pytest.approx(1 / 6)


def test_a_best_worst_run_asks_the_balanced_tuples(celery_worker_session, make_study, make_judge, fake_server):
    study = make_study("compare-ranking", items_text=ranking_items(4))
    run = judge_run_start(study=study, judge=make_judge("bws", endpoint=fake_server.base_url, method="best_worst"))
    assert run.n_expected == 4 * 3  # six outputs in tuples of four: 6 / gcd(6, 4) = 3 tuples per item
    wait_run_ends(run)
    assert run.status == "done", run.error
    scores = list(JudgeScore.objects.filter(run=run))
    assert len(scores) == 12 and run.n_scored == 12
    shown_per_item: dict[int, Counter] = defaultdict(Counter)
    for s in scores:
        assert s.output_id is None and s.criterion.startswith("bw:best_worst:")
        shown = [int(x) for x in s.criterion.rsplit(":", 1)[1].split("-")]
        assert s.value["shown"] == shown and len(shown) == 4
        assert s.value["best"] in shown and s.value["worst"] in shown and s.value["best"] != s.value["worst"]
        shown_per_item[s.item_id].update(shown)
    assert all(c == {i: 2 for i in range(6)} for c in shown_per_item.values())  # every output twice


def test_a_key_of_another_kind_stops_the_run_before_it_starts(make_study, make_judge):
    study = make_study("compare-ranking", items_text=ranking_items(2))
    judge = make_judge("bad-key", method="ranking", method_options={"key": "best_worst"})
    with pytest.raises(JudgeRunError, match="'best_worst' is a best_worst question; a ranking judge"):
        judge_run_start(study=study, judge=judge)
    judge = make_judge("no-such-key", method="best_worst", method_options={"key": "nope"})
    with pytest.raises(JudgeRunError, match="the rubric has no criterion 'nope'"):
        judge_run_start(study=study, judge=judge)
    assert not JudgeRun.objects.filter(study=study).exists()


def test_simulate_study_with_best_worst_judges_reports_them(client_for, researcher):
    from annotation.services.studies import study_members_add

    out = io.StringIO()
    call_command("simulate_study", "--preset", "compare-ranking", "--items", "12", "--judges", "2",
                 "--malformed", "0.1", "--worker", "no", "--slug", "sim-bw", stdout=out)
    runs = list(JudgeRun.objects.filter(study__slug="sim-bw").order_by("pk"))
    assert [r.status for r in runs] == ["done", "done"] and all(r.config["method"] == "best_worst" for r in runs)
    for run in runs:
        assert run.n_expected == 12 * 3 and run.n_scored + run.n_unparsed == run.n_expected
        assert run.n_scored > run.n_unparsed > 0  # the malformed answers carry no verdict: unparsed, never guessed
    study = Study.objects.get(slug="sim-bw")
    study_members_add(study=study, usernames=[researcher.username], role="researcher")
    data = client_for(researcher).get(reverse("report", args=[study.slug]), {"download": "json"}).json()
    got = data["sections"]["Trusting the judges"]["comparative"]
    assert {g["method"] for g in got} == {"best_worst"} and len(got) == 2
    for g in got:
        n_scored = JudgeRun.objects.get(pk=int(g["name"].rsplit("run ", 1)[1].rstrip(")"))).n_scored
        assert g["position"]["n"] == n_scored and g["position"]["chance"] == pytest.approx(0.25)
        assert set(g["counts"]) == set(g["strengths"]["systems"]) and len(g["counts"]) == 6
        # the counting scores, recounted from the stored answers: (times best - times worst) / times shown
    systems = {(o.item_id, o.position): o.system for o in Output.objects.filter(item__study=study)}
    run = runs[0]
    shown, score = Counter(), Counter()
    for s in JudgeScore.objects.filter(run=run, status="scored"):
        shown.update(systems[(s.item_id, i)] for i in s.value["shown"])
        score[systems[(s.item_id, s.value["best"])]] += 1
        score[systems[(s.item_id, s.value["worst"])]] -= 1
    mine = next(g for g in got if g["name"].endswith(f"(run {run.pk})"))
    assert mine["counts"] == pytest.approx({k: score[k] / shown[k] for k in shown})
    html = client_for(researcher).get(reverse("report", args=[study.slug])).content.decode()
    assert "Best–worst — " in html and "picked as best" in html and 'aria-label="best-worst-' in html


def test_simulate_study_with_pairwise_judges_on_the_pairwise_preset():
    out = io.StringIO()
    call_command("simulate_study", "--preset", "compare-pairwise", "--items", "6", "--judges", "1",
                 "--malformed", "0", "--worker", "no", "--slug", "sim-pw", stdout=out)
    run = JudgeRun.objects.get(study__slug="sim-pw")
    assert run.status == "done" and run.config["method"] == "pairwise"
    assert run.n_scored + run.n_unparsed == run.n_expected and run.n_scored > 0
    # answered from the simulation's truth in the pairwise format: every verdict parsed
    assert all(v is not None for d in JudgeScore.objects.filter(run=run).values_list("detail", flat=True)
               for v in d["verdicts"])


def test_judges_against_the_raters_on_the_same_comparisons(client_for, researcher):
    """The report's judge-vs-rater agreement and κ, recomputed from the stored rows with sklearn."""
    from sklearn.metrics import cohen_kappa_score

    from annotation.models import Rating
    from annotation.services.studies import study_members_add

    call_command("simulate_study", "--preset", "compare-pairwise", "--items", "20", "--raters", "6", "--judges", "1",
                 "--malformed", "0", "--worker", "no", "--slug", "sim-agree", stdout=io.StringIO())
    study = Study.objects.get(slug="sim-agree")
    study_members_add(study=study, usernames=[researcher.username], role="researcher")
    data = client_for(researcher).get(reverse("report", args=[study.slug]), {"download": "json"}).json()
    humans = data["sections"]["Trusting the judges"]["pairwise"][0]["humans"]
    assert humans["criterion"] == "preference"
    outputs = {o.pk: o for o in Output.objects.filter(item__study=study)}
    by_pos = {(o.item_id, o.position): o.system for o in outputs.values()}
    judge = {}
    for s in JudgeScore.objects.filter(run__study=study, status="scored"):
        a, b = (int(x) for x in s.criterion.rsplit(":", 1)[1].split("-"))
        sa, sb = by_pos[(s.item_id, a)], by_pos[(s.item_id, b)]
        judge[(s.item_id, frozenset((sa, sb)))] = "tie" if s.value == "tie" else by_pos[(s.item_id, int(s.value))]
    h, j = [], []
    for r in Rating.objects.filter(assignment__study=study, criterion="preference", assignment__status="submitted"):
        pair = frozenset(outputs[i].system for i in r.value["shown"])
        key = (r.assignment.item_id, pair)
        if key in judge:
            first = min(pair)
            code = lambda w: "tie" if w == "tie" else ("first" if w == first else "second")  # noqa: E731
            h.append(code("tie" if r.value["winner"] == "tie" else outputs[r.value["winner"]].system))
            j.append(code(judge[key]))
    assert humans["n"] == len(h) > 50
    assert humans["agreement"] == pytest.approx(sum(x == y for x, y in zip(h, j)) / len(h))
    assert humans["kappa"] == pytest.approx(cohen_kappa_score(h, j))
    assert humans["agreement"] > 0.5 and humans["kappa"] > 0.2  # both answer from the same truth, with noise
    assert humans["human_position"]["n"] > 0
    html = client_for(researcher).get(reverse("report", args=[study.slug])).content.decode()
    assert 'data-testid="judge-vs-humans"' in html and "Cohen's κ" in html
