"""The judges' REST API: admins manage judges and runs; a study's researchers read its runs; others get 404."""

from __future__ import annotations

import pytest

from judges.models import JudgeConfig, JudgeRun


@pytest.fixture
def setup(make_study, make_judge, make_run, annotator, researcher):
    study = make_study("aqua-003", annotators=[annotator], researchers=[researcher])
    judge = make_judge("aqua-fake", method="label")
    run = make_run(study, judge, {("aq-001", 0, "label"): "TP", ("aq-002", 0, "label"): ("", "unparsed", {})})
    return study, judge, run


def test_configs_are_for_admins(setup, api_for, admin_user, researcher, annotator):
    assert api_for(researcher).get("/api/judges/configs/").status_code == 403
    assert api_for(annotator).post("/api/judges/configs/", {"name": "x"}, format="json").status_code == 403
    assert api_for(None).get("/api/judges/configs/").status_code in (401, 403)
    api = api_for(admin_user)
    listing = api.get("/api/judges/configs/").json()
    assert [j["name"] for j in listing["results"]] == ["aqua-fake"]
    created = api.post("/api/judges/configs/", {"name": "big", "backend": "openai", "model": "m",
                                               "endpoint": "http://127.0.0.1:1/v1", "method": "label"}, format="json")
    assert created.status_code == 201 and created.json()["queue"] == "judges"
    bad = api.post("/api/judges/configs/", {"name": "bad", "backend": "openai", "model": "m", "api_key": "sk-1"},
                   format="json")
    assert bad.status_code == 400
    fields = {e["field"] for e in bad.json()["errors"]}
    assert {"api_key", "endpoint"} <= fields and not JudgeConfig.objects.filter(name="bad").exists()


def test_runs_visible_to_admins_and_the_studys_researchers_only(setup, api_for, admin_user, researcher, annotator,
                                                               outsider):
    study, _, run = setup
    for user in (admin_user, researcher):
        body = api_for(user).get(f"/api/judges/runs/?study={study.slug}").json()
        assert [r["id"] for r in body["results"]] == [run.pk]
        detail = api_for(user).get(f"/api/judges/runs/{run.pk}/").json()
        assert detail["progress"]["done"] == 2 and detail["progress"]["unparsed"] == 1 and detail["study"] == study.slug
        scores = api_for(user).get(f"/api/judges/runs/{run.pk}/scores/").json()["results"]
        assert [(s["item"], s["status"]) for s in scores] == [("aq-001", "scored"), ("aq-002", "unparsed")]
        assert scores[1]["raw_text"] == "raw answer "
    for user in (annotator, outsider):
        assert api_for(user).get("/api/judges/runs/").json()["results"] == []
        assert api_for(user).get(f"/api/judges/runs/{run.pk}/").status_code == 404
        assert api_for(user).get(f"/api/judges/runs/{run.pk}/scores/").status_code == 404


def test_researchers_cannot_start_cancel_or_resume(setup, api_for, researcher):
    study, judge, run = setup
    api = api_for(researcher)
    assert api.post("/api/judges/runs/", {"study": study.slug, "judge": judge.name}, format="json").status_code == 404
    assert api.post(f"/api/judges/runs/{run.pk}/cancel/").status_code == 404
    assert api.post(f"/api/judges/runs/{run.pk}/resume/").status_code == 404
    assert JudgeRun.objects.count() == 1


def test_admin_starts_cancels_and_resumes(setup, api_for, admin_user, django_capture_on_commit_callbacks):
    study, judge, _ = setup
    api = api_for(admin_user)
    with django_capture_on_commit_callbacks(execute=False):
        started = api.post("/api/judges/runs/", {"study": study.slug, "judge": judge.name}, format="json")
    assert started.status_code == 201 and started.json()["status"] == "queued"
    rid = started.json()["id"]
    assert api.post("/api/judges/runs/", {"study": study.slug, "judge": judge.name}, format="json").status_code == 409
    assert api.post("/api/judges/runs/", {"study": "nope", "judge": judge.name}, format="json").status_code == 400
    assert api.post(f"/api/judges/runs/{rid}/cancel/").json()["status"] == "cancelled"
    with django_capture_on_commit_callbacks(execute=False):
        assert api.post(f"/api/judges/runs/{rid}/resume/").json()["status"] == "queued"
    assert api.post(f"/api/judges/runs/{rid}/resume/").status_code == 409


def test_schema_lists_the_judge_endpoints(api_for, admin_user):
    schema = api_for(admin_user).get("/api/schema/", HTTP_ACCEPT="application/json").content.decode()
    assert "/api/judges/runs/{id}/scores/" in schema and "/api/judges/configs/" in schema
