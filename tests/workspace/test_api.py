"""The annotator API: next, draft, submit; blinded; who may not."""

from __future__ import annotations

import pytest

from annotation.models import Assignment, Rating, StudyMember
from annotation.services.studies import study_set_status
from tests.conftest import make_user
from tests.workspace.conftest import complete_answers, items_jsonl


@pytest.fixture
def study(make_study, annotator, researcher):
    return make_study("rrgen-001", annotators=[annotator], researchers=[researcher], items_text=items_jsonl(2))


def _next(api, study):
    return api.post(f"/api/studies/{study.slug}/rate/next/")


def test_next_returns_a_blinded_item(study, annotator, api_for):
    response = _next(api_for(annotator), study)
    assert response.status_code == 200
    data = response.json()
    assert data["state"] == "rate"
    a = data["assignment"]
    assert [r["number"] for r in a["responses"]] == [1, 2, 3]
    assert set(a["responses"][0]) == {"number", "kind", "content"}
    assignment = Assignment.objects.get(rater=annotator)
    shown = {o.position: o.content for o in assignment.item.outputs.all()}
    assert [r["content"] for r in a["responses"]] == [shown[p] for p in assignment.permutation]
    assert a["token"] == str(assignment.token)
    assert [c["key"] for c in a["rubric"]["criteria"]][:2] == ["semantic_relevance", "fluency"]
    assert "judge" not in a["rubric"]
    assert "sys-" not in response.content.decode()
    # the same item again until it is submitted
    assert _next(api_for(annotator), study).json()["assignment"]["token"] == a["token"]


def test_draft_submit_and_repeat(study, annotator, api_for):
    api = api_for(annotator)
    a = _next(api, study).json()["assignment"]
    base = f"/api/studies/{study.slug}/rate/{a['token']}/"
    assert api.post(base + "draft/", {"answers": {"responses": {"1": {"fluency": 3}}}, "time_on_task_ms": 50},
                    format="json").json() == {"saved": True}
    assert api.get(base).json()["assignment"]["answers"]["responses"]["1"]["fluency"]["value"] == 3
    bad = api.post(base + "submit/", {"answers": {"responses": {"1": {"fluency": 9}}}}, format="json")
    assert bad.status_code == 400
    assert bad.json()["errors"]["r1__fluency"] == "Response 1: Fluency: choose a whole number from 1 to 7"
    assert "r2__semantic_relevance" in bad.json()["errors"]
    answers = complete_answers(study.rubric, 3)
    for _ in range(2):
        ok = api.post(base + "submit/", {"answers": answers, "time_on_task_ms": 7000}, format="json")
        assert ok.status_code == 200 and ok.json() == {"status": "submitted", "ratings": 15}
    assert Rating.objects.count() == 15
    assert Assignment.objects.get(token=a["token"]).time_on_task_ms == 7000


def test_submit_with_next_returns_the_next_item_in_the_same_round_trip(study, annotator, api_for):
    api = api_for(annotator)
    first = _next(api, study).json()["assignment"]
    r = api.post(f"/api/studies/{study.slug}/rate/{first['token']}/submit/?next=1",
                 {"answers": complete_answers(study.rubric, 3)}, format="json")
    assert r.status_code == 200
    body = r.json()
    assert body["status"] == "submitted" and body["ratings"] == 15
    second = body["next"]["assignment"]
    assert body["next"]["state"] == "rate" and second["token"] != first["token"]
    # it is the rater's active assignment, blinded like rate/next/
    assert _next(api, study).json()["assignment"]["token"] == second["token"]
    assert set(second["responses"][0]) == {"number", "kind", "content"} and "sys-" not in r.content.decode()
    # a failed submit fetches nothing; the last one says the study is done for this rater
    bad = api.post(f"/api/studies/{study.slug}/rate/{second['token']}/submit/?next=1", {"answers": {}}, format="json")
    assert bad.status_code == 400 and "next" not in bad.json()
    last = api.post(f"/api/studies/{study.slug}/rate/{second['token']}/submit/?next=1",
                    {"answers": complete_answers(study.rubric, 3)}, format="json").json()
    assert last["next"] == {"state": "done", "assignment": None}
    assert Rating.objects.count() == 30
    # without the flag the body is unchanged
    again = api.post(f"/api/studies/{study.slug}/rate/{second['token']}/submit/",
                     {"answers": complete_answers(study.rubric, 3)}, format="json").json()
    assert again == {"status": "submitted", "ratings": 15}


