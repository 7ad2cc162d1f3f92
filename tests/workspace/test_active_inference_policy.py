"""The active_inference sampling policy in a study (issue 58 §1, §5): validated with the field named, items
drawn round by round from the judges' disagreement, only drawn items served, each rating carrying its item's
probability into the export, the methods paragraph stating design and estimator."""

from __future__ import annotations

import csv
import io
import json
from io import StringIO

import numpy as np
import pytest
from django.core.management import CommandError, call_command

from annotation.datasets import export_chunks
from annotation.models import Assignment, Item
from annotation.reports.methods import methods_paragraph
from annotation.services.active_inference import ActiveDrawError, active_draw, active_prediction
from annotation.services.items import items_import
from annotation.services.sampling_policy import PolicyError, policy_clean
from annotation.services.studies import study_create, study_members_add, study_set_status
from rubrics.services import rubric_version_create
from tests.conftest import make_user

RUBRIC = {"slug": "active-inference-test", "name": "Active inference test", "criteria": [
    {"key": "quality", "name": "Quality", "kind": "likert", "min": 1, "max": 5}]}
PAIRS = {"criteria": [{"key": "pref", "kind": "pairwise"}]}


@pytest.mark.parametrize("raw, message", [
    ({"name": "active_inference"}, "sampling_policy.budget: .*whole number of at least 1, got None"),
    ({"name": "active_inference", "budget": True}, "sampling_policy.budget"),
    ({"name": "active_inference", "budget": 5, "floor": 0}, r"sampling_policy.floor: a share in \(0, 1\], got 0"),
    ({"name": "active_inference", "budget": 5, "pilot": 1}, "sampling_policy.pilot"),
    ({"name": "active_inference", "budget": 5, "rounds": 0}, "sampling_policy.rounds"),
    ({"name": "active_inference", "budget": 5, "criterion": "nope"}, "no such criterion: 'nope'"),
    ({"name": "active_inference", "budget": 5, "speed": 2}, "sampling_policy.speed: not a parameter"),
])
def test_bad_policies_name_the_field(raw, message):
    with pytest.raises(PolicyError, match=message):
        policy_clean(raw, rubric=RUBRIC)


def test_a_good_policy_is_stored_with_its_defaults_and_pairwise_rubrics_are_refused():
    assert policy_clean({"name": "active_inference", "budget": 12}, rubric=RUBRIC) == {
        "name": "active_inference", "budget": 12, "criterion": "quality", "rounds": 6, "floor": 0.2, "pilot": 0.1}
    with pytest.raises(PolicyError, match="not pairwise"):
        policy_clean({"name": "active_inference", "budget": 5}, rubric=PAIRS)


@pytest.fixture
def by_hand(monkeypatch):
    """Rounds drawn here by hand: the last rating of a round asks no worker (a session's worker would
    draw it; tests/workspace/test_active_inference_rounds.py tests that)."""
    monkeypatch.setattr("annotation.services.active_inference._ask", lambda study, round_no: None)


def _jury(study, wrong: set[str]):
    """Three judges' scores per output: they agree (4, 4, 4) except on the items in `wrong` (4, 2, 5)."""
    rows = []
    for item in Item.objects.filter(study=study).prefetch_related("outputs"):
        for output in item.outputs.all():
            rows.append((item.pk, output.pk, [4.0, 2.0, 5.0] if item.external_id in wrong else [4.0, 4.0, 4.0]))
    return rows


