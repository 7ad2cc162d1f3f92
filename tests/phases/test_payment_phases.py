"""The payment decision follows the phase each participant reached, driven through the real routes:
every phase path of a crowd study (declined, consent page only, failed the instructions' check, failed
training, left midway, finished, came back after a break, returned the task, failed the attention
checks), with the rule shown beside each decision in the sheet and on the Progress page. The expected
rows are what each path did, planted here, not what the code computes."""

from __future__ import annotations

import csv
import html
import io
from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from annotation.models import Assignment, CrowdParticipant
from annotation.payments import RULES
from annotation.services.crowd import crowd_link_create
from tests.phases.conftest import phases_study
from tests.phases.walk import Walk, after_a_break

pytestmark = pytest.mark.django_db

QUOTA = 3


@pytest.fixture
def study(make_study):
    return phases_study(make_study, n_items=8)


@pytest.fixture
def link(study, admin_user):
    return crowd_link_create(study=study, user=admin_user, provider="prolific", completion_code="PAID2026",
                             time_limit_minutes=60, items_per_participant=QUOTA)


def walk(study, link, pid: str, client: Client | None = None) -> Walk:
    return Walk(study, f"/crowd/{link.token}/?PROLIFIC_PID={pid}&STUDY_ID=st&SESSION_ID=se-{pid}", client)


def finish(w: Walk) -> None:
    assert w.rate(QUOTA)["state"] == "questionnaire"
    assert w.post_questionnaire()["state"] == "done"


def every_path(study, link) -> None:
    assert walk(study, link, "declined").consent(agree=False)["state"] == "screened_out"
    assert walk(study, link, "consentonly").state()["state"] == "consent"
    check = walk(study, link, "checkfail")
    check.consent()
    check.pre()
    assert check.instructions(right=False).status_code == 400  # then they leave
    train = walk(study, link, "trainfail")
    train.consent()
    train.pre()
    state = train.instructions().json()
    for attempt in (1, 2):
        while state["state"] == "training":
            state = train.answer(state, right=False)
        if attempt == 1:
            assert state["state"] == "training_failed"
            state = train.retry_training()
    assert state["state"] == "screened_out" and state["reason"] == "training_failed"
    midway = walk(study, link, "midway")
    assert midway.to_rating()["state"] == "rate"
    midway.rate(1)
    done = walk(study, link, "finished")
    done.to_rating()
    finish(done)
    first = walk(study, link, "breaker")  # rates one, closes the tab, comes back later in a new browser
    first.to_rating()
    first.rate(1)
    assert walk(study, link, "breaker", Client()).entry.status_code == 409  # too soon: the id is in use
    after_a_break(study, "breaker")
    finish(walk(study, link, "breaker", Client()))
    gone = walk(study, link, "returner")
    gone.to_rating()
    gone.rate(1)
    assert gone.client.post(f"/studies/{study.slug}/crowd/return/").status_code == 200
    careless = walk(study, link, "careless")
    careless.to_rating()
    finish(careless)
    ids = list(Assignment.objects.filter(rater__username="prolific-careless", item__is_training=False)
               .values_list("id", flat=True)[:2])  # two of their items were attention checks they failed
    Assignment.objects.filter(id__in=ids).update(is_attention_check=True, attention_passed=False)


# pid -> (decision, rule, phase reached, payable items); pay 0.25 per item, screen-out 0.40 (CROWD_PHASES)
WHILE_OPEN = {
    "declined": ("return", "declined", "declined consent", 0),
    "consentonly": ("pending", "in_progress", "opened the link only", 0),
    "checkfail": ("pending", "in_progress", "pre-study questionnaire answered", 0),
    "trainfail": ("screened_out", "screened_out", "training failed 0/2, then 0/2", 0),
    "midway": ("pending", "in_progress", "rated 1 item", 0),
    "finished": ("approve", "finished", "finished", QUOTA),
    "breaker": ("approve", "finished", "finished", QUOTA),
    "returner": ("return", "returned", "returned the task after: rated 1 item", 0),
    "careless": ("reject", "attention", "finished", 0),
}
AFTER_TIME_UP = {**WHILE_OPEN,
                 "consentonly": ("return", "left_before_rating", "opened the link only", 0),
                 "checkfail": ("return", "left_before_rating", "pre-study questionnaire answered", 0),
                 "midway": ("partial", "left_midway", "rated 1 item", 1)}


def sheet(client_for, admin_user, study) -> dict[str, dict]:
    resp = client_for(admin_user).get(f"/studies/{study.slug}/crowd-links/payments.csv", {"pay_per_item": "0.25"})
    assert resp.status_code == 200, resp.content.decode()[:300]
    return {r["participant_id"]: r for r in csv.DictReader(io.StringIO(resp.content.decode()))}


def check(rows: dict, expected: dict) -> None:
    assert set(rows) == set(expected)
    for pid, (decision, rule, reached, payable) in expected.items():
        row = rows[pid]
        got = (row["decision"], row["rule"], row["phase_reached"], int(row["payable_items"]))
        assert got == (decision, RULES[rule][1], reached, payable), pid
        assert RULES[rule][0] == decision and row["reason"]
        want = "0.40" if decision == "screened_out" else f"{0.25 * payable:.2f}"
        assert row["payment"] == want, pid


def test_every_phase_path_gets_the_decision_of_the_phase_it_reached(study, link, client_for, admin_user):
    every_path(study, link)
    rows = sheet(client_for, admin_user, study)
    check(rows, WHILE_OPEN)
    assert rows["careless"]["attention_failed"] == "2" and "policy rejects at 2" in rows["careless"]["reason"]
    admin = client_for(admin_user)
    approve = admin.get(f"/studies/{study.slug}/crowd-links/payments.csv", {"format": "bulk_approve"})
    assert approve.content.decode().split() == ["breaker", "finished"]
    # The Progress page shows each decision with its rule, as the sheet does.
    page = admin.get(f"/studies/{study.slug}/progress/").content.decode()
    for pid, row in rows.items():
        cell = page.split(f'data-rater="prolific-{pid}"')[1].split("</tr>")[0]
        assert f'data-decision="{row["decision"]}"' in cell, pid
        assert html.escape(row["rule"]) in cell and html.escape(row["reason"]) in cell, pid

    # Their time runs out: who left is no longer pending.
    CrowdParticipant.objects.update(deadline=timezone.now() - timedelta(minutes=1))
    check(sheet(client_for, admin_user, study), AFTER_TIME_UP)


def test_closing_the_study_ends_the_pending_ones_too(study, link, client_for, admin_user):
    walk(study, link, "consentonly").state()
    midway = walk(study, link, "midway")
    midway.to_rating()
    midway.rate(2)
    assert {r["decision"] for r in sheet(client_for, admin_user, study).values()} == {"pending"}
    study.status = "closed"
    study.save(update_fields=["status"])
    rows = sheet(client_for, admin_user, study)
    assert (rows["consentonly"]["decision"], rows["consentonly"]["payment"]) == ("return", "0.00")
    assert (rows["midway"]["decision"], rows["midway"]["payable_items"], rows["midway"]["payment"]) == (
        "partial", "2", "0.50")
