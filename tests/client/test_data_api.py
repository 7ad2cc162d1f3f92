"""The endpoints the Python client reads: who may reach them, and who may not."""

from __future__ import annotations

import io

import pyarrow.parquet as pq
import pytest
from rest_framework.test import APIClient

pytestmark = pytest.mark.django_db

GETS = ["/api/studies/{slug}/export/?file=parquet", "/api/studies/{slug}/report/", "/api/studies/{slug}/comparisons/",
        "/api/studies/{slug}/releases/", "/api/judges/studies/{slug}/scores/"]


@pytest.fixture
def study(make_study, annotator, researcher):
    return make_study("rrgen-001", annotators=[annotator], researchers=[researcher])


@pytest.mark.parametrize("path", GETS)
def test_readers_reach_them(api_for, study, admin_user, researcher, path):
    for user in (admin_user, researcher):
        response = api_for(user).get(path.format(slug=study.slug))
        assert response.status_code == 200, (user, path, response.content[:200])


@pytest.mark.parametrize("path", GETS + ["/api/studies/{slug}/releases/1/file/"])
def test_annotators_and_outsiders_get_404_and_anonymous_403(api_for, study, annotator, outsider, path):
    url = path.format(slug=study.slug)
    for user in (annotator, outsider):
        response = api_for(user).get(url)
        assert response.status_code == 404, (user, url)
        assert b"sys-" not in response.content  # nothing of the study leaks
    assert APIClient().get(url).status_code == 403  # session auth first: 403, as the other endpoints


def test_only_readers_queue_releases_and_only_admins_add_rubric_files(api_for, study, annotator, researcher):
    url = f"/api/studies/{study.slug}/releases/"
    assert api_for(annotator).post(url, {"version": "1.0.0", "formats": ["csv"]}, format="json").status_code == 404
    bad = api_for(researcher).post(url, {"version": "one", "formats": ["csv"]}, format="json")
    assert bad.status_code == 400 and "semantic version" in bad.json()["detail"]
    unknown = api_for(researcher).post(url, {"version": "1.0.0", "formats": ["xlsx"]}, format="json")
    assert unknown.status_code == 400 and "formats" in unknown.json()
    upload = io.BytesIO(b"name: X\nslug: x\ncriteria: []\n")
    upload.name = "x.yaml"
    assert api_for(researcher).post("/api/rubrics/file/", {"file": upload}, format="multipart").status_code == 403
    assert study.releases.count() == 0


def test_an_unknown_export_format_is_refused_with_the_choices(api_for, study, admin_user):
    response = api_for(admin_user).get(f"/api/studies/{study.slug}/export/?file=xlsx")
    assert response.status_code == 400 and "parquet" in response.json()["file"]


def test_judge_scores_of_a_study_without_runs_is_an_empty_typed_table(api_for, study, researcher):
    table = pq.read_table(io.BytesIO(api_for(researcher).get(f"/api/judges/studies/{study.slug}/scores/").content))
    assert table.num_rows == 0 and str(table.schema.field("score").type) == "double"


def test_the_schema_documents_them(api_for, admin_user):
    paths = api_for(admin_user).get("/api/schema/?format=json").json()["paths"]
    for path in ["/api/studies/{slug}/export/", "/api/studies/{slug}/report/", "/api/rubrics/file/",
                 "/api/studies/{slug}/releases/{id}/file/", "/api/judges/studies/{slug}/scores/"]:
        assert path in paths