def test_states_done_paused_closed(study, annotator, api_for):
    api = api_for(annotator)
    for _ in range(2):
        a = _next(api, study).json()["assignment"]
        api.post(f"/api/studies/{study.slug}/rate/{a['token']}/submit/",
                 {"answers": complete_answers(study.rubric, 3)}, format="json")
    assert _next(api, study).json() == {"state": "done", "assignment": None}
    StudyMember.objects.filter(user=annotator).update(paused=True)
    assert _next(api, study).json()["state"] == "paused"
    StudyMember.objects.filter(user=annotator).update(paused=False)
    study_set_status(study=study, status="closed")
    assert _next(api, study).json()["state"] == "closed"


def test_submit_to_a_closed_study_is_a_conflict(study, annotator, api_for):
    api = api_for(annotator)
    a = _next(api, study).json()["assignment"]
    study_set_status(study=study, status="closed")
    r = api.post(f"/api/studies/{study.slug}/rate/{a['token']}/submit/",
                 {"answers": complete_answers(study.rubric, 3)}, format="json")
    assert r.status_code == 409 and not Rating.objects.exists()


@pytest.mark.parametrize("who", ["anonymous", "outsider", "researcher", "other_annotator", "fellow"])
def test_who_may_not(who, study, annotator, outsider, researcher, api_for, make_study):
    a = _next(api_for(annotator), study).json()["assignment"]
    if who == "anonymous":
        user = None
    elif who == "other_annotator":
        user = make_user("elsewhere")
        make_study("aqua-003", annotators=[user])
    elif who == "fellow":
        user = make_user("fellow")
        StudyMember.objects.create(study=study, user=user, role="annotator")
    else:
        user = {"outsider": outsider, "researcher": researcher}[who]
    api = api_for(user)
    base = f"/api/studies/{study.slug}/rate/{a['token']}/"
    expected = 403 if who == "anonymous" else 404
    calls = [api.get(base), api.post(base + "draft/", {"answers": {}}, format="json"),
             api.post(base + "submit/", {"answers": complete_answers(study.rubric, 3)}, format="json")]
    if who != "fellow":  # a fellow rater may pull their own work, just not touch mine
        calls.append(_next(api, study))
    assert [c.status_code for c in calls] == [expected] * len(calls)
    assert not Rating.objects.exists()


def test_text_postgresql_cannot_store_is_refused_by_field_and_nothing_is_stored(study, annotator, api_for):
    """A NUL character or an unpaired surrogate (both valid JSON escapes) in an answer, its reasoning, a
    comment or a key is a 400 naming the field, for a draft as for a submit, not a database error."""
    import json

    api = api_for(annotator)
    a = _next(api, study).json()["assignment"]
    base = f"/api/studies/{study.slug}/rate/{a['token']}/"
    answers = complete_answers(study.rubric, 3)
    answers["responses"]["1"]["fluency"] = {"value": 3, "reasoning": "fine\u0000"}
    answers["responses"]["2"]["decision"] = "ACCEPT\ud800"
    answers["comment"] = "ok\u0000"
    # as a client sends it: JSON escapes (json.dumps writes NUL and lone surrogates as \u escapes)
    body = json.dumps({"answers": answers, "time_on_task_ms": 10})
    for endpoint in ("draft/", "submit/", "submit/?next=1"):
        r = api.post(base + endpoint, body, content_type="application/json")
        assert r.status_code == 400, (endpoint, r.content)
        errors = r.json()["errors"]
        assert errors["r1__fluency__reasoning"] == "contains a NUL character (\\u0000), which cannot be stored"
        assert "unpaired surrogate" in errors["r2__decision"]
        assert "NUL" in errors["comment"]
        assert set(errors) == {"r1__fluency__reasoning", "r2__decision", "comment"}
    keyed = complete_answers(study.rubric, 3)
    keyed["responses"]["1"]["flu\u0000ency"] = 3
    r = api.post(base + "draft/", json.dumps({"answers": keyed}), content_type="application/json")
    assert r.status_code == 400 and "key contains a NUL" in r.json()["errors"]["answers"]
    assignment = Assignment.objects.get(token=a["token"])
    assert assignment.status == "active" and assignment.draft == {} and not Rating.objects.exists()
    fine = api.post(base + "submit/", {"answers": complete_answers(study.rubric, 3), "time_on_task_ms": 10},
                    format="json")
    assert fine.status_code == 200 and Rating.objects.filter(assignment=assignment).count() == 15
