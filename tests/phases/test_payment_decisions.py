"""Payment decisions are fair and explained: training answers are not attention checks, a rater who
passed training and rated is approved, failing training screens out (never a rejection), and a
rejection follows only the study's written attention policy."""

from __future__ import annotations

import csv
import io

import pytest

from annotation.models import CrowdParticipant
from tests.phases.conftest import answer_training, enter, rate_items

pytestmark = pytest.mark.django_db


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
    row = sheet(client_for, admin_user, crowd_study, pay_per_item="0.20")["p1"]
    assert row["attention_checks"] == "0" and row["attention_failed"] == "0"
    assert row["training"] == "passed 1/2"
    assert row["decision"] == "approve" and row["payable_items"] == "6" and row["payment"] == "1.20"
    assert "passed training" in row["reason"]
