"""Services of study management: members, rater pause/remove, lifecycle, settings log, invitations."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.utils import timezone

from annotation.models import Assignment, Rating, Study, StudyChange, StudyInvitation, StudyMember
from annotation.services import invitations, members
from annotation.services.assignments import RaterPaused, assignment_next
from annotation.services.studies import NeedsConfirmation, StudyError, study_set_status, study_settings_update, \
    study_transitions
from tests.conftest import make_user
from tests.manage.conftest import rate_one

pytestmark = pytest.mark.django_db


# ---------------------------------------------------------------- adding members


def test_paste_adds_many_by_username_or_email(study, admin_user):
    a, b = make_user("ann"), make_user("bob")
    b.email = "Bob@Example.org"
    b.save()
    added = members.members_add(study=study, rows=members.parse_pasted("ann,\nbob@example.org ; "), role="annotator",
                                user=admin_user)
    assert {m.user.username for m in added} == {"ann", "bob"}
    assert StudyMember.objects.get(study=study, user=b).role == "annotator"
    assert StudyChange.objects.filter(study=study, field="members", new__contains="ann").exists()


def test_paste_refuses_all_and_names_each_unknown(study):
    make_user("ann")
    with pytest.raises(members.MembersError) as exc:
        members.members_add(study=study, rows=members.parse_pasted("ann\nghost\nnobody@x.org"), role="annotator")
    assert [(e[1], e[2]) for e in exc.value.errors] == [("ghost", "no such user"), ("nobody@x.org", "no such user")]
    assert not StudyMember.objects.filter(study=study, user__username="ann").exists()


def test_csv_roles_and_line_numbers(study):
    make_user("ann"), make_user("cy")
    rows = members.parse_csv("username,email,role\nann,,researcher\ncy\n")
    added = members.members_add(study=study, rows=rows, role="annotator")
    assert {m.user.username: m.role for m in added} == {"ann": "researcher", "cy": "annotator"}
    with pytest.raises(members.MembersError) as exc:
        members.members_add(study=study, rows=members.parse_csv("ann\nzed,z@x.org\n"), role="annotator")
    assert exc.value.errors == [(2, "zed", "no such user")]
    with pytest.raises(members.MembersError) as exc:
        members.parse_csv("ann,,boss\n")
    assert exc.value.errors[0][0] == 1 and "role" in exc.value.errors[0][2]


# ---------------------------------------------------------------- pause, resume, remove


def test_pause_releases_open_assignments_and_blocks_new_items(study, annotator, admin_user):
    held = assignment_next(study=study, rater=annotator)
    member = members.member_pause(study=study, user_id=annotator.pk, user=admin_user)
    assert member.status == "paused" and member.released == 1
    held.refresh_from_db()
    assert held.status == Assignment.Status.EXPIRED and held.slot is None
    assert held.item.__class__.objects.get(pk=held.item_id).slots_taken == 0
    with pytest.raises(RaterPaused):
        assignment_next(study=study, rater=annotator)
    members.member_resume(study=study, user_id=annotator.pk, user=admin_user)
    assert assignment_next(study=study, rater=annotator) is not None


def test_remove_keeps_ratings_marks_member_and_hides_study(study, annotator, client_for):
    rated = rate_one(study, annotator)
    assignment_next(study=study, rater=annotator)  # one more held
    member = members.member_remove(study=study, user_id=annotator.pk)
    assert member.status == "removed" and member.removed_at is not None
    assert Rating.objects.filter(assignment=rated).exists()
    assert not Assignment.objects.filter(study=study, rater=annotator, status="active").exists()
    with pytest.raises(RaterPaused):
        assignment_next(study=study, rater=annotator)
    page = client_for(annotator).get(f"/studies/{study.slug}/rate/")
    assert page.status_code == 404
    with pytest.raises(members.MembersError):
        members.member_pause(study=study, user_id=annotator.pk)


def test_unknown_member_is_refused(study, outsider):
    with pytest.raises(members.MembersError, match="not a member"):
        members.member_pause(study=study, user_id=outsider.pk)


# ---------------------------------------------------------------- lifecycle


def test_lifecycle_with_consequences_and_release(study, annotator, admin_user):
    assignment_next(study=study, rater=annotator)
    labels = {t.status: t for t in study_transitions(study)}
    assert set(labels) == {"paused", "closed"}
    assert "1 open assignment is released" in labels["closed"].consequence
    study_set_status(study=study, status="paused", user=admin_user)
    assert not Assignment.objects.filter(study=study, status="active").exists()
    assert assignment_next(study=study, rater=annotator) is None
    study_set_status(study=study, status="closed", user=admin_user)
    assert [t.label for t in study_transitions(study)] == ["Reopen study"]
    study_set_status(study=study, status="open", user=admin_user)
    assert study.status == Study.Status.OPEN
    assert list(StudyChange.objects.filter(study=study, field="status").values_list("old", "new"))[::-1] == [
        ("draft", "open"), ("open", "paused"), ("paused", "closed"), ("closed", "open")]
    with pytest.raises(StudyError):
        study_set_status(study=study, status="draft")


# ---------------------------------------------------------------- settings


def test_settings_change_is_logged(study, admin_user):
    log = study_settings_update(study=study, user=admin_user,
                                changes={"name": "Renamed", "raters_per_item": 3, "assignment_expiry_minutes": 5})
    assert {(c.field, c.old, c.new) for c in log} == {("name", "Test rrgen-001", "Renamed"),
                                                      ("assignment_expiry_minutes", "—", "5")}
    study.refresh_from_db()
    assert study.name == "Renamed" and study.assignment_expiry_minutes == 5
    assert all(c.user == admin_user for c in log)


def test_study_expiry_sets_the_lease(study, annotator):
    study_settings_update(study=study, user=None, changes={"assignment_expiry_minutes": 7})
    a = assignment_next(study=study, rater=annotator)
    assert timedelta(minutes=6) < a.expires_at - timezone.now() <= timedelta(minutes=7)


def test_change_affecting_ratings_needs_confirmation(study, annotator, admin_user):
    rate_one(study, annotator)
    with pytest.raises(NeedsConfirmation) as exc:
        study_settings_update(study=study, user=admin_user, changes={"raters_per_item": 2, "name": "X"})
    assert [f for f, _ in exc.value.consequences] == ["raters_per_item"]
    study.refresh_from_db()
    assert study.raters_per_item == 3 and study.name != "X"  # nothing half stored
    study_settings_update(study=study, user=admin_user, changes={"raters_per_item": 2}, confirmed=True)
    study.refresh_from_db()
    assert study.raters_per_item == 2


def test_bad_setting_refused(study):
    with pytest.raises(StudyError, match="raters_per_item"):
        study_settings_update(study=study, user=None, changes={"raters_per_item": 0})
    with pytest.raises(StudyError, match="slug"):
        study_settings_update(study=study, user=None, changes={"slug": "x"})


# ---------------------------------------------------------------- invitations


def test_invitation_single_use_creates_annotator(study, admin_user):
    inv = invitations.invitation_create(study=study, user=admin_user, days=7, max_uses=1)
    assert len(inv.token) >= 40
    user = invitations.invitation_accept(token=inv.token, username="newbie", password="a-Long-pass-9")
    assert StudyMember.objects.get(study=study, user=user).role == "annotator"
    assert assignment_next(study=study, rater=user) is not None
    with pytest.raises(invitations.InvitationError, match="used already"):
        invitations.invitation_accept(token=inv.token, username="second", password="a-Long-pass-9")
    assert not get_user_model().objects.filter(username="second").exists()


def test_invitation_refusals_store_nothing(study, admin_user):
    inv = invitations.invitation_create(study=study, user=admin_user, days=1, max_uses=None)
    with pytest.raises(invitations.InvitationError) as exc:
        invitations.invitation_accept(token=inv.token, username="rater1", password="a-Long-pass-9")
    assert exc.value.field == "username"
    with pytest.raises(invitations.InvitationError) as exc:
        invitations.invitation_accept(token=inv.token, username="fresh", password="123")
    assert exc.value.field == "password"
    inv.refresh_from_db()
    assert inv.uses == 0
    invitations.invitation_revoke(study=study, invitation_id=inv.pk, user=admin_user)
    with pytest.raises(invitations.InvitationError, match="revoked"):
        invitations.invitation_accept(token=inv.token, username="fresh", password="a-Long-pass-9")
    StudyInvitation.objects.filter(pk=inv.pk).update(revoked_at=None, expires_at=timezone.now() - timedelta(1))
    with pytest.raises(invitations.InvitationError, match="expired"):
        invitations.invitation_accept(token=inv.token, username="fresh", password="a-Long-pass-9")
    assert not get_user_model().objects.filter(username="fresh").exists()


def test_multi_use_invitation_and_removed_member_cannot_rejoin(study, admin_user, annotator):
    inv = invitations.invitation_create(study=study, user=admin_user, days=3, max_uses=None)
    for name in ("m1", "m2", "m3"):
        invitations.invitation_accept(token=inv.token, username=name, password="a-Long-pass-9")
    inv.refresh_from_db()
    assert inv.uses == 3
    members.member_remove(study=study, user_id=annotator.pk)
    with pytest.raises(invitations.InvitationError, match="removed"):
        invitations.invitation_join(token=inv.token, user=annotator)
