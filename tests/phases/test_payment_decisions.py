"""Payment decisions are fair and explained: training answers are not attention checks, a rater who
passed training and rated is approved, failing training screens out (never a rejection), and a
rejection follows only the study's written attention policy."""

from __future__ import annotations

import csv
import html
import io

import pytest
from django.utils import timezone

from annotation.models import Assignment, CrowdParticipant, TrainingAttempt
from annotation.payments import RULES, payment_decision
from tests.phases.conftest import answer_training, enter, rate_items

pytestmark = pytest.mark.django_db


def finished(rater) -> None:
    """They reached the end (the completion code shown), as the rating loop records it."""
    CrowdParticipant.objects.filter(user=rater).update(finished_at=timezone.now())


def sheet(client_for, admin_user, study, **params) -> dict[str, dict]:
    resp = client_for(admin_user).get(f"/studies/{study.slug}/crowd-links/payments.csv", params)
    assert resp.status_code == 200, resp.content.decode()[:300]
    return {r["participant_id"]: r for r in csv.DictReader(io.StringIO(resp.content.decode()))}


def test_passing_training_one_of_two_then_rating_is_approved_not_rejected(crowd_study, link, client_for, admin_user):
    """The reported bug: training 1 of 2 (pass mark 0.5, passed), 6 items rated; the sheet said
    attention_checks 2, attention_failed 1, decision reject, payable_items 0."""
    enter(link, "p1")
    rater = CrowdParticipant.objects.get(participant_id="p1").user
    answer_training(crowd_study, rater, right=True)
    answer_training(crowd_study, rater, right=False)
    rate_items(crowd_study, rater, 6)
    finished(rater)
    row = sheet(client_for, admin_user, crowd_study, pay_per_item="0.20")["p1"]
    assert row["attention_checks"] == "0" and row["attention_failed"] == "0"
    assert row["training"] == "passed 1/2"
    assert row["decision"] == "approve" and row["payable_items"] == "6" and row["payment"] == "1.20"
    assert "passed training" in row["reason"]


def test_failing_training_screens_out_with_the_fixed_payment_never_a_rejection(crowd_study, link, client_for,
                                                                                admin_user):
    crowd_study.phases = {"attention_policy": {"reject_after_failed": 1}, "screened_out": {"payment": "0.45"}}
    crowd_study.save(update_fields=["phases"])
    from annotation.services.training import training_retry

    enter(link, "p2")
    rater = CrowdParticipant.objects.get(participant_id="p2").user
    for _ in range(2):
        answer_training(crowd_study, rater, right=False)
        answer_training(crowd_study, rater, right=False)
        if not TrainingAttempt.objects.filter(rater=rater, number=2).exists():
            training_retry(study=crowd_study, rater=rater)
    row = sheet(client_for, admin_user, crowd_study, pay_per_item="0.20")["p2"]
    assert row["decision"] == "screened_out" and row["payment"] == "0.45" and row["payable_items"] == "0"
    assert row["attention_failed"] == "0" and row["training"] == "failed 0/2, then 0/2"
    assert "not rejected" in row["reason"] and "50%" in row["reason"]


def test_rejection_only_under_the_policy_and_the_progress_page_says_the_same(crowd_study, link, client_for,
                                                                            admin_user):
    crowd_study.training_pass_mark = None
    crowd_study.phases = {"attention_policy": {"reject_after_failed": 2}}
    crowd_study.save(update_fields=["training_pass_mark", "phases"])
    for pid, failed in (("once", 1), ("twice", 2)):
        enter(link, pid)
        rater = CrowdParticipant.objects.get(participant_id=pid).user
        rate_items(crowd_study, rater, 3)
        finished(rater)
        ids = list(Assignment.objects.filter(rater=rater).values_list("id", flat=True)[:failed])
        Assignment.objects.filter(id__in=ids).update(is_attention_check=True, attention_passed=False)
    rows = sheet(client_for, admin_user, crowd_study, pay_per_item="0.10", bonus_per_item="0.05")
    assert rows["once"]["decision"] == "approve" and rows["once"]["payment"] == "0.20"
    assert rows["once"]["bonus"] == "0.10"
    assert rows["twice"]["decision"] == "reject" and rows["twice"]["bonus"] == "0.00"
    assert "failed 2 of 2 attention checks" in rows["twice"]["reason"]
    page = client_for(admin_user).get(f"/studies/{crowd_study.slug}/progress/").content.decode()
    for pid, row in rows.items():
        cell = page.split(f'data-rater="prolific-{pid}"')[1].split("</tr>")[0]
        assert f'data-decision="{row["decision"]}"' in cell and html.escape(row["reason"]) in cell
    # The panel's paste formats: ids to approve; `id,amount` to bonus, no header.
    admin = client_for(admin_user)
    approve = admin.get(f"/studies/{crowd_study.slug}/crowd-links/payments.csv", {"format": "bulk_approve"})
    assert approve.content.decode() == "once\n"
    bonus = admin.get(f"/studies/{crowd_study.slug}/crowd-links/payments.csv",
                      {"format": "bulk_bonus", "bonus_per_item": "0.05"})
    assert bonus.content.decode() == "once,0.10\n"
    assert admin.get(f"/studies/{crowd_study.slug}/crowd-links/payments.csv",
                     {"format": "bulk_bonus"}).status_code == 400


def test_payment_decision_is_explained_from_plain_facts():
    assert payment_decision(consent_declined=True).decision == "return"
    assert payment_decision(training=[(1, 2, None)], can_continue=True).decision == "pending"
    assert payment_decision(training=[(1, 2, None)]).decision == "return"  # left in training: nothing to pay
    d = payment_decision(training=[(0, 2, False), (1, 2, False)], training_failed_out=True, pass_mark=1.0,
                         checks=3, failed=3, reject_after=1)
    assert d.decision == "screened_out" and "failed 0/2, then 1/2" in d.reason  # never a rejection
    assert payment_decision(checks=4, failed=4, rated=6, finished=True).decision == "approve"  # no written policy
    assert payment_decision(checks=4, failed=2, rated=6, reject_after=2).decision == "reject"
    left = payment_decision(rated=3)
    assert (left.decision, left.rule) == ("partial", RULES["left_midway"][1])
