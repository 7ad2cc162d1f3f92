"""A participant's data: the download holds everything they gave; erasure deletes it or keeps it
under a random id, keeps the study consistent and is recorded; only site admins reach either."""

from __future__ import annotations

import csv
import io
import json

import pytest
from django.contrib.auth import get_user_model

from annotation.models import (Assignment, AuditEntry, CrowdParticipant, DatasetRelease, Item, ParticipantErasure,
                               Rating, StudyChange, StudyMember, TrainingAttempt)
from annotation.services.assignments import assignment_next
from annotation.services.participant_data import ParticipantError, participant_erase, participant_export


def slots_consistent(study) -> bool:
    """Every item's slots_taken equals its live slotted assignments."""
    for item in Item.objects.filter(study=study, is_attention_check=False):
        live = Assignment.objects.filter(item=item, slot__isnull=False).exclude(status="expired").count()
        if item.slots_taken != live:
            return False
    return True


def test_download_holds_every_rating_and_time_and_no_system(rated, crowd_rater, client_for, admin_user):
    resp = client_for(admin_user).get(f"/studies/{rated.slug}/participants/{crowd_rater.pk}/data.json")
    assert resp.status_code == 200 and "attachment" in resp["Content-Disposition"]
    data = json.loads(resp.content)
    submitted = Assignment.objects.filter(study=rated, rater=crowd_rater, status="submitted")
    assert len([a for a in data["assignments"] if a["status"] == "submitted"]) == submitted.count() == 2
    assert sum(len(a["ratings"]) for a in data["assignments"]) == Rating.objects.filter(
        assignment__rater=crowd_rater).count() > 0
    assert data["crowd"][0]["participant_id"] == "5f1a2b3c4d" and data["crowd"][0]["session_id"] == "sess9"
    assert all(a["submitted_at"] for a in data["assignments"] if a["status"] == "submitted")
    assert data["questionnaires"] == []  # the hook, until questionnaires exist
    systems = set(rated.items.values_list("outputs__system", flat=True))
    assert not any(s in resp.content.decode() for s in systems)
    csv_resp = client_for(admin_user).get(f"/studies/{rated.slug}/participants/{crowd_rater.pk}/data.csv")
    rows = list(csv.DictReader(io.StringIO(csv_resp.content.decode())))
    assert len(rows) == Rating.objects.filter(assignment__rater=crowd_rater).count() + 1  # + the open one
    assert {r["criterion"] for r in rows if r["criterion"]} >= {"fluency", "decision"}
    entry = AuditEntry.objects.filter(action="participant_download").latest("id")
    assert entry.actor == admin_user and entry.target == crowd_rater.username and entry.study == rated


def test_delete_frees_the_places_and_leaves_nothing_of_them(rated, crowd_rater, annotator, admin_user):
    rated_items = set(Assignment.objects.filter(rater=crowd_rater, status="submitted").values_list("item", flat=True))
    others = Rating.objects.filter(assignment__rater=annotator).count()
    erasure = participant_erase(study=rated, user_id=crowd_rater.pk, mode="delete", by=admin_user)
    assert erasure.ratings > 0 and erasure.assignments == 3 and erasure.by == admin_user
    assert not get_user_model().objects.filter(username="prolific-5f1a2b3c4d").exists()  # named after the panel id
    assert not CrowdParticipant.objects.exists() and not StudyMember.objects.filter(user_id=crowd_rater.pk).exists()
    assert not Assignment.objects.filter(rater_id=crowd_rater.pk).exists()
    assert Rating.objects.count() == others  # the other rater's ratings untouched
    assert slots_consistent(rated)
    # their items are open to others again: a new rater is served one of them
    newcomer = get_user_model().objects.create_user("newcomer")
    StudyMember.objects.create(study=rated, user=newcomer, role="annotator")
    served = {assignment_next(study=rated, rater=newcomer).item_id for _ in range(1)}
    assert served <= set(rated.items.values_list("id", flat=True))
    assert not StudyChange.objects.filter(new__contains="5f1a2b3c4d").exists()
    assert not AuditEntry.objects.filter(target__contains="5f1a2b3c4d").exists()
    assert rated_items  # they had rated items, now gone from every table above


def test_pseudonymise_keeps_ratings_under_a_random_id_without_panel_ids(rated, crowd_rater, admin_user):
    from annotation.reports.ratings import ratings_fingerprint

    mine = set(Rating.objects.filter(assignment__rater=crowd_rater).values_list("id", flat=True))
    fingerprint = ratings_fingerprint(rated)
    erasure = participant_erase(study=rated, user_id=crowd_rater.pk, mode="pseudonymise", by=admin_user)
    assert ratings_fingerprint(rated) != fingerprint  # cached reports naming them are recomputed
    stand_in = get_user_model().objects.get(username=erasure.pseudonym)
    assert erasure.pseudonym.startswith("erased-") and not stand_in.is_active and not stand_in.has_usable_password()
    assert set(Rating.objects.filter(assignment__rater=stand_in).values_list("id", flat=True)) == mine
    p = CrowdParticipant.objects.get()
    assert p.user == stand_in and p.participant_id == erasure.pseudonym and p.session_id == ""
    assert not get_user_model().objects.filter(pk=crowd_rater.pk).exists()
    assert StudyMember.objects.get(user=stand_in).status == "removed"
    assert not Assignment.objects.filter(rater=stand_in, status="active").exists()  # the open one released
    assert slots_consistent(rated)
    from annotation.datasets import export_chunks

    exported = b"".join(c if isinstance(c, bytes) else c.encode() for c in export_chunks(rated, "csv")).decode()
    assert "5f1a2b3c4d" not in exported and erasure.pseudonym in exported


