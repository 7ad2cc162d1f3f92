"""Numbers from query strings and forms have bounds, refused by a message naming the field: pay and bonus
per item (`payments.csv?pay_per_item=1e30` answered 500), the retention period (a billion days was
accepted, and then broke the purge), time on task. And the periodic retention purge over many studies
goes on past one study's failure, naming it in the log."""

from __future__ import annotations

import csv
import io
import logging
from datetime import timedelta

import pytest
from django.utils import timezone

from annotation.models import Assignment, CrowdParticipant, Study
from annotation.services.crowd import crowd_link_create
from annotation.services.participant_data import participant_ids_purge
from annotation.services.studies import RETENTION_DAYS_MAX, StudyError, study_settings_update
from tests.participants.conftest import crowd_rater, rated, study  # noqa: F401 (fixtures)

pytestmark = pytest.mark.django_db

SETTINGS = {"name": "Renamed", "raters_per_item": 2, "attention_check_rate": 0, "attention_fail_pause": 0,
            "randomize_items": "on", "randomize_outputs": "on", "counterbalance": "on", "confirm": "on"}


@pytest.mark.parametrize("query, field", [
    ({"pay_per_item": "1e30"}, "pay_per_item"),
    ({"pay_per_item": "1000.01"}, "pay_per_item"),
    ({"pay_per_item": "-0.10"}, "pay_per_item"),
    ({"pay_per_item": "NaN"}, "pay_per_item"),
    ({"pay_per_item": "0.00001"}, "pay_per_item"),
    ({"pay_per_item": "0.15", "bonus_per_item": "1e30"}, "bonus_per_item"),
    ({"pay_per_item": "0.15", "bonus_per_item": "Infinity", "format": "bulk_bonus"}, "bonus_per_item"),
])
def test_payment_amounts_out_of_bounds_are_refused_by_field(rated, client_for, admin_user, query, field):
    response = client_for(admin_user).get(f"/studies/{rated.slug}/crowd-links/payments.csv", query)
    assert response.status_code == 400
    assert response.content.decode().startswith(f"{field}: ") and "from 0 to 1000" in response.content.decode()


def test_payment_amounts_within_bounds_are_paid(rated, client_for, admin_user):
    # only a participant who finished is approved (annotation.payments.RULES)
    CrowdParticipant.objects.filter(participant_id="5f1a2b3c4d").update(finished_at=timezone.now())
    response = client_for(admin_user).get(f"/studies/{rated.slug}/crowd-links/payments.csv",
                                          {"pay_per_item": "1000", "bonus_per_item": "0.0125"})
    assert response.status_code == 200
    row = next(r for r in csv.DictReader(io.StringIO(response.content.decode())) if r["participant_id"] == "5f1a2b3c4d")
    assert row["pay_per_item"] == "1000" and row["payment"] == "2000.00" and row["bonus"] == "0.02"


def test_retention_beyond_ten_years_is_refused_by_the_form_the_api_and_the_service(
        study, client_for, api_for, admin_user, preset_version):
    response = client_for(admin_user).post(f"/studies/{study.slug}/settings/",
                                           {**SETTINGS, "retention_days": 1_000_000_000})
    assert response.status_code == 400
    assert f"less than or equal to {RETENTION_DAYS_MAX}" in response.content.decode()
    study.refresh_from_db()
    assert study.retention_days is None and study.name != "Renamed"  # nothing of the form was stored
    created = api_for(admin_user).post("/api/studies/", {
        "name": "Kept forever", "rubric_version": preset_version["rrgen-001"].pk, "retention_days": 10 ** 9},
        format="json")
    assert created.status_code == 400 and "retention_days" in created.json()
    assert not Study.objects.filter(name="Kept forever").exists()
    with pytest.raises(StudyError, match="^retention_days: "):
        study_settings_update(study=study, user=admin_user, changes={"retention_days": RETENTION_DAYS_MAX + 1})
    assert client_for(admin_user).post(f"/studies/{study.slug}/settings/",
                                       {**SETTINGS, "retention_days": RETENTION_DAYS_MAX}).status_code == 302
    # The settings form shows the period, so saving other settings from the page keeps it.
    page = client_for(admin_user).get(f"/studies/{study.slug}/manage/").content.decode()
    assert f'name="retention_days" value="{RETENTION_DAYS_MAX}"' in page


def test_one_failing_study_does_not_stop_the_purge_of_the_others(make_study, admin_user, caplog):
    """Studies purge in id order: the first holds a retention stored before the bound (a billion days
    overflows the date arithmetic), the second a normal one; the second's ids are purged all the same."""
    from django.test import Client

    studies = [make_study("rrgen-001", slug=f"purge-{i}") for i in range(3)]
    for i, s in enumerate(studies):
        link = crowd_link_create(study=s, user=admin_user, provider="prolific", completion_code=f"C{i}")
        assert Client().get(f"/crowd/{link.token}/", {"PROLIFIC_PID": f"pid{i}", "STUDY_ID": "s",
                                                       "SESSION_ID": f"se{i}"}).status_code == 302
    Study.objects.filter(pk=studies[0].pk).update(retention_days=10 ** 9)
    Study.objects.filter(pk__in=[s.pk for s in studies[1:]]).update(retention_days=30)
    CrowdParticipant.objects.update(started_at=timezone.now() - timedelta(days=31))
    with caplog.at_level(logging.ERROR, logger="annotation.services.participant_data"):
        assert participant_ids_purge() == 2
    ids = dict(CrowdParticipant.objects.values_list("link__study__slug", "participant_id"))
    assert ids["purge-0"] == "pid0"
    assert ids["purge-1"].startswith("purged-") and ids["purge-2"].startswith("purged-")
    failed = [r for r in caplog.records if studies[0].slug in r.getMessage()]
    assert len(failed) == 1 and failed[0].exc_info[0] is OverflowError


@pytest.mark.parametrize("reported", [10 ** 30, 2 ** 63, 86_400_001])
def test_time_on_task_beyond_a_day_is_held_to_a_day(rated, crowd_rater, api_for, reported):
    """The client reports its own total; a clock gone wrong is held to a day, never stored as given nor a 500."""
    a = Assignment.objects.filter(rater=crowd_rater, status=Assignment.Status.ACTIVE).get()
    api = api_for(crowd_rater)
    draft = api.post(f"/api/studies/{rated.slug}/rate/{a.token}/draft/",
                     {"answers": {}, "time_on_task_ms": reported}, format="json")
    assert draft.status_code == 200, draft.content
    a.refresh_from_db()
    assert a.time_on_task_ms == 86_400_000
    negative = api.post(f"/api/studies/{rated.slug}/rate/{a.token}/draft/", {"answers": {}, "time_on_task_ms": -5},
                        format="json")
    assert negative.status_code == 400 and "time_on_task_ms" in negative.json()
