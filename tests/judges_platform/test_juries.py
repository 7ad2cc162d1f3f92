"""Judge juries: mean, median, majority and gold-weighted verdicts, the quorum, swap-surviving
pairwise verdicts, inter-judge agreement, and the jury as a judge in the report."""

from __future__ import annotations

import krippendorff
import numpy as np
import pytest
from django.urls import reverse

from judges.models import JudgeRun, JudgeScore
from judges.services.juries import JuryError, jury_create
from tests.conftest import make_user
from tests.reports.factories import items_jsonl, rate_study

AQ = ["aq-001", "aq-002", "aq-003", "aq-004", "aq-005", "aq-006"]
GOLD = ["TP", "TP", "FP3", "FP2", "FP1", "TP"]


def _values(run) -> dict:
    return {(s.item.external_id, s.output.position if s.output else None, s.criterion): (s.value, s.status, s.raw_text)
            for s in JudgeScore.objects.filter(run=run).select_related("item", "output")}


@pytest.fixture
def three_runs(make_study, make_judge, make_run):
    study = make_study("rrgen-001", items_text=items_jsonl(3))
    a = {(f"it-{i:03d}", p, "fluency"): 2 + i + p for i in range(3) for p in range(3)}
    b = {k: v + 2 for k, v in a.items()}
    c = {k: v + 1 for k, v in a.items()}
    c[("it-000", 0, "fluency")] = ("", "unparsed", {})  # one member failed on one slot
    for runs_values in (a, b, c):
        for i in range(3):
            for p in range(3):
                runs_values[(f"it-{i:03d}", p, "decision")] = "ACCEPT" if (i + p) % 2 else "REJECT"
    b[("it-000", 1, "decision")] = "REJECT"  # it-000/1: ACCEPT, REJECT, ACCEPT
    runs = [make_run(study, make_judge(n), v) for n, v in (("ja", a), ("jb", b), ("jc", c))]
    return study, runs, (a, b, c)


def test_mean_median_majority_and_the_quorum(three_runs):
    study, runs, (a, b, c) = three_runs
    mean = _values(jury_create(study=study, runs=runs, combine="mean", quorum=2))
    assert mean[("it-001", 2, "fluency")][0] == pytest.approx(np.mean([a[("it-001", 2, "fluency")],
                                                                      b[("it-001", 2, "fluency")],
                                                                      c[("it-001", 2, "fluency")]]))
    assert mean[("it-000", 0, "fluency")][0] == pytest.approx((a[("it-000", 0, "fluency")] +
                                                               b[("it-000", 0, "fluency")]) / 2)  # two answered
    assert mean[("it-000", 1, "decision")][0] == "ACCEPT"  # labels by majority: 2 of 3
    median = _values(jury_create(study=study, runs=runs, combine="median"))  # quorum: everyone
    assert median[("it-001", 0, "fluency")][0] == c[("it-001", 0, "fluency")]
    value, status, why = median[("it-000", 0, "fluency")]
    assert value is None and status == "unparsed" and why.startswith("quorum not met: 2 of 3 members answered")


def test_a_tie_is_no_verdict(three_runs):
    study, runs, _ = three_runs
    jury = jury_create(study=study, runs=runs[:2], combine="majority", quorum=2)
    value, status, why = _values(jury)[("it-000", 1, "decision")]
    assert value is None and status == "unparsed" and why.startswith("no majority")


def test_inter_judge_agreement_matches_krippendorff(three_runs):
    study, runs, (a, b, c) = three_runs
    jury = jury_create(study=study, runs=runs, combine="mean", quorum=1)
    keys = sorted(k for k in a if k[2] == "fluency")
    data = np.array([[np.nan if isinstance(v[k], tuple) else v[k] for k in keys] for v in (a, b, c)], float)
    assert jury.config["inter_judge_alpha"]["fluency"] == pytest.approx(
        krippendorff.alpha(reliability_data=data, level_of_measurement="interval"))


