"""The study plan page: who may see it, what it shows, and bad fields shown as errors."""

from __future__ import annotations

import html

import pytest
from django.urls import reverse

from annotation.planning.pilot import pilot_estimates
from annotation.stats import power as pw

pytestmark = pytest.mark.django_db


def _get(client, study, **params):
    return client.get(reverse("plan", args=[study.slug]), params)


def test_reader_sees_the_plan_prefilled_from_the_study_as_pilot(rated_study, researcher, client_for):
    response = _get(client_for(researcher), rated_study)
    assert response.status_code == 200
    body = response.content.decode()
    est = pilot_estimates(rated_study)["scores"]
    # the form starts from the pilot's estimates (rounded), the plan uses them
    sd, icc, corr = (round(est[k]["value"], 3) for k in ("sd", "icc", "corr"))
    assert f'name="sd" value="{sd}"' in body and f'name="icc" value="{icc}"' in body
    plan = response.context["plan"]["scores"]
    assert plan["items"] == pw.items_needed(delta=0.5, sd=sd, icc=icc, corr=corr, raters=3)
    assert [r["raters"] for r in plan["table"]] == [1, 2, 3, 4, 5, 6]
    assert f"<strong>{plan['items']} items</strong>" in body
    assert html.escape(pw.SCORES_FORMULA) in body and html.escape(pw.PAIRWISE_FORMULA) in body
    assert "<svg" in body and 'aria-label="Power curves"' in body
    assert 'aria-current="page">Plan</a>' in body


def test_entered_values_replace_the_pilot(rated_study, researcher, client_for):
    response = _get(client_for(researcher), rated_study, delta=0.4, sd=1.5, icc=0.6, corr=0.2, raters=2,
                    power=0.9, alpha=0.05, win_prob="", bt_diff=0.5, ties=0.1)
    assert response.status_code == 200
    plan = response.context["plan"]
    assert plan["scores"]["items"] == pw.items_needed(delta=0.4, sd=1.5, icc=0.6, corr=0.2, raters=2, power=0.9)
    assert plan["pairwise"]["win_prob"] == pytest.approx(pw.bt_win_prob(0.5))
    assert plan["pairwise"]["judgements"] == pw.pairwise_plan(bt_diff=0.5, ties=0.1, power=0.9)["judgements"]


def test_a_study_without_ratings_plans_from_defaults(make_study, researcher, client_for):
    study = make_study("rrgen-001", researchers=[researcher])
    response = _get(client_for(researcher), study)
    assert response.status_code == 200
    assert response.context["pilot"] is None
    assert response.context["plan"]["scores"]["inputs"]["sd"] == 1.0
    assert b"has no\nratings yet" in response.content or b"has no ratings yet" in response.content
    assert b"<svg" in response.content


@pytest.mark.parametrize("params,field,text", [
    ({"icc": "2"}, "icc", "must be within [0, 1]"),
    ({"sd": "abc"}, "sd", "Enter a number"),
    ({"delta": "-1"}, "delta", "must be &gt; 0"),
    ({"win_prob": "0.5"}, "win_prob", "must differ from 0.5"),
    ({"ties": "1"}, "ties", "must be within [0, 1)"),
    ({"criterion": "decision"}, "criterion", "Select a valid choice"),
])
def test_a_bad_field_is_an_error_on_the_page(rated_study, researcher, client_for, params, field, text):
    base = {"delta": 0.5, "sd": 1, "icc": 0.5, "corr": 0.3, "raters": 3, "power": 0.8, "alpha": 0.05,
            "win_prob": 0.6, "ties": 0}
    response = _get(client_for(researcher), rated_study, **{**base, **params})
    assert response.status_code == 200
    assert response.context["form"].errors[field]
    body = response.content.decode()
    assert 'role="alert"' in body and text in body
    assert response.context["plan"] is None


def test_annotators_and_outsiders_are_refused(rated_study, raters, outsider, client_for):
    assert _get(client_for(raters[0]), rated_study).status_code == 404
    assert _get(client_for(outsider), rated_study).status_code == 404


def test_admins_see_it_and_the_report_links_to_it(rated_study, admin_user, client_for):
    client = client_for(admin_user)
    assert _get(client, rated_study).status_code == 200
    report = client.get(reverse("report", args=[rated_study.slug]))
    assert f'href="{reverse("plan", args=[rated_study.slug])}"'.encode() in report.content


def test_a_comparative_study_prefills_ties_and_win_probability(make_study, raters, admin_user, client_for):
    from tests.reports.test_plan_pilot import _pairwise_study

    pattern = [("a", "a", "tie"), ("a", "b", "a"), ("b", "a", "tie"), ("a", "a", "b")] * 3
    study = _pairwise_study(make_study, raters, pattern)
    response = _get(client_for(admin_user), study)
    assert response.status_code == 200
    pilot = response.context["pilot"]["pairwise"]
    body = response.content.decode()
    assert f'name="ties" value="{round(pilot["tie_share"], 3)}"' in body
    assert f'name="win_prob" value="{round(pilot["win_rate"], 3)}"' in body
    plan = response.context["plan"]["pairwise"]
    assert plan["decided"] == pw.judgements_needed(win_prob=round(pilot["win_rate"], 3))
    assert plan["judgements"] == pw.pairwise_plan(win_prob=round(pilot["win_rate"], 3),
                                                  ties=round(pilot["tie_share"], 3))["judgements"]
    assert "sys-a vs sys-b" in body


def test_the_plan_predicts_what_active_sampling_saves_from_the_judges_scores(admin_user, client_for):
    import json

    from annotation.models import Item
    from annotation.services.items import items_import
    from annotation.services.studies import study_create
    from judges.models import JudgeConfig, JudgeRun, JudgeScore
    from judges.selectors import study_jury
    from rubrics.services import rubric_version_create

    rubric = {"slug": "plan-active", "name": "Plan active", "criteria": [
        {"key": "quality", "name": "Quality", "kind": "likert", "min": 1, "max": 5}]}
    version, _ = rubric_version_create(data=rubric)
    study = study_create(name="Plan active", rubric_version=version, user=admin_user, raters_per_item=1,
                         sampling_policy={"name": "active_inference", "budget": 5})
    items_import(study=study, filename="items.jsonl", text="\n".join(json.dumps(
        {"id": f"a{k}", "context": "q", "outputs": [{"system": "s", "content": f"answer {k}"}]}) for k in range(50)))
    body = _get(client_for(admin_user), study).content.decode()
    assert "No prediction: no judge has scored the study yet." in body
    runs = [JudgeRun.objects.create(study=study, judge=JudgeConfig.objects.create(name=f"j{j}", model="m"), config={},
                                    criteria=["quality"], status="done") for j in range(3)]
    for item in Item.objects.filter(study=study).prefetch_related("outputs"):
        output = item.outputs.get()
        disagree = item.external_id in {"a0", "a1", "a2", "a3", "a4"}
        for j, run in enumerate(runs):
            JudgeScore.objects.create(run=run, item=item, output=output, criterion="quality", value=4,
                                      score=[4.0, 2.0, 5.0][j] if disagree else 4.0, status="scored")
    jury = study_jury(study)
    assert len(jury) == 50 and all(len(scores) == 3 for _, _, scores in jury)
    response = _get(client_for(admin_user), study)
    active = response.context["active"]
    assert active["source"] == "judges" and active["budget"] == 5 and 0 < active["saving"] < active["oracle_saving"]
    assert "data-active-saving" in response.content.decode()
    assert "an upper bound until humans rate a pilot" in response.content.decode()