@pytest.mark.django_db(transaction=True)
def test_items_are_drawn_round_by_round_and_ratings_carry_their_probability(admin_user, client_for, by_hand):
    version, _ = rubric_version_create(data=RUBRIC)
    policy = {"name": "active_inference", "budget": 10, "pilot": 0.25, "rounds": 2, "floor": 0.2}
    study = study_create(name="Active", rubric_version=version, user=admin_user, raters_per_item=1,
                         sampling_policy=policy)
    names = [f"i{k:02d}" for k in range(40)]
    items_import(study=study, filename="items.jsonl", text="\n".join(json.dumps(
        {"id": n, "context": f"Question {n}", "outputs": [{"system": "s", "content": f"Answer {n}"}]}) for n in names))
    rater = make_user("active-rater")
    study_members_add(study=study, usernames=[rater.username], role="annotator")
    study_set_status(study=study, status="open")
    wrong = set(names[::4])
    jury = _jury(study, wrong)
    c = client_for(rater)
    assert c.get(f"/studies/{study.slug}/rate/").status_code == 200
    assert not Assignment.objects.filter(study=study).exists()  # nothing is drawn: no item wants a rater

    pilot = active_draw(study=study, jury=jury, seed=3)
    assert pilot["round"] == 0 and pilot["items"] == 10 and pilot["expected"] == pytest.approx(2.5)
    drawn = Item.objects.filter(study=study, slots_wanted=1)
    assert drawn.count() == pilot["drawn"] > 0
    # Which items the uniform pilot holds follows the study's id (it orders the draw), which the database
    # hands out: exactly one of those sent to humans is made a disagreement, whatever the id. With none the
    # pilot sees no disagreement; with most of them disagreeing (3 of 5 for some ids), the agreeing items lie
    # further from the pilot's mean residual, and the map learned from it is rightly flat. The pilot's
    # probabilities do not read the jury, so the jury may be set after it.
    to_humans = list(drawn.order_by("external_id").values_list("external_id", flat=True))
    wrong = (wrong - set(to_humans)) | {to_humans[0]}
    jury = _jury(study, wrong)
    assert set(Item.objects.filter(study=study, sampling_probability__isnull=False)
               .values_list("sampling_probability", flat=True)) == {0.25}
    served = 0
    while True:
        assert c.get(f"/studies/{study.slug}/rate/").status_code == 200
        a = Assignment.objects.filter(study=study, rater=rater, status="active").select_related("item").first()
        if a is None:
            break
        assert a.sampling == "active" and a.sampling_probability == 0.25 and a.item.slots_wanted == 1
        score = "2" if a.item.external_id in wrong else "4"
        assert c.post(f"/studies/{study.slug}/rate/{a.token}/submit/", {"r1__quality": score}).status_code == 302
        served += 1
    assert served == pilot["drawn"]

    in_pilot = set(Item.objects.filter(study=study, sampling_probability__isnull=False).values_list("pk", flat=True))
    rated_wrong = Assignment.objects.filter(study=study, item__external_id__in=wrong).count()
    assert rated_wrong > 0  # the pilot saw the judges' disagreement come with an error
    first = active_draw(study=study, jury=jury, seed=4)
    assert first["round"] == 1 and first["items"] == 15 and first["left"] == 15
    assert first["expected"] == pytest.approx(15 * 0.25)
    round_one = dict(Item.objects.filter(study=study, sampling_probability__isnull=False).exclude(pk__in=in_pilot)
                     .values_list("external_id", "sampling_probability"))
    high = [p for n, p in round_one.items() if n in wrong]
    low = [p for n, p in round_one.items() if n not in wrong]
    assert high and low and min(high) > max(low)  # disagreeing items are drawn more often
    assert min(low) >= 0.2 * 0.25 - 1e-12  # the floor's share
    active_draw(study=study, jury=jury, seed=5)
    with pytest.raises(ActiveDrawError, match="drawn already"):
        active_draw(study=study, jury=jury)

    row = next(csv.DictReader(io.StringIO(b"".join(export_chunks(study, "csv")).decode())))
    assert row["sampling"] == "active" and float(row["sampling_probability"]) == 0.25
    text = methods_paragraph(study, {"counts": {}})
    assert "active statistical inference" in text and "inverse-probability-weighted" in text


@pytest.mark.django_db(transaction=True)
def test_prediction_from_the_judges_alone_and_the_command(admin_user):
    version, _ = rubric_version_create(data=RUBRIC)
    study = study_create(name="Predict", rubric_version=version, user=admin_user, raters_per_item=1,
                         sampling_policy={"name": "active_inference", "budget": 10})
    names = [f"p{k:02d}" for k in range(100)]
    items_import(study=study, filename="items.jsonl", text="\n".join(json.dumps(
        {"id": n, "context": n, "outputs": [{"system": "s", "content": n}]}) for n in names))
    out = active_prediction(study=study, jury=_jury(study, set(names[:20])))
    # The judges' variance as the squared error: 20 items with (4, 2, 5) (variance 7/3), 80 with none.
    m = np.r_[np.full(20, 7 / 3), np.zeros(80)]
    assert out["source"] == "judges" and out["oracle_saving"] == pytest.approx(1 - np.mean(np.sqrt(m)) ** 2 / m.mean())
    assert 0 < out["saving"] < out["oracle_saving"]
    buf = StringIO()
    call_command("draw_humans", "--study", study.slug, "--predict", stdout=buf)
    assert "no prediction: no judge has scored the study yet" in buf.getvalue()
    with pytest.raises(CommandError, match="no study"):
        call_command("draw_humans", "--study", "nope", stdout=StringIO())