def test_weights_learnt_on_gold_outvote_a_wrong_majority(make_study, make_judge, make_run):
    study = make_study("aqua-003")
    good = make_run(study, make_judge("good", method="label"), {(i, 0, "label"): g for i, g in zip(AQ, GOLD)})
    wrong = {(i, 0, "label"): ("FP1" if g == "TP" else "TP") for i, g in zip(AQ, GOLD)}
    bad = [make_run(study, make_judge(n, method="label"), wrong) for n in ("bad1", "bad2")]
    majority = _values(jury_create(study=study, runs=[good, *bad], combine="majority"))
    weighted_run = jury_create(study=study, runs=[good, *bad], combine="weighted")
    weighted = _values(weighted_run)
    assert [majority[(i, 0, "label")][0] for i in AQ] == [wrong[(i, 0, "label")] for i in AQ]
    assert [weighted[(i, 0, "label")][0] for i in AQ] == GOLD
    assert [m["weight"] for m in weighted_run.config["members"]] == [1.0, 0.0, 0.0]


def test_pairwise_verdicts_count_only_when_they_survive_the_swap(make_study, make_judge):
    from django.utils import timezone

    study = make_study("rrgen-001", items_text=items_jsonl(1))
    item = study.items.get()
    runs = []
    for name, verdict, flipped in (("p1", "A", False), ("p2", "B", True), ("p3", "A", False)):
        judge = make_judge(name, method="pairwise")
        run = JudgeRun.objects.create(study=study, judge=judge, config={"name": name, "method": "pairwise"},
                                      criteria=[], status="done", n_expected=1, finished_at=timezone.now())
        JudgeScore.objects.create(run=run, item=item, output=None, criterion="pair:overall:0-1", value=verdict,
                                  status="scored", doubt={"swap_disagreement": flipped})
        runs.append(run)
    jury = jury_create(study=study, runs=runs, combine="majority", quorum=2)
    score = JudgeScore.objects.get(run=jury)
    assert score.value == "A" and score.detail["not_counted"] == [f"run {runs[1].pk} flipped on the swap"]
    with pytest.raises(JuryError, match="quorum must be between 1 and 3"):
        jury_create(study=study, runs=runs, quorum=4)


def test_form_a_jury_in_the_browser_flow_and_see_it_in_the_report(three_runs, client_for, admin_user, researcher):
    from annotation.services.studies import study_members_add

    study, runs, _ = three_runs
    raters = [make_user(f"h{k}") for k in range(2)]
    study_members_add(study=study, usernames=[u.username for u in raters], role="annotator")
    study_members_add(study=study, usernames=[researcher.username], role="researcher")
    rate_study(study, raters, lambda i, p, r, key, rng: 3 + p if key == "fluency" else "ACCEPT",
               criteria=["fluency", "decision"])
    page = client_for(admin_user).get(f"/judges/studies/{study.slug}/").content.decode()
    assert "Form a jury" in page
    resp = client_for(admin_user).post(f"/judges/studies/{study.slug}/jury/",
                                       {"runs": [r.pk for r in runs], "combine": "mean", "quorum": "2",
                                        "name": "panel"}, follow=True)
    html = resp.content.decode()
    jury = JudgeRun.objects.get(config__method="jury")
    assert f"Run {jury.pk}: panel of 3 judges" in html and "agreement between the judges" in html
    bad = client_for(admin_user).post(f"/judges/studies/{study.slug}/jury/", {"runs": [runs[0].pk]}, follow=True)
    assert "No jury formed: a jury needs at least two finished runs" in bad.content.decode()
    report = client_for(researcher).get(reverse("report", args=[study.slug]), {"download": "json"}).json()
    assert f"panel (run {jury.pk})" in report["sections"]["Judges vs humans"]["criteria"]["fluency"]["judges"]
    assert client_for(researcher).post(f"/judges/studies/{study.slug}/jury/",
                                       {"runs": [r.pk for r in runs]}).status_code == 404
