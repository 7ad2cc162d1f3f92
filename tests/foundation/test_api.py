"""The admin-side REST API, endpoint by endpoint, for who may and who may not use it."""

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from rubrics.loader import load_preset


@pytest.fixture
def study(make_study, annotator, researcher):
    return make_study("rrgen-001", annotators=[annotator], researchers=[researcher])


def test_schema_is_served_to_study_members_and_lists_endpoints(client, client_for, annotator, outsider, study):
    assert client.get("/api/schema/", HTTP_ACCEPT="application/json").status_code in (401, 403)
    # signed in but a member of no study (nor staff): the schema is not theirs (annotation.access)
    assert client_for(outsider).get("/api/schema/", HTTP_ACCEPT="application/json").status_code == 403
    response = client_for(annotator).get("/api/schema/", HTTP_ACCEPT="application/json")
    assert response.status_code == 200
    paths = json.loads(response.content)["paths"]
    assert "/api/studies/{slug}/items/" in paths
    assert "/api/rubrics/" in paths


def test_anonymous_gets_nothing(api_for, study):
    api = api_for(None)
    for url in ["/api/rubrics/", "/api/studies/", f"/api/studies/{study.slug}/", f"/api/studies/{study.slug}/progress/"]:
        assert api.get(url).status_code in (401, 403), url


def test_token_auth_works(db, admin_user, study):
    from rest_framework.authtoken.models import Token
    from rest_framework.test import APIClient

    token = Token.objects.create(user=admin_user)
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    assert api.get(f"/api/studies/{study.slug}/progress/").status_code == 200


def test_admin_creates_study_uploads_items_adds_members_and_opens_it(api_for, admin_user, annotator, preset_version):
    api = api_for(admin_user)
    response = api.post("/api/studies/", {"name": "API study", "rubric_version": preset_version["aqua-003"].pk,
                                          "raters_per_item": 2}, format="json")
    assert response.status_code == 201, response.content
    slug = response.json()["slug"]
    bad = SimpleUploadedFile("items.jsonl", b'{"id": "a", "outputs": []}\n')
    response = api.post(f"/api/studies/{slug}/items/", {"file": bad}, format="multipart")
    assert response.status_code == 400
    assert response.json()["errors"][0] == {"line": 1, "field": "outputs", "message": "required, a non-empty list"}
    good = SimpleUploadedFile("items.jsonl", b'{"id": "a", "outputs": [{"system": "s", "content": "x", "kind": "diff"}]}\n')
    assert api.post(f"/api/studies/{slug}/items/", {"file": good}, format="multipart").json() == {"imported": 1}
    assert api.post(f"/api/studies/{slug}/members/", {"usernames": [annotator.username], "role": "annotator"},
                    format="json").status_code == 200
    assert api.post(f"/api/studies/{slug}/status/", {"status": "open"}, format="json").json()["status"] == "open"
    progress = api.get(f"/api/studies/{slug}/progress/").json()
    assert progress["items"] == 1 and progress["slots"] == 2


def test_annotator_and_outsider_cannot_read_or_write_studies(api_for, study, annotator, outsider):
    for user in (annotator, outsider):
        api = api_for(user)
        assert api.get("/api/studies/").json()["results"] == []
        assert api.get(f"/api/studies/{study.slug}/").status_code == 404
        assert api.get(f"/api/studies/{study.slug}/progress/").status_code == 404
        upload = SimpleUploadedFile("i.jsonl", b'{"id": "z", "outputs": [{"system": "s", "content": "x"}]}\n')
        assert api.post(f"/api/studies/{study.slug}/items/", {"file": upload}, format="multipart").status_code == 403
        assert api.post("/api/studies/", {"name": "x", "rubric_version": study.rubric_version_id}).status_code == 403
        assert api.post(f"/api/studies/{study.slug}/status/", {"status": "closed"}).status_code == 403
    study.refresh_from_db()
    assert study.status == "open" and not study.items.filter(external_id="z").exists()


def test_researcher_reads_but_does_not_write(api_for, study, researcher):
    api = api_for(researcher)
    assert [s["slug"] for s in api.get("/api/studies/").json()["results"]] == [study.slug]
    assert api.get(f"/api/studies/{study.slug}/progress/").status_code == 200
    assert api.post(f"/api/studies/{study.slug}/status/", {"status": "closed"}).status_code == 403


def test_rubrics_admin_writes_others_read_their_own(api_for, admin_user, study, annotator, outsider):
    data = load_preset("rrgen-001")
    data["slug"] = "api-rubric"
    response = api_for(admin_user).post("/api/rubrics/", data, format="json")
    assert response.status_code == 201 and response.json()["version"] == 1
    data["criteria"][0]["kind"] = "unknown-kind"
    bad = api_for(admin_user).post("/api/rubrics/", data, format="json")
    assert bad.status_code == 400 and any(e["field"].startswith("criteria[0]") for e in bad.json()["errors"])
    assert api_for(annotator).post("/api/rubrics/", data, format="json").status_code == 403
    assert [r["slug"] for r in api_for(annotator).get("/api/rubrics/").json()["results"]] == ["rrgen-001"]
    assert api_for(outsider).get("/api/rubrics/").json()["results"] == []
