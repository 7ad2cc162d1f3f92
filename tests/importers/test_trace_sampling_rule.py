"""Issue 56 §2: the OTLP intake's sampling rule stored per study (annotation.traces.sampling):
validated where it is set (settings service, the API's create, the manage page), followed by the
endpoint, a query that differs from it refused by name, and each admitted trace's inclusion
probability in the items download."""

from __future__ import annotations

import json

import pytest
from rest_framework.authtoken.models import Token

from annotation.datasets import export_chunks
from annotation.models import StudyChange
from annotation.services.studies import StudyError, study_settings_update
from annotation.traces.sampling import SamplingRule, SamplingRuleError, rule_clean, rule_for_request
from tests.importers.test_otlp import otlp_json, otlp_url


@pytest.fixture
def study(db, preset_version, admin_user):
    from annotation.services.studies import study_create

    return study_create(name="Sampled traces", rubric_version=preset_version["rrgen-001"], user=admin_user)


def test_a_rule_is_stored_clean_or_refused_naming_its_field():
    assert rule_clean({}) == rule_clean(None) == rule_clean("") == {}
    assert rule_clean({"rate": "0.2"}) == {"rate": 0.2, "flags": ["unacceptable"]}
    assert rule_clean({"rate": 0, "flags": [" FAIL ", "fail", "", "Unsafe"]}) == {"rate": 0.0, "flags": ["fail", "unsafe"]}
    assert rule_clean({"flags": []}) == {"rate": 1.0, "flags": []}
    for raw, words in [({"rate": 1.5}, "trace_sampling.rate: a share of the unflagged traces from 0 to 1"),
                       ({"rate": "a fifth"}, "not 'a fifth'"), ({"rate": True}, "trace_sampling.rate"),
                       ({"rate": float("nan")}, "trace_sampling.rate"),
                       ({"flags": "unacceptable"}, None), ({"flags": [3]}, "trace_sampling.flags: a list"),
                       ({"flags": [f"l{n}" for n in range(21)]}, "at most 20 labels"),
                       ({"flags": ["x" * 65]}, "at most 64 characters"),
                       ({"sample": 0.2}, "trace_sampling.sample: not part of a sampling rule (rate, flags)"),
                       ([0.2], "trace_sampling: an object")]:
        if words is None:  # a comma-separated string is read as the query's `flag` is
            assert rule_clean(raw)["flags"] == ["unacceptable"]
            continue
        with pytest.raises(SamplingRuleError) as exc:
            rule_clean(raw)
        assert words in str(exc.value)


def test_the_request_follows_the_study_and_refuses_a_differing_query():
    stored = {"rate": 0.2, "flags": ["unacceptable"]}
    assert rule_for_request(stored, None, None) == SamplingRule(0.2, ("unacceptable",))
    assert rule_for_request(stored, "0.2", "unacceptable") == SamplingRule(0.2, ("unacceptable",))
    assert rule_for_request({}, None, None) == SamplingRule(1.0, ("unacceptable",))  # no rule: all kept
    assert rule_for_request({}, "0.5", "fail,Bad") == SamplingRule(0.5, ("fail", "bad"))
    with pytest.raises(SamplingRuleError, match=r"set on the study \(rate 0.2, flags unacceptable\)"):
        rule_for_request(stored, "0.5", None)


@pytest.mark.django_db
def test_the_settings_service_logs_a_change_and_refuses_a_bad_rule(study, admin_user):
    study_settings_update(study=study, user=admin_user, changes={"trace_sampling": {"rate": 0.2}})
    study.refresh_from_db()
    assert study.trace_sampling == {"rate": 0.2, "flags": ["unacceptable"]}
    change = StudyChange.objects.get(study=study, field="trace_sampling")
    assert change.old == "{}" and "0.2" in change.new
    with pytest.raises(StudyError, match=r"^trace_sampling: rate: a share"):
        study_settings_update(study=study, user=admin_user, changes={"trace_sampling": {"rate": 2}})


@pytest.mark.django_db
def test_the_manage_page_and_the_api_take_the_rule(study, admin_user, client_for, preset_version):
    client = client_for(admin_user)
    page = client.get(f"/studies/{study.slug}/manage/").content.decode()
    assert 'name="trace_sampling"' in page and "Trace sampling (OTLP)" in page
    created = client.post("/api/studies/", {"name": "Traces two", "rubric_version": preset_version["rrgen-001"].pk,
                                            "trace_sampling": {"rate": 0.3, "flags": ["Bad"]}},
                          content_type="application/json")
    assert created.status_code == 201, created.content
    assert created.json()["trace_sampling"] == {"rate": 0.3, "flags": ["bad"]}
    refused = client.post("/api/studies/", {"name": "Traces three", "rubric_version": preset_version["rrgen-001"].pk,
                                            "trace_sampling": {"rate": -1}}, content_type="application/json")
    assert refused.status_code == 400 and "trace_sampling: rate:" in refused.json()["detail"]


@pytest.mark.django_db
def test_the_endpoint_refuses_a_query_that_differs_and_the_download_carries_the_probability(
        client, study, admin_user):
    study_settings_update(study=study, user=admin_user, changes={"trace_sampling": {"rate": 1}})
    token = Token.objects.create(user=admin_user).key
    headers = {"content_type": "application/json", "HTTP_AUTHORIZATION": f"Token {token}"}
    body, traces = otlp_json(2)
    differing = client.post(otlp_url(study, "sample=0.5"), body, **headers)
    assert differing.status_code == 400 and "set on the study (rate 1, flags unacceptable)" in \
        differing.json()["message"]
    assert study.items.count() == 0
    assert client.post(otlp_url(study), body, **headers).status_code == 200
    rows = [json.loads(line) for line in b"".join(export_chunks(study, "items-jsonl")).decode().splitlines()]
    assert {(r["item"], r["trace_sampling"], r["inclusion_probability"]) for r in rows} == {
        (format(t, "032x"), "random", 1.0) for t in traces}