@pytest.mark.django_db(transaction=True)
def test_the_report_weights_each_rating_by_its_probability(admin_user, client_for, by_hand):
    from annotation.stats.active import ipw_ppi_mean
    from judges.models import JudgeConfig, JudgeRun, JudgeScore
    from judges.report_trust import judge_trust
    from judges.tasks import active_draw_next
    from judges.selectors import study_jury

    version, _ = rubric_version_create(data=RUBRIC)
    study = study_create(name="Active report", rubric_version=version, user=admin_user, raters_per_item=1,
                         sampling_policy={"name": "active_inference", "budget": 8, "pilot": 0.5, "rounds": 1})
    names = [f"r{k:02d}" for k in range(20)]
    items_import(study=study, filename="items.jsonl", text="\n".join(json.dumps(
        {"id": n, "context": n, "outputs": [{"system": "s", "content": n}]}) for n in names))
    rater = make_user("active-report-rater")
    study_members_add(study=study, usernames=[rater.username], role="annotator")
    study_set_status(study=study, status="open")
    runs = [JudgeRun.objects.create(study=study, judge=JudgeConfig.objects.create(name=f"rj{j}", model="m"), config={},
                                    criteria=["quality"], status="done") for j in range(3)]
    items = list(Item.objects.filter(study=study).prefetch_related("outputs").order_by("pk"))
    for k, item in enumerate(items):
        for j, run in enumerate(runs):
            JudgeScore.objects.create(run=run, item=item, output=item.outputs.get(), criterion="quality", value=4,
                                      score=[4.0, 2.0, 5.0][j] if k % 3 == 0 else 4.0, status="scored")
    active_draw(study=study, jury=study_jury(study), seed=1)
    assert active_draw_next(study.pk) is None  # the pilot's items wait for their ratings: no next round yet
    section = judge_trust(study)
    block = section["data"]["criteria"]["quality"]["runs"][0]["systems"]["s"]["ipw_ppi_plus"]
    assert block["mean"] is None and "not rated yet" in block["reason"]
    c = client_for(rater)
    while True:
        c.get(f"/studies/{study.slug}/rate/")
        a = Assignment.objects.filter(study=study, rater=rater, status="active").select_related("item").first()
        if a is None:
            break
        assert c.post(f"/studies/{study.slug}/rate/{a.token}/submit/", {"r1__quality": "3"}).status_code == 302
    section = judge_trust(study)
    block = section["data"]["criteria"]["quality"]["runs"][0]["systems"]["s"]["ipw_ppi_plus"]
    drawn = [it for it in Item.objects.filter(study=study, sampling_probability__isnull=False).order_by("pk")]
    chosen = np.array([bool(it.slots_wanted) for it in drawn])
    run_name = section["data"]["criteria"]["quality"]["runs"][0]["name"]
    j = [f"(run {run.pk})" in run_name for run in runs].index(True)  # the run whose estimates the report shows
    first_judge = {it.pk: (4.0 if k % 3 else [4.0, 2.0, 5.0][j]) for k, it in enumerate(items)}
    expected = ipw_ppi_mean(np.where(chosen, 3.0, np.nan), [first_judge[it.pk] for it in drawn],
                            [it.sampling_probability for it in drawn], chosen)
    assert block["n_items"] == len(drawn) == 10 and block["n_rated"] == chosen.sum()
    assert block["mean"] == pytest.approx(expected["mean"])
    assert section["context"]["active"] is True
    # every drawn item rated: the task the last submit asked for draws the next (here the last) round, once
    nxt = active_draw_next(study.pk)
    assert nxt["round"] == 1 and nxt["items"] == 10 and nxt["left"] == 0
    assert active_draw_next(study.pk) is None