def test_invited_rater_keeps_their_account_and_the_record_lists_releases(rated, annotator, admin_user):
    DatasetRelease.objects.create(study=rated, version="1.0.0", format="csv", status="ready")
    erasure = participant_erase(study=rated, user_id=annotator.pk, mode="delete", by=admin_user)
    assert get_user_model().objects.filter(pk=annotator.pk).exists()  # a password account: theirs, not the study's
    assert erasure.releases == ["1.0.0"]
    assert ParticipantErasure.objects.get().by_name == "boss"
    entry = AuditEntry.objects.get(action="participant_erase")
    assert entry.target == erasure.pseudonym and entry.detail["mode"] == "delete"
    assert entry.detail["releases_kept"] == ["1.0.0"]


def test_bad_mode_or_non_member_is_refused_and_nothing_changes(rated, crowd_rater, outsider, admin_user):
    n = Rating.objects.count()
    with pytest.raises(ParticipantError, match="mode"):
        participant_erase(study=rated, user_id=crowd_rater.pk, mode="shred", by=admin_user)
    with pytest.raises(ParticipantError, match="user"):
        participant_erase(study=rated, user_id=outsider.pk, mode="delete", by=admin_user)
    assert Rating.objects.count() == n and not ParticipantErasure.objects.exists()
    with pytest.raises(ParticipantError):
        participant_export(study=rated, user_id="x")


def test_erase_page_asks_then_erases(rated, crowd_rater, client_for, admin_user):
    client = client_for(admin_user)
    manage = client.get(f"/studies/{rated.slug}/manage/").content.decode()
    assert f"/participants/{crowd_rater.pk}/erase/" in manage
    page = client.get(f"/studies/{rated.slug}/participants/{crowd_rater.pk}/erase/")
    assert page.status_code == 200 and 'value="pseudonymise"' in page.content.decode()
    bad = client.post(f"/studies/{rated.slug}/participants/{crowd_rater.pk}/erase/", {"mode": ""})
    assert bad.status_code == 400 and not ParticipantErasure.objects.exists()
    done = client.post(f"/studies/{rated.slug}/participants/{crowd_rater.pk}/erase/", {"mode": "pseudonymise"})
    assert done.status_code == 302 and ParticipantErasure.objects.get().mode == "pseudonymise"
    log = client.get("/audit/").content.decode()
    assert "Participant&#x27;s data erased" in log and ParticipantErasure.objects.get().pseudonym in log


def test_api_download_and_erase(rated, crowd_rater, api_for, admin_user):
    api = api_for(admin_user)
    data = api.get(f"/api/studies/{rated.slug}/participants/{crowd_rater.pk}/data/")
    assert data.status_code == 200 and json.loads(data.content)["participant"]["username"] == crowd_rater.username
    as_csv = api.get(f"/api/studies/{rated.slug}/participants/{crowd_rater.pk}/data.csv")
    assert as_csv.status_code == 200 and as_csv.content.decode().startswith("item,")
    bad = api.post(f"/api/studies/{rated.slug}/participants/{crowd_rater.pk}/erase/", {"mode": "x"}, format="json")
    assert bad.status_code == 400 and "mode" in bad.json()
    resp = api.post(f"/api/studies/{rated.slug}/participants/{crowd_rater.pk}/erase/", {"mode": "delete"},
                    format="json")
    assert resp.status_code == 200 and resp.json()["mode"] == "delete" and resp.json()["ratings"] > 0
    again = api.post(f"/api/studies/{rated.slug}/participants/{crowd_rater.pk}/erase/", {"mode": "delete"},
                     format="json")
    assert again.status_code == 404
    log = api.get("/api/audit/", {"study": rated.slug, "action": "participant_erase"}).json()
    assert [e["target"] for e in log] == [resp.json()["pseudonym"]] and log[0]["actor_name"] == "boss"


@pytest.mark.parametrize("who", ["annotator", "researcher", "outsider", "owner", "crowd_rater"])
def test_nobody_but_site_admins_reaches_them(who, rated, crowd_rater, request, client_for, api_for):
    if who == "owner":  # a study's owner manages it, but is no site admin
        user = get_user_model().objects.create_user("owner")
        rated.created_by = user
        rated.save(update_fields=["created_by"])
    else:
        user = request.getfixturevalue(who)
    base = f"/studies/{rated.slug}/participants/{crowd_rater.pk}"
    client = client_for(user)
    assert client.get(f"{base}/data.json").status_code == 404
    assert client.get(f"{base}/data.csv").status_code == 404
    assert client.post(f"{base}/erase/", {"mode": "delete"}).status_code == 404
    assert client.get("/audit/").status_code == 404
    api = api_for(user)
    assert api.get(f"/api{base}/data/").status_code == 403
    assert api.post(f"/api{base}/erase/", {"mode": "delete"}, format="json").status_code == 403
    assert api.get("/api/audit/").status_code == 403
    assert api_for(None).get(f"/api{base}/data/").status_code == 403
    assert Rating.objects.filter(assignment__rater=crowd_rater).exists() and not ParticipantErasure.objects.exists()
    assert not AuditEntry.objects.filter(action="participant_download").exists()
