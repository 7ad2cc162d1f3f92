"""The retention period: a scheduled task, run by a real Celery worker, replaces the panel and
session ids of participants whose period ran out, once, and leaves the others."""

from __future__ import annotations

import time
from datetime import timedelta

import pytest
from django.utils import timezone

from annotation.models import AuditEntry, CrowdParticipant, Rating
from config.celery import app

pytestmark = pytest.mark.django_db(transaction=True)


def test_beat_schedules_the_purge_by_name():
    app.loader.import_default_modules()  # the apps' tasks modules, as a worker imports them at start
    entry = app.conf.beat_schedule["purge-expired-panel-ids"]
    assert entry["task"] == "annotation.tasks.participant_ids_purge" and "args" not in entry
    assert entry["task"] in app.tasks


def test_the_worker_purges_expired_ids_once(celery_worker_session, rated, crowd_rater, study):
    study.retention_days = 30
    study.save(update_fields=["retention_days"])
    p = CrowdParticipant.objects.get()
    CrowdParticipant.objects.filter(pk=p.pk).update(started_at=timezone.now() - timedelta(days=31))
    ratings = Rating.objects.filter(assignment__rater=crowd_rater).count()
    app.send_task("annotation.tasks.participant_ids_purge")
    deadline = time.monotonic() + 30
    while CrowdParticipant.objects.get().ids_purged_at is None:
        assert time.monotonic() < deadline, "the worker did not purge"
        time.sleep(0.2)
    p = CrowdParticipant.objects.select_related("user").get()
    assert p.participant_id.startswith("purged-") and p.session_id == ""
    assert p.user.pk == crowd_rater.pk and p.user.username == f"prolific-{p.participant_id}"
    assert Rating.objects.filter(assignment__rater=crowd_rater).count() == ratings  # ratings stay
    assert not AuditEntry.objects.filter(target__contains="5f1a2b3c4d").exists()
    purge = AuditEntry.objects.get(action="ids_purge")
    assert purge.actor is None and purge.detail["participants"] == 1
    first = p.participant_id
    app.send_task("annotation.tasks.participant_ids_purge")
    time.sleep(2)
    assert CrowdParticipant.objects.get().participant_id == first  # idempotent
    assert AuditEntry.objects.filter(action="ids_purge").count() == 1


def test_within_the_period_or_without_one_nothing_is_purged(rated, study):
    from annotation.services.participant_data import participant_ids_purge

    assert participant_ids_purge() == 0  # no retention period set
    study.retention_days = 30
    study.save(update_fields=["retention_days"])
    assert participant_ids_purge() == 0  # started today
    assert CrowdParticipant.objects.get().participant_id == "5f1a2b3c4d"
