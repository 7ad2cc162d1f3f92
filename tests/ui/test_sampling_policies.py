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
