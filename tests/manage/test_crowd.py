"""Crowd entry links (Prolific-style): create or resume a rater from the URL, a completion code at
the end, work back to the pool at once on return or past the time limit, revocable links."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from annotation.models import Assignment, CrowdParticipant, Item
from annotation.services.assignments import assignments_release_overdue
from annotation.services.crowd import CrowdError, crowd_link_create, crowd_link_revoke
from tests.manage.conftest import rrgen_answers


@pytest.fixture
def link(study, admin_user):
    return crowd_link_create(study=study, user=admin_user, provider="prolific", completion_code="C1X2Y3",
                             items_per_participant=2, time_limit_minutes=30)


def enter(link, pid="5f1a2b3c4d", client=None):
    client = client or Client()
    resp = client.get(f"/crowd/{link.token}/", {"PROLIFIC_PID": pid, "STUDY_ID": "s1", "SESSION_ID": "sess9"})
    return client, resp


def rate_in_browser(client, study):
    page = client.get(f"/studies/{study.slug}/rate/")
    assignment = Assignment.objects.filter(study=study, status="active").latest("id")
    form = {}
    for n, key in ((n, k) for n in range(1, len(assignment.permutation) + 1)
                   for k in ("semantic_relevance", "fluency", "sentiment_appropriateness", "domain_accuracy")):
        form[f"r{n}__{key}"] = "5"
    for n in range(1, len(assignment.permutation) + 1):
        form[f"r{n}__decision"] = "ACCEPT"
    resp = client.post(f"/studies/{study.slug}/rate/{assignment.token}/submit/", form, follow=True)
    assert resp.status_code == 200, resp.content.decode()[:500]
    return page, resp


def test_entry_creates_then_resumes_a_passwordless_rater(link, study):
    client, resp = enter(link)
    assert resp.status_code == 302 and resp["Location"].endswith(f"/studies/{study.slug}/rate/")
    participant = CrowdParticipant.objects.get()
    assert participant.user.username == "prolific-5f1a2b3c4d" and not participant.user.has_usable_password()
    assert participant.session_id == "sess9" and participant.deadline > timezone.now() + timedelta(minutes=29)
    assert study.members.filter(user=participant.user, role="annotator").exists()
    page = client.get(f"/studies/{study.slug}/rate/").content.decode()
    assert 'data-testid="crowd-status"' in page and "Return the task" in page
    _, again = enter(link, client=client)
    assert again.status_code == 302 and CrowdParticipant.objects.count() == 1  # resumed, not a second rater
    _, elsewhere = enter(link, client=Client())  # another browser, while this one is active
    assert elsewhere.status_code == 409 and CrowdParticipant.objects.count() == 1


def test_quota_ends_with_the_completion_code_and_prolifics_return_address(link, study):
    client, _ = enter(link)
    rate_in_browser(client, study)
    _, done = rate_in_browser(client, study)
    html = done.content.decode()
    assert 'data-testid="completion-code"' in html and "C1X2Y3" in html
    assert "https://app.prolific.com/submissions/complete?cc=C1X2Y3" in html
    assert Assignment.objects.filter(study=study, status="submitted").count() == 2
    assert not Assignment.objects.filter(study=study, status="active").exists()  # nothing held past the quota
    assert CrowdParticipant.objects.get().finished_at is not None


def test_returning_gives_the_item_back_at_once(link, study):
    client, _ = enter(link)
    client.get(f"/studies/{study.slug}/rate/")
    held = Assignment.objects.get(study=study, status="active")
    resp = client.post(f"/studies/{study.slug}/crowd/return/")
    assert resp.status_code == 200 and "Task returned" in resp.content.decode()
    held.refresh_from_db()
    assert held.status == "expired" and Item.objects.get(pk=held.item_id).slots_taken == 0
    _, again = enter(link, client=Client())
    assert again.status_code == 404 and "returned this task" in again.content.decode()


def test_past_the_time_limit_the_work_goes_back_and_entry_is_refused(link, study):
    client, _ = enter(link)
    client.get(f"/studies/{study.slug}/rate/")
    CrowdParticipant.objects.update(deadline=timezone.now() - timedelta(seconds=1))
    assert assignments_release_overdue(study=study) == 1
    assert not Assignment.objects.filter(study=study, status="active").exists()
    _, again = enter(link, client=Client())
    assert again.status_code == 404 and "time for this task is up" in again.content.decode()


def test_bad_links_and_parameters_say_what_is_wrong(link, study, admin_user):
    resp = Client().get(f"/crowd/{link.token}/", {"STUDY_ID": "s1"})
    assert resp.status_code == 400 and "PROLIFIC_PID" in resp.content.decode()
    resp = Client().get(f"/crowd/{link.token}/", {"PROLIFIC_PID": "<script>"})
    assert resp.status_code == 400
    crowd_link_revoke(link=link, user=admin_user)
    _, resp = enter(link)
    assert resp.status_code == 404 and "withdrawn" in resp.content.decode()
    assert Client().get("/crowd/not-a-token/", {"PROLIFIC_PID": "abc"}).status_code == 404
    with pytest.raises(CrowdError, match="completion_code: Prolific needs"):
        crowd_link_create(study=study, user=admin_user, provider="prolific")


def test_the_manage_page_makes_and_lists_links(study, client_for, admin_user):
    c = client_for(admin_user)
    resp = c.post(f"/studies/{study.slug}/crowd-links/", {"provider": "prolific", "completion_code": "",
                                                         "days": "30"}, follow=True)
    assert "Prolific needs the study&#x27;s completion code" in resp.content.decode()
    resp = c.post(f"/studies/{study.slug}/crowd-links/", {"provider": "prolific", "completion_code": "ABC123",
                                                         "time_limit_minutes": "20", "days": "30"}, follow=True)
    html = resp.content.decode()
    token = study.crowd_links.get().token
    assert f"/crowd/{token}/?PROLIFIC_PID=" in html and "20 min each" in html


def test_the_payment_sheet_rejects_under_the_written_attention_policy_only(link, study, client_for, admin_user):
    import csv
    import io

    a_client, _ = enter(link, pid="good1")
    rate_in_browser(a_client, study)
    rate_in_browser(a_client, study)
    b_client, _ = enter(link, pid="bad2")
    rate_in_browser(b_client, study)
    rate_in_browser(b_client, study)  # the quota: they finish
    bad = CrowdParticipant.objects.get(participant_id="bad2").user
    # one of b's assignments was an attention check they failed (as the workspace's gold check records it)
    Assignment.objects.filter(pk=Assignment.objects.filter(study=study, rater=bad, status="submitted")
                              .values("pk")[:1]).update(is_attention_check=True, attention_passed=False)
    c_client, _ = enter(link, pid="gone3")
    c_client.post(f"/studies/{study.slug}/crowd/return/")
    study.phases = {"attention_policy": {"reject_after_failed": 1}}  # written and shown in the instructions
    study.save(update_fields=["phases"])
    admin = client_for(admin_user)
    resp = admin.get(f"/studies/{study.slug}/crowd-links/payments.csv", {"pay_per_item": "0.35"})
    assert resp.status_code == 200 and resp["Content-Type"].startswith("text/csv")
    rows = {r["participant_id"]: r for r in csv.DictReader(io.StringIO(resp.content.decode()))}
    assert set(rows) == {"good1", "bad2", "gone3"}
    good, failed, gone = rows["good1"], rows["bad2"], rows["gone3"]
    assert good["decision"] == "approve" and good["items_submitted"] == "2" and good["payment"] == "0.70"
    assert failed["decision"] == "reject" and failed["attention_failed"] == "1" and failed["payment"] == "0.00"
    assert "policy rejects at 1" in failed["reason"]
    assert gone["returned_at"] and gone["items_submitted"] == "0" and gone["payment"] == "0.00"
    times = Assignment.objects.filter(study=study, rater__username="prolific-good1").values_list("time_on_task_ms", flat=True)
    assert float(good["time_on_task_s"]) == pytest.approx(sum(times) / 1000, abs=0.05)
    assert admin.get(f"/studies/{study.slug}/crowd-links/payments.csv", {"pay_per_item": "-1"}).status_code == 400
    study.phases = {}  # without a written policy, a failed check never rejects
    study.save(update_fields=["phases"])
    resp = admin.get(f"/studies/{study.slug}/crowd-links/payments.csv", {"pay_per_item": "0.35"})
    failed = {r["participant_id"]: r for r in csv.DictReader(io.StringIO(resp.content.decode()))}["bad2"]
    assert failed["decision"] == "approve" and "no attention policy" in failed["reason"]
    participant_client, _ = enter(link, pid="nosy4")
    assert participant_client.get(f"/studies/{study.slug}/crowd-links/payments.csv").status_code in (403, 404)
