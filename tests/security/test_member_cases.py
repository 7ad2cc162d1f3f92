"""Issue 55's small cases, request by request: the API's member add restores a removed member as the
page does (one service); a paused annotator cannot submit or save the work that pausing released;
the documentation site is closed to crowd participants."""

from __future__ import annotations

import pytest
from django.test import Client

from annotation.models import Assignment, Rating, StudyMember
from annotation.services.assignments import assignment_next
from annotation.services.members import member_pause, member_remove, member_resume
from tests.workspace.conftest import rrgen_answers

pytestmark = pytest.mark.django_db


def test_the_api_add_restores_a_removed_or_paused_member(make_study, annotator, researcher, admin_user, api_for,
                                                         client_for):
    study = make_study("rrgen-001", annotators=[annotator], researchers=[researcher])
    member_remove(study=study, user_id=annotator.pk)
    member_pause(study=study, user_id=researcher.pk)
    rater = client_for(annotator)
    assert rater.get(f"/studies/{study.slug}/rate/").status_code == 404
    for user, role in ((annotator, "annotator"), (researcher, "researcher")):
        response = api_for(admin_user).post(f"/api/studies/{study.slug}/members/",
                                            {"usernames": [user.username], "role": role}, format="json")
        assert response.status_code == 200 and response.json() == {"added": [user.username]}
        member = StudyMember.objects.get(study=study, user=user)
        assert (member.status, member.removed_at, member.paused) == ("active", None, False)
    assert rater.get(f"/studies/{study.slug}/rate/").status_code == 200
    # an unknown name refuses the whole list, naming it
    refused = api_for(admin_user).post(f"/api/studies/{study.slug}/members/",
                                       {"usernames": [annotator.username, "nobody-here"], "role": "annotator"},
                                       format="json")
    assert refused.status_code == 400 and "nobody-here" in refused.json()["detail"]


def test_a_paused_annotator_cannot_submit_what_pausing_released(make_study, annotator, client_for):
    study = make_study("rrgen-001", annotators=[annotator])
    assignment = assignment_next(study=study, rater=annotator)
    answers = rrgen_answers(assignment.item.outputs.count())
    member_pause(study=study, user_id=annotator.pk)
    assignment.refresh_from_db()
    assert assignment.status == Assignment.Status.EXPIRED
    rater = client_for(annotator)
    base = f"/api/studies/{study.slug}/rate/{assignment.token}"
    for url in (f"{base}/submit/", f"{base}/draft/"):
        refused = rater.post(url, {"answers": answers}, content_type="application/json")
        assert refused.status_code == 409, (url, refused.content[:300])
        assert "paused" in refused.json()["detail"] and "Traceback" not in refused.json()["detail"]
    assignment.refresh_from_db()
    assert assignment.status == Assignment.Status.EXPIRED and not Rating.objects.exists()
    # resumed, the same late submit is taken again (the item's slot is still free)
    member_resume(study=study, user_id=annotator.pk)
    assert rater.post(f"{base}/submit/", {"answers": answers}, content_type="application/json").status_code == 200
    assert Rating.objects.filter(assignment=assignment).exists()


def test_the_docs_site_is_closed_to_crowd_participants(make_study, admin_user, annotator, client_for, settings,
                                                       tmp_path):
    from annotation.services.crowd import crowd_link_create

    (tmp_path / "index.html").write_text("<!doctype html><title>Concord docs</title>")
    settings.DOCS_SITE_DIR = tmp_path
    study = make_study("rrgen-001", annotators=[annotator])
    link = crowd_link_create(study=study, user=admin_user, provider="prolific", completion_code="C0DE")
    crowd = Client()
    assert crowd.get(f"/crowd/{link.token}/", {"PROLIFIC_PID": "docs-pid", "SESSION_ID": "s"}).status_code == 302
    assert crowd.get("/docs/").status_code == 403
    assert crowd.get("/docs/index.html").status_code == 403
    assert client_for(annotator).get("/docs/").status_code == 200
