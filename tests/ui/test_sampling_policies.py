"""Sampling policies in real headless Chromium (issue 58 §5): an admin sets adaptive redundancy on the Manage page,
a rater rates an item of that study and a pair of an active-pairs study; the engine's records follow."""

from __future__ import annotations

import json

import pytest

from annotation.models import Assignment, Item, Study
from annotation.simulation.items import items_for
from tests.conftest import log_in, make_user

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

ONE_RESPONSE = "\n".join(json.dumps({"id": f"one-{i}", "context": f"Review {i}: the room was fine.",
                                     "outputs": [{"system": "sys-a", "content": f"Thank you for review {i}."}]})
                         for i in range(3))


def test_adaptive_study_set_on_manage_page_and_both_policies_rated(page_at, live_server, make_study, admin_user):
    rater = make_user("policy-walker")
    labels = make_study("rrgen-001", annotators=[rater], items_text=ONE_RESPONSE)
    pairs = make_study("compare-pairwise", annotators=[rater], items_text="\n".join(
        json.dumps(r) for r in items_for("compare-pairwise", 2, seed=3)),
        sampling_policy={"name": "active_pairs", "random_share": 0.3})

    admin = page_at(1400)
    log_in(admin, live_server, admin_user)
    admin.goto(f"{live_server.url}/studies/{labels.slug}/manage/")
    admin.fill("#id_sampling_policy", '{"name": "adaptive_redundancy", "min_raters": 2, "max_raters": 5, '
                                      '"target": 0.9, "criterion": "decision"}')
    admin.click("#settings button[type=submit]")
    admin.wait_for_selector("#settings :text('Saved')")
    labels.refresh_from_db()
    assert labels.sampling_policy["name"] == "adaptive_redundancy" and labels.raters_per_item == 5

    page = page_at(1400)
    log_in(page, live_server, rater)
    page.goto(f"{live_server.url}/studies/{labels.slug}/rate/")
    page.wait_for_selector("#ws-form[data-ready='1']")
    for key in "6764a":
        page.keyboard.press(key)
    page.keyboard.press("Enter")
    page.wait_for_selector("[data-progress]:has-text('1 done')")
    done = Assignment.objects.get(study=labels, rater=rater, status="submitted")
    assert Item.objects.get(pk=done.item_id).slots_wanted == 2  # one label, below the minimum: still open

    page.goto(f"{live_server.url}/studies/{pairs.slug}/rate/")
    page.wait_for_selector("#ws-form[data-ready='1']")
    for key in "6", "Enter", "3", "1", "c", "Enter":
        page.keyboard.press(key)
    page.wait_for_selector("[data-progress]:has-text('1 done')")
    a = Assignment.objects.get(study=pairs, rater=rater, status="submitted")
    assert a.sampling in ("random", "active") and 0 < a.sampling_probability <= 1
    assert Study.objects.get(pk=pairs.pk).sampling_policy == {"name": "active_pairs", "random_share": 0.3}


def test_active_inference_set_on_manage_page_predicted_on_plan_page_and_rated(page_at, live_server, make_study,
                                                                               admin_user):
    from annotation.services.active_inference import active_draw
    from judges.models import JudgeConfig, JudgeRun, JudgeScore
    from judges.selectors import study_jury

    rater = make_user("active-walker")
    study = make_study("rrgen-001", annotators=[rater], items_text=ONE_RESPONSE)
    admin = page_at(1400)
    log_in(admin, live_server, admin_user)
    admin.goto(f"{live_server.url}/studies/{study.slug}/manage/")
    admin.fill("#id_sampling_policy", '{"name": "active_inference", "budget": 0}')
    admin.click("#settings button[type=submit]")
    admin.wait_for_selector("#settings :text('budget: the number of items humans rate')")
    admin.fill("#id_sampling_policy", '{"name": "active_inference", "budget": 3, "pilot": 0.9}')
    admin.click("#settings button[type=submit]")
    admin.wait_for_selector("#settings :text('Saved')")
    study.refresh_from_db()
    key = study.sampling_policy["criterion"]
    assert study.sampling_policy["name"] == "active_inference" and study.sampling_policy["budget"] == 3

    runs = [JudgeRun.objects.create(study=study, judge=JudgeConfig.objects.create(name=f"walk-{j}", model="m"),
                                    config={}, criteria=[key], status="done") for j in range(3)]
    for k, item in enumerate(Item.objects.filter(study=study).prefetch_related("outputs")):
        for j, run in enumerate(runs):
            JudgeScore.objects.create(run=run, item=item, output=item.outputs.get(), criterion=key, value=4,
                                      score=[4.0, 2.0, 6.0][j] if k == 0 else 4.0, status="scored")
    admin.goto(f"{live_server.url}/studies/{study.slug}/plan/")
    admin.wait_for_selector("#active-sampling [data-active-saving]")
    assert "fewer human ratings" in admin.inner_text("#active-sampling")

    assert active_draw(study=study, jury=study_jury(study), seed=1)["drawn"] == 3  # a pilot of every item, π = 1
    page = page_at(1400)
    log_in(page, live_server, rater)
    page.goto(f"{live_server.url}/studies/{study.slug}/rate/")
    page.wait_for_selector("#ws-form[data-ready='1']")
    for key_press in "6764a":
        page.keyboard.press(key_press)
    page.keyboard.press("Enter")
    page.wait_for_selector("[data-progress]:has-text('1 done')")
    a = Assignment.objects.get(study=study, rater=rater, status="submitted")
    assert a.sampling == "active" and a.sampling_probability == 1.0
