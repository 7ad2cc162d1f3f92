"""The admin's study pages over HTTP, including who may not reach them."""

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from annotation.models import Study


@pytest.fixture
def study(make_study, annotator, researcher):
    return make_study("rrgen-001", annotators=[annotator], researchers=[researcher])


def test_login_page_is_served(client):
    response = client.get("/login/")
    assert response.status_code == 200
    assert b"Log in to Concord" in response.content


def test_home_requires_login(client):
    response = client.get("/")
    assert response.status_code == 302 and response.url.startswith("/login/")


def test_home_lists_only_my_studies_with_my_role(client_for, study, annotator, outsider, make_study):
    other = make_study("aqua-003")
    page = client_for(annotator).get("/").content.decode()
    assert study.name in page and other.name not in page and "Start rating" in page
    assert "No studies yet" in client_for(outsider).get("/").content.decode()


def test_admin_creates_a_study_from_a_preset(client_for, admin_user, preset_version):
    response = client_for(admin_user).post("/studies/new/", {
        "name": "Feedback pilot", "rubric_version": preset_version["feedback-000"].pk, "raters_per_item": 2,
        "presentation": "side_by_side", "attention_check_rate": 0.1, "randomize_items": "on"})
    assert response.status_code == 302
    study = Study.objects.get(slug="feedback-pilot")
    assert study.raters_per_item == 2 and study.rubric_version == preset_version["feedback-000"]
    assert study.randomize_items and not study.counterbalance


def test_admin_creates_a_study_with_an_uploaded_rubric_and_sees_errors(client_for, admin_user):
    bad = SimpleUploadedFile("r.yaml", b"slug: x\nname: X\ncriteria:\n  - key: a\n    name: A\n    kind: likert\n")
    response = client_for(admin_user).post("/studies/new/", {"name": "Bad", "rubric_file": bad, "raters_per_item": 3,
                                                              "presentation": "side_by_side", "attention_check_rate": 0})
    assert response.status_code == 200
    assert "criteria[0]" in response.content.decode()
    assert not Study.objects.filter(slug="bad").exists()


def test_upload_page_refuses_a_bad_file_and_keeps_the_study_unchanged(client_for, admin_user, study):
    before = study.items.count()
    upload = SimpleUploadedFile("items.jsonl", b'{"id": "new1", "outputs": [{"system": "s", "content": "x"}]}\n{"id": 5}\n')
    response = client_for(admin_user).post(f"/studies/{study.slug}/upload/", {"file": upload}, follow=True)
    assert "<td>2</td><td>outputs</td><td>required" in response.content.decode()  # the errors table
    assert study.items.count() == before


def test_manage_pages_are_admin_only(client_for, study, annotator, researcher, outsider):
    for user in (annotator, researcher, outsider):
        client = client_for(user)
        assert client.get(f"/studies/{study.slug}/manage/").status_code == 403
        assert client.get("/studies/new/").status_code == 403
        assert client.post(f"/studies/{study.slug}/status/", {"status": "closed", "confirm": "on"}).status_code == 403
        assert client.post(f"/studies/{study.slug}/members/", {"names": user.username,
                                                                "role": "annotator"}).status_code == 403
    study.refresh_from_db()
    assert study.status == "open"


def test_admin_sees_progress_and_can_close(client_for, admin_user, study):
    client = client_for(admin_user)
    page = client.get(f"/studies/{study.slug}/manage/").content.decode()
    assert "Progress" in page and "rater1" in page
    fragment = client.get(f"/studies/{study.slug}/manage/?fragment=progress", HTTP_HX_REQUEST="true").content.decode()
    assert 'id="progress"' in fragment and "Upload items" not in fragment
    client.post(f"/studies/{study.slug}/status/", {"status": "closed", "confirm": "on"})
    study.refresh_from_db()
    assert study.status == "closed"


def test_csrf_is_enforced_on_study_pages(admin_user, study):
    from django.test import Client

    client = Client(enforce_csrf_checks=True)
    client.force_login(admin_user)
    assert client.post(f"/studies/{study.slug}/status/", {"status": "closed"}).status_code == 403
