"""The "Judges vs humans" section of the study report, through the report page and its JSON."""

from __future__ import annotations

import numpy as np
import pytest
from django.urls import reverse
from scipy.stats import pearsonr

from tests.conftest import make_user
from tests.reports.factories import items_jsonl, rate_study

N_ITEMS = 8
TIER = {0: 6, 1: 4, 2: 2}


def human_value(i: int, p: int, r: int, key: str, rng) -> object:
    score = max(1, min(7, TIER[p] + (i % 3) - 1 - (1 if r == 2 else 0)))
    if key == "decision":
        return "ACCEPT" if score >= 4 else "REJECT"
    return score


def judge_value(i: int, p: int) -> int:
    return TIER[p] + (1 if i % 2 else 0)


@pytest.fixture
def judged_study(make_study, make_judge, make_run, researcher):
    raters = [make_user(f"h{k}") for k in range(3)]
    study = make_study("rrgen-001", annotators=raters, researchers=[researcher], items_text=items_jsonl(N_ITEMS))
    rate_study(study, raters, human_value, criteria=["fluency", "decision"])
    values = {}
    for i in range(N_ITEMS):
        for p in range(3):
            values[(f"it-{i:03d}", p, "fluency")] = judge_value(i, p)
            values[(f"it-{i:03d}", p, "decision")] = "ACCEPT" if p < 2 else "REJECT"
    run = make_run(study, make_judge("rr-judge"), values, criteria=["fluency", "decision"])
    return study, run


def expected_fluency() -> tuple[float, float]:
    judge, mean = [], []
    for i in range(N_ITEMS):
        for p in range(3):
            judge.append(judge_value(i, p))
            mean.append(np.mean([human_value(i, p, r, "fluency", None) for r in range(3)]))
    judge, mean = np.array(judge, float), np.array(mean)
    return pearsonr(judge, mean)[0], float(np.mean(np.abs(judge - mean)))


def test_report_page_shows_judges_against_humans(judged_study, client_for, researcher):
    study, run = judged_study
    html = client_for(researcher).get(reverse("report", args=[study.slug])).content.decode()
    assert "Judges vs humans" in html and f"rr-judge (run {run.pk})" in html
    r, mae = expected_fluency()
    assert f"<td>{r:.3f}</td>" in html and f"<td>{mae:.3f}</td>" in html
    assert 'aria-label="judges-scatter-fluency"' in html and 'aria-label="judges-confusion-decision"' in html
    assert "human ceiling" in html and ("alt-test" in html)


def test_report_json_carries_the_section(judged_study, client_for, researcher):
    study, run = judged_study
    resp = client_for(researcher).get(reverse("report", args=[study.slug]), {"download": "json"})
    section = resp.json()["sections"]["Judges vs humans"]
    name = f"rr-judge (run {run.pk})"
    flu = section["criteria"]["fluency"]
    r, mae = expected_fluency()
    assert flu["judges"][name]["pearson"]["value"] == pytest.approx(r)
    assert flu["judges"][name]["mae"]["value"] == pytest.approx(mae)
    assert flu["n_humans"] == 3 and flu["ceiling"]["n_humans"] == 3
    dec = section["criteria"]["decision"]["judges"][name]
    # the humans' majority: ACCEPT when the score >= 4; the judge says ACCEPT for positions 0 and 1
    majority = [human_value(i, p, 1, "decision", None) for i in range(N_ITEMS) for p in range(3)]
    judge = ["ACCEPT" if p < 2 else "REJECT" for i in range(N_ITEMS) for p in range(3)]
    assert dec["agreement"]["value"] == pytest.approx(np.mean([a == b for a, b in zip(majority, judge)]))
    assert dec["verdict"]["method"] == "rule"  # 24 units: fewer than the alt-test's 30


def test_no_finished_run_no_section(make_study, client_for, researcher, make_judge, make_run):
    study = make_study("rrgen-001", researchers=[researcher])
    make_run(study, make_judge("rr-judge"), {("rr-001", 0, "fluency"): 5}, status="running")
    html = client_for(researcher).get(reverse("report", args=[study.slug])).content.decode()
    assert "Judges vs humans" not in html


def test_a_large_study_plots_a_sample_of_its_outputs_and_computes_on_all(judged_study, client_for, researcher,
                                                                         monkeypatch):
    """Past MAX_PLOTTED_OUTPUTS the scatter plot and the tables beside the plots show a random sample
    (at 500,000 outputs every output was 2.5 million rows of HTML); the statistics keep every output."""
    from judges import report_section

    study, run = judged_study
    monkeypatch.setattr(report_section, "MAX_PLOTTED_OUTPUTS", 5)
    section = report_section.judges_vs_humans(study)
    by_key = {c["key"]: c for c in section["context"]["criteria"]}
    fluency, decision = by_key["fluency"], by_key["decision"]
    assert fluency["plot_sample"] == {"shown": 5, "of": 3 * N_ITEMS}
    assert len(fluency["plot_table"]["rows"]) == 5 and len(decision["plot_table"]["rows"]) == 5
    names = [row[0] for row in fluency["plot_table"]["rows"]]
    assert len(set(names)) == 5 and names == [row[0] for row in decision["plot_table"]["rows"]]
    r, mae = expected_fluency()  # over all 24 outputs
    judge = f"rr-judge (run {run.pk})"
    assert fluency["result"]["n_units"] == 3 * N_ITEMS
    assert section["data"]["criteria"]["fluency"]["judges"][judge]["pearson"]["value"] == pytest.approx(r)
    html = client_for(researcher).get(reverse("report", args=[study.slug])).content.decode()
    assert "5 of the 24 outputs, drawn at random" in html and "A random sample of the outputs as a table" in html


def _wait_for(client, url: str, done, timeout_s: float = 90.0) -> str:
    import time

    deadline = time.monotonic() + timeout_s
    while True:
        html = client.get(url).content.decode()
        if done(html) or time.monotonic() > deadline:
            return html
        time.sleep(0.3)


@pytest.mark.django_db(transaction=True)
def test_a_real_worker_computes_a_large_studys_report_and_then_its_judges_section_alone(
        celery_worker_session, judged_study, make_judge, make_run, client_for, researcher, settings):
    """Through the real broker and a real Celery worker: the report's task computes the report and its
    sections; a judge run finished later queues the sections' task alone, and the page shows the earlier
    section, out of date, until that task has computed the new one."""
    from judges.models import JudgeRun

    settings.REPORT_BACKGROUND_RATINGS = 1  # this small study counts as large
    study, run = judged_study
    c = client_for(researcher)
    url = reverse("report", args=[study.slug])
    assert "Computing the report" in c.get(url).content.decode()
    html = _wait_for(c, url, lambda h: "<h2>Judges vs humans</h2>" in h)
    assert f"rr-judge (run {run.pk})" in html and 'id="report-out-of-date"' not in html
    later = make_run(study, make_judge("rr-judge-2"), {(f"it-{i:03d}", p, "fluency"): judge_value(i, p)
                                                       for i in range(N_ITEMS) for p in range(3)},
                     criteria=["fluency"])
    assert JudgeRun.objects.filter(pk=later.pk, status="done").exists()
    html = c.get(url).content.decode()  # the earlier section at once, while the worker computes the new one
    assert 'id="report-out-of-date"' in html and f"rr-judge-2 (run {later.pk})" not in html
    html = _wait_for(c, url, lambda h: f"rr-judge-2 (run {later.pk})" in h)
    assert f"rr-judge-2 (run {later.pk})" in html and 'id="report-out-of-date"' not in html
