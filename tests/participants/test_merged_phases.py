"""Where participants' data meets the study's phases: phase records (consent, questionnaire answers)
are in the participant's download and go with an erasure; a passed deadline closes the study
through the scheduled task, run by a real Celery worker."""

from __future__ import annotations

import json
import time
from datetime import timedelta

import pytest
from django.utils import timezone

from annotation.models import PhaseRecord, Study
from annotation.services.participant_data import participant_erase
from config.celery import app


def _answer(study, rater):
    return PhaseRecord.objects.create(study=study, rater=rater, phase=PhaseRecord.Phase.PRE,
                                      outcome=PhaseRecord.Outcome.ANSWERED, answers={"native": "yes", "age": 31})


def test_download_holds_the_questionnaire_answers(rated, crowd_rater, client_for, admin_user):
    _answer(rated, crowd_rater)
    data = json.loads(client_for(admin_user).get(
        f"/studies/{rated.slug}/participants/{crowd_rater.pk}/data.json").content)
    assert [(q["phase"], q["outcome"], q["answers"]) for q in data["questionnaires"]] == [
        ("pre", "answered", {"native": "yes", "age": 31})]


@pytest.mark.parametrize("mode", ["delete", "pseudonymise"])
def test_erasure_takes_the_phase_records_with_it(rated, crowd_rater, annotator, admin_user, mode):
    _answer(rated, crowd_rater)
    kept = _answer(rated, annotator)
    erasure = participant_erase(study=rated, user_id=crowd_rater.pk, mode=mode, by=admin_user)
    assert not PhaseRecord.objects.filter(rater_id=crowd_rater.pk).exists()
    left = PhaseRecord.objects.exclude(pk=kept.pk)
    if mode == "delete":
        assert not left.exists()
    else:
        assert [r.rater.username for r in left] == [erasure.pseudonym]
    assert PhaseRecord.objects.filter(pk=kept.pk, rater=annotator).exists()


def test_beat_schedules_the_deadline_check_by_name():
    app.loader.import_default_modules()  # the apps' tasks modules, as a worker imports them at start
    entry = app.conf.beat_schedule["close-studies-past-deadline"]
    assert entry["task"] == "annotation.tasks.studies_close_past_deadline" and "args" not in entry
    assert entry["task"] in app.tasks


@pytest.mark.django_db(transaction=True)
def test_the_worker_closes_a_study_whose_deadline_passed(celery_worker_session, make_study):
    past = make_study("rrgen-001")
    future = make_study("aqua-003")
    Study.objects.filter(pk=past.pk).update(deadline=timezone.now() - timedelta(minutes=1))
    Study.objects.filter(pk=future.pk).update(deadline=timezone.now() + timedelta(days=1))
    app.send_task("annotation.tasks.studies_close_past_deadline")
    limit = time.monotonic() + 30
    while Study.objects.get(pk=past.pk).status != Study.Status.CLOSED:
        assert time.monotonic() < limit, "the worker did not close the study"
        time.sleep(0.2)
    assert Study.objects.get(pk=future.pk).status == Study.Status.OPEN
    assert past.changes.filter(field="deadline").count() == 1


def test_a_site_wide_audit_entry_has_no_study_and_the_schema_says_so(api_for, admin_user):
    """Found by the schema fuzzing: an entry without a study came back as null where the schema said string."""
    from annotation.audit import Action, audit_record

    audit_record(actor=admin_user, action=Action.SETTING_CHANGE, study=None, target="site")
    api = api_for(admin_user)
    entry = next(e for e in api.get("/api/audit/").json() if e["target"] == "site")
    assert entry["study"] is None
    schema = api.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()
    assert schema["components"]["schemas"]["AuditEntry"]["properties"]["study"].get("nullable") is True
