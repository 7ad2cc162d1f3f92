"""The manage pages over HTTP: who may reach them, htmx answers in place, plain POSTs redirect back,
errors next to their field, never a JSON page."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from annotation.models import Assignment, Study, StudyChange, StudyInvitation, StudyMember
from annotation.services.assignments import assignment_next
from tests.conftest import make_user
from tests.manage.conftest import rate_one

pytestmark = pytest.mark.django_db
HX = {"HTTP_HX_REQUEST": "true"}


def url(name, study):
    return reverse(name, args=[study.slug])


def test_only_admins_and_the_owner_manage(study, client_for, annotator, researcher, outsider, preset_version):
    for user in (annotator, researcher, outsider):
        refused = client_for(user).get(url("study-manage", study))
        assert refused.status_code == 403 and b"Not allowed" in refused.content  # the site's page, not JSON
        assert client_for(user).post(url("manage-status", study), {"status": "closed", "confirm": "on"}).status_code == 403
    owner = make_user("owner")
    study.created_by = owner
    study.save(update_fields=["created_by"])
    page = client_for(owner).get(url("study-manage", study))
    assert page.status_code == 200 and b"Invitation links" in page.content
    assert client_for(outsider).get("/studies/no-such/manage/").status_code == 404


def test_page_shows_every_section(study, client_for, admin_user):
    page = client_for(admin_user).get(url("study-manage", study))
    html = page.content.decode()
    for section in ("lifecycle", "members", "invitations", "settings", "upload", "changes", "progress"):
        assert f'id="{section}"' in html
    assert "Closing stops new assignments; 0 open assignments are released" in html
    assert page["Content-Type"].startswith("text/html")


def test_csrf_is_enforced(study, admin_user):
    from django.test import Client

    c = Client(enforce_csrf_checks=True)
    c.force_login(admin_user)
    assert c.post(url("manage-status", study), {"status": "closed"}).status_code == 403


def test_close_needs_a_confirm_step_with_consequences(study, client_for, admin_user, annotator):
    assignment_next(study=study, rater=annotator)
    c = client_for(admin_user)
    step = c.post(url("manage-status", study), {"status": "closed"}, **HX)
    assert step.status_code == 200
    assert "Closing stops new assignments; 1 open assignment is released" in step.content.decode()
    assert 'name="confirm"' in step.content.decode()
    study.refresh_from_db()
    assert study.status == "open"
    done = c.post(url("manage-status", study), {"status": "closed", "confirm": "on"}, **HX)
    study.refresh_from_db()
    assert study.status == "closed"
    html = done.content.decode()
    assert "Study is now closed" in html and 'id="changes" hx-swap-oob="true"' in html
    assert not Assignment.objects.filter(study=study, status="active").exists()


def test_plain_post_redirects_back_with_message(study, client_for, admin_user):
    c = client_for(admin_user)
    answer = c.post(url("manage-status", study), {"status": "paused", "confirm": "on"})
    assert answer.status_code == 302 and answer["Location"].endswith(url("study-manage", study) + "#lifecycle")
    page = c.get(answer["Location"])
    assert "Study is now paused" in page.content.decode()
    refused = c.post(url("manage-status", study), {"status": "draft", "confirm": "on"})
    assert refused.status_code == 400 and b"cannot become draft" in refused.content
    assert refused["Content-Type"].startswith("text/html")


def test_add_members_paste_and_errors_next_to_field(study, client_for, admin_user):
    make_user("ann"), make_user("bob")
    c = client_for(admin_user)
    bad = c.post(url("manage-members", study), {"names": "ann, ghost\nphantom", "role": "annotator"}, **HX)
    html = bad.content.decode()
    assert 'id="id_names_error"' in html and "ghost: no such user" in html and "phantom: no such user" in html
    assert not StudyMember.objects.filter(study=study, user__username="ann").exists()
    good = c.post(url("manage-members", study), {"names": "ann, bob", "role": "researcher"}, **HX)
    assert "Added 2: ann, bob" in good.content.decode()
    assert set(StudyMember.objects.filter(study=study, role="researcher").values_list("user__username", flat=True)) \
        >= {"ann", "bob"}
    empty = c.post(url("manage-members", study), {"names": "", "role": "annotator"})
    assert empty.status_code == 400 and b"id_names_error" in empty.content


def test_add_members_csv_with_line_numbers(study, client_for, admin_user):
    make_user("ann")
    c = client_for(admin_user)
    csv = SimpleUploadedFile("m.csv", b"username,email,role\nann,,annotator\nzed,z@x.org,annotator\n")
    bad = c.post(url("manage-members", study), {"csv_file": csv, "role": "annotator"}, **HX)
    assert "line 3: zed: no such user" in bad.content.decode() and 'id="id_csv_file_error"' in bad.content.decode()
    csv = SimpleUploadedFile("m.csv", b"ann,,researcher\n")
    c.post(url("manage-members", study), {"csv_file": csv, "role": "annotator"}, **HX)
    assert StudyMember.objects.get(study=study, user__username="ann").role == "researcher"


def test_pause_and_remove_from_the_page(study, client_for, admin_user, annotator):
    rate_one(study, annotator)
    assignment_next(study=study, rater=annotator)
    c = client_for(admin_user)
    paused = c.post(url("manage-member-status", study), {"user": annotator.pk, "action": "pause"}, **HX)
    assert "rater1 is paused; 1 open assignments went back to the pool" in paused.content.decode()
    removed = c.post(url("manage-member-status", study), {"user": annotator.pk, "action": "remove"}, **HX)
    html = removed.content.decode()
    assert "rater1 is removed" in html and "kept, marked removed" in html
    bad = c.post(url("manage-member-status", study), {"user": 999999, "action": "pause"}, **HX)
    assert "not a member" in bad.content.decode()


def test_settings_change_confirm_and_change_log(study, client_for, admin_user, annotator):
    c = client_for(admin_user)
    form = {"name": "New title", "instructions": "", "raters_per_item": 3, "assignment_expiry_minutes": "",
            "randomize_items": "on", "randomize_outputs": "on", "counterbalance": "on", "attention_check_rate": 0,
            "attention_fail_pause": 0, "deadline": "2030-01-02T03:04"}
    ok = c.post(url("manage-settings", study), form, **HX)
    assert "Saved: title, deadline" in ok.content.decode()
    assert "New title" in ok.content.decode()  # the header, out of band
    study.refresh_from_db()
    assert study.name == "New title" and study.deadline.year == 2030
    bad = c.post(url("manage-settings", study), {**form, "raters_per_item": 0}, **HX)
    assert 'id="id_raters_per_item_error"' in bad.content.decode()
    rate_one(study, annotator)
    ask = c.post(url("manage-settings", study), {**form, "raters_per_item": 2}, **HX)
    assert 'id="id_confirm_error"' in ask.content.decode() and "1 ratings were already given" in ask.content.decode() \
        or "ratings were already given" in ask.content.decode()
    study.refresh_from_db()
    assert study.raters_per_item == 3
    c.post(url("manage-settings", study), {**form, "raters_per_item": 2, "confirm": "on"}, **HX)
    study.refresh_from_db()
    assert study.raters_per_item == 2
    change = StudyChange.objects.filter(study=study, field="raters_per_item").get()
    assert (change.old, change.new, change.user) == ("3", "2", admin_user)
    page = c.get(url("study-manage", study)).content.decode()
    assert "Raters per item" in page and "boss" in page


def test_upload_errors_as_a_table(study, client_for, admin_user):
    c = client_for(admin_user)
    bad = SimpleUploadedFile("bad.jsonl", b'{"id": "x1", "outputs": []}\nnot json\n')
    html = c.post(url("manage-upload", study), {"file": bad}, **HX).content.decode()
    assert '<table class="upload-errors"' in html and "<td>1</td>" in html and "<td>2</td>" in html
    assert "nothing was imported" in html
    n = study.items.count()
    good = SimpleUploadedFile("ok.jsonl", b'{"id": "new-1", "context": "c", "outputs": [{"system": "s", "content": "x"}]}\n')
    assert "Imported 1 items" in c.post(url("manage-upload", study), {"file": good}, **HX).content.decode()
    assert study.items.count() == n + 1


def test_invitation_flow_over_http(study, client_for, admin_user, client):
    c = client_for(admin_user)
    bad = c.post(url("manage-invitations", study), {"days": 0, "max_uses": 1}, **HX)
    assert 'id="id_days_error"' in bad.content.decode()
    c.post(url("manage-invitations", study), {"days": 7, "max_uses": 1}, **HX)
    inv = StudyInvitation.objects.get(study=study)
    page = c.get(url("study-manage", study)).content.decode()
    assert f"/invite/{inv.token}/" in page
    form = client.get(f"/invite/{inv.token}/")
    assert form.status_code == 200 and b"Choose a username" in form.content
    mismatch = client.post(f"/invite/{inv.token}/", {"username": "joiner", "password": "a-Long-pass-9",
                                                       "password2": "other"})
    assert mismatch.status_code == 400 and b"id_password2_error" in mismatch.content
    joined = client.post(f"/invite/{inv.token}/", {"username": "joiner", "password": "a-Long-pass-9",
                                                     "password2": "a-Long-pass-9"})
    assert joined.status_code == 302 and joined["Location"] == reverse("workspace", args=[study.slug])
    assert StudyMember.objects.filter(study=study, user__username="joiner", role="annotator").exists()
    from django.test import Client

    again = Client().get(f"/invite/{inv.token}/")
    assert again.status_code == 410 and b"used already" in again.content
    assert Client().get("/invite/not-a-token/").status_code == 404
    c.post(url("manage-invitation-revoke", study), {"invitation": inv.pk}, **HX)
    inv.refresh_from_db()
    assert inv.revoked_at is not None


def test_signed_in_user_joins_with_the_link(study, client_for, admin_user, outsider):
    c = client_for(admin_user)
    c.post(url("manage-invitations", study), {"days": 7, "max_uses": ""}, **HX)
    inv = StudyInvitation.objects.get(study=study)
    assert inv.max_uses is None
    joined = client_for(outsider).post(f"/invite/{inv.token}/")
    assert joined.status_code == 302
    assert StudyMember.objects.filter(study=study, user=outsider).exists()


def test_invited_account_logs_in_through_the_login_form(study, admin_user, client):
    from annotation.services.invitations import invitation_accept, invitation_create

    inv = invitation_create(study=study, user=admin_user, days=1, max_uses=1)
    invitation_accept(token=inv.token, username="later", password="a-Long-pass-9")
    answer = client.post(reverse("login"), {"username": "later", "password": "a-Long-pass-9"})
    assert answer.status_code == 302
    assert "Test rrgen-001" in client.get("/").content.decode()


def test_create_form_puts_a_taken_slug_beside_its_field(study, client_for, admin_user, preset_version):
    answer = client_for(admin_user).post("/studies/new/", {
        "name": "Another", "slug": study.slug, "rubric_version": preset_version["rrgen-001"].pk,
        "raters_per_item": 3, "presentation": "side_by_side", "attention_check_rate": 0})
    html = answer.content.decode()
    assert answer.status_code == 200 and "already exists" in html
    field = html[html.index('id="id_slug"'):]
    assert field.index("already exists") < field.index('id="id_rubric_version"')  # right after the slug field


def test_the_trace_sampling_rule_is_set_on_the_settings_form_and_refused_by_name(study, client_for, admin_user):
    """Issue 56 §2: the OTLP intake's rule as a study setting; a bad one named beside its field."""
    c = client_for(admin_user)
    form = {"name": study.name, "instructions": "", "raters_per_item": 3, "assignment_expiry_minutes": "",
            "randomize_items": "on", "randomize_outputs": "on", "counterbalance": "on", "attention_check_rate": 0,
            "attention_fail_pause": 0}
    ok = c.post(url("manage-settings", study), {**form, "trace_sampling": '{"rate": 0.2, "flags": ["Unsafe"]}'}, **HX)
    assert "Saved: trace sampling (otlp)" in ok.content.decode()
    study.refresh_from_db()
    assert study.trace_sampling == {"rate": 0.2, "flags": ["unsafe"]}
    bad = c.post(url("manage-settings", study), {**form, "trace_sampling": '{"rate": 5}'}, **HX).content.decode()
    assert 'id="id_trace_sampling_error"' in bad and "rate: a share of the unflagged traces from 0 to 1" in bad
    study.refresh_from_db()
    assert study.trace_sampling["rate"] == 0.2
    cleared = c.post(url("manage-settings", study), {**form, "trace_sampling": ""}, **HX)
    assert cleared.status_code == 200
    study.refresh_from_db()
    assert study.trace_sampling == {}
