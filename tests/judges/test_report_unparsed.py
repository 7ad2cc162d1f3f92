"""Unparsed judge answers are never scores: the report's judge section counts and shows them."""
from __future__ import annotations

import pytest
from django.urls import reverse

from judges.models import JudgeScore
from tests.conftest import make_user
from tests.judges_platform.conftest import make_judge, make_run  # noqa: F401 (fixtures)
from tests.reports.factories import items_jsonl, rate_study

N_ITEMS = 6


@pytest.fixture
def judged(make_study, make_judge, make_run, researcher):  # noqa: F811
    raters = [make_user(f"h{k}") for k in range(2)]
    study = make_study("rrgen-001", annotators=raters, researchers=[researcher], items_text=items_jsonl(N_ITEMS))
    rate_study(study, raters, lambda i, p, r, key, rng: 2 + p + (i % 2), criteria=["fluency"])
    values = {}
    for i in range(N_ITEMS):
        for p in range(3):
            # output 2 of items 0 and 1: the judge's answer had no verdict where the format puts it
            values[(f"it-{i:03d}", p, "fluency")] = (None, "unparsed", {}) if p == 2 and i < 2 else 2 + p
    values[("it-005", 2, "fluency")] = (None, "refusal", {})
    return study, make_run(study, make_judge("rr-judge"), values, criteria=["fluency"])


def test_report_counts_and_shows_unparsed_answers(judged, client_for, researcher):
    study, run = judged
    assert (run.n_scored, run.n_unparsed, run.n_refusal) == (15, 2, 1)
    assert not JudgeScore.objects.filter(run=run, status="unparsed").exclude(value=None).exists()
    html = client_for(researcher).get(reverse("report", args=[study.slug])).content.decode()
    assert (f'<td>rr-judge (run {run.pk})</td><td>per_criterion</td><td class="num">{run.n_expected}</td>'
            f'<td class="num">15</td><td class="num">2</td><td class="num">1</td><td class="num">0</td>') in html
    assert "is never a score: it is left out of every statistic below" in html
    # the criterion's table: n counts only scored outputs; the Unparsed column counts unparsed + refusals
    assert f"<td>rr-judge (run {run.pk})</td><td>15</td><td>3</td>" in html


def test_report_json_carries_the_counts(judged, client_for, researcher):
    study, run = judged
    section = client_for(researcher).get(reverse("report", args=[study.slug]), {"download": "json"}).json()
    answers = section["sections"]["Judges vs humans"]["runs"][0]["answers"]
    assert answers["unparsed"] == 2 and answers["refusal"] == 1 and answers["scored"] == 15
    assert answers["by_criterion"]["fluency"] == {"scored": 15, "unparsed": 2, "refusal": 1}
