"""The REST API against its own OpenAPI schema (/api/schema/), fuzzed in-process by Schemathesis
through the WSGI app, as an admin and as an annotator (token auth): no 5xx, and every response's
status, content type and body conform to the schema.

Path parameters point at real objects (the study's slug, an active assignment's token, the
study's rubric), so requests reach the views instead of stopping at 404; bodies and queries are
generated, valid for the schema ("positive") and, as the admin, invalid ("negative").
Schemathesis' own pytest integration is not used: its lazy fixture loader does not run on pytest 9.
"""

from __future__ import annotations

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis import GenerationMode
from schemathesis.checks import (
    content_type_conformance,
    not_a_server_error,
    response_schema_conformance,
    status_code_conformance,
)

from tests.conftest import make_user
from tests.robustness import profiles  # noqa: F401  (the reproducible Hypothesis profile)

pytestmark = pytest.mark.django_db(transaction=False)
CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]
EXAMPLES = 10


@pytest.fixture
def api_schema(db, admin_user):
    from django.core.signals import request_finished, request_started
    from django.core.wsgi import get_wsgi_application
    from django.db import close_old_connections
    from rest_framework.authtoken.models import Token

    token, _ = Token.objects.get_or_create(user=admin_user)  # the schema is for signed-in users only

    # Through the raw WSGI app each request would close the connection that holds the test's
    # transaction; Django's own test client disconnects the same handlers.
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    yield schemathesis.openapi.from_wsgi("/api/schema/", get_wsgi_application(),
                                         headers={"Authorization": f"Token {token.key}"})
    request_started.connect(close_old_connections)
    request_finished.connect(close_old_connections)


@pytest.fixture
def world(make_study, admin_user):
    """A study with an annotator holding an active assignment; API tokens for an admin and the annotator."""
    from rest_framework.authtoken.models import Token

    from annotation.services.assignments import assignment_next

    from judges.models import JudgeConfig, JudgeRun

    rater = make_user("fuzz-rater")
    study = make_study("rrgen-001", annotators=[rater])
    assignment = assignment_next(study=study, rater=rater)
    judge = JudgeConfig.objects.create(name="fuzz-judge", model="fake")
    run = JudgeRun.objects.create(study=study, judge=judge, config={}, criteria=[], status="done")
    tokens = {"admin": Token.objects.get_or_create(user=admin_user)[0].key, "annotator": Token.objects.create(user=rater).key}
    return {
        "path": {"slug": study.slug, "token": str(assignment.token), "rubric_id": study.rubric_version_id,
                 "run_id": run.pk, "name": "fuzz-judge", "user_id": rater.pk,
                 "which": "pre", "prefix": "nottoken"},  # a token prefix no caller has: revoking it answers 404
        "tokens": tokens,
    }


def real_path_parameters(operation, world) -> dict:
    """Every path parameter points at a real object: an unknown URL gets Django's HTML 404, not the API's."""
    names = {p.name for p in operation.iter_parameters() if str(getattr(p.location, "value", p.location)) == "path"}
    chosen = {name: world["path"][name] for name in names & {"slug", "token", "name", "user_id", "which", "prefix"}}
    if "id" in names:
        chosen["id"] = world["path"]["rubric_id" if "/rubrics/" in operation.path else "run_id"]
    unknown = names - set(chosen)
    assert not unknown, f"{operation.label}: no real object for path parameter(s) {sorted(unknown)}"
    return chosen


def has_query_or_body(operation) -> bool:
    return bool(operation.get_request_payload_content_types()) or any(
        str(getattr(p.location, "value", p.location)) == "query" for p in operation.iter_parameters())


def fuzz(api_schema, world, role: str, mode: GenerationMode) -> list[str]:
    """Run every operation; return one line per operation that failed a check."""
    failures = []
    headers = {"Authorization": f"Token {world['tokens'][role]}"}
    for result in api_schema.get_all_operations():
        operation = result.ok()
        fixed = real_path_parameters(operation, world)
        if mode is GenerationMode.NEGATIVE and not has_query_or_body(operation):
            continue  # invalid path parameters only reach the URL resolver

        @given(case=operation.as_strategy(generation_mode=mode, path_parameters=fixed))
        @settings(max_examples=EXAMPLES, suppress_health_check=[HealthCheck.filter_too_much, HealthCheck.too_slow,
                                                                HealthCheck.function_scoped_fixture])
        def run(case):
            case.call_and_validate(headers=headers, checks=CHECKS)

        try:
            run()
        except (Exception, BaseExceptionGroup) as exc:  # noqa: BLE001 - collect every failure, report them together
            failures.append(f"{operation.label} as {role} ({mode.value}): {str(exc).strip()[:1500]}")
    return failures


def test_api_as_admin_conforms_to_its_schema(api_schema, world):
    failures = fuzz(api_schema, world, "admin", GenerationMode.POSITIVE)
    assert not failures, "\n\n".join(failures)


def test_api_as_annotator_conforms_to_its_schema(api_schema, world):
    failures = fuzz(api_schema, world, "annotator", GenerationMode.POSITIVE)
    assert not failures, "\n\n".join(failures)


def test_api_refuses_invalid_requests_without_a_server_error(api_schema, world):
    failures = fuzz(api_schema, world, "admin", GenerationMode.NEGATIVE)
    assert not failures, "\n\n".join(failures)


@pytest.mark.parametrize("url", ["/api/rubrics/", "/api/studies/"])
@pytest.mark.parametrize("body", ["[" * 100_000, '{"a": ' * 50_000, "1" * 5000, '"\\ud800"', '{"slug": NaN}'],
                         ids=["deep list", "deep object", "5000 digits", "lone surrogate", "NaN"])
def test_json_bodies_beyond_the_parser_are_refused_not_a_server_error(admin_user, api_for, url, body):
    response = api_for(admin_user).post(url, data=body, content_type="application/json")
    assert response.status_code == 400, response.content[:300]


def test_a_run_whose_judge_was_deleted_matches_the_schema(api_schema, world):
    # JudgeRun.judge is SET_NULL when its configuration is deleted; judges/api.py's JudgeRunSerializer
    # declares `judge` a non-nullable string, so such runs break every generated client.
    from judges.models import JudgeConfig

    JudgeConfig.objects.filter(name="fuzz-judge").delete()
    operation = api_schema.find_operation_by_label("GET /api/judges/runs/{id}/")
    case = operation.Case(path_parameters={"id": world["path"]["run_id"]})
    case.call_and_validate(headers={"Authorization": f"Token {world['tokens']['admin']}"}, checks=CHECKS)


def test_a_body_without_a_content_type_gets_the_documented_415(api_schema, world, api_for):
    # Schemathesis' negative mode sometimes sends a body with no Content-Type; DRF refuses it with 415.
    # The study's own annotator: the body is read after the study (anyone else hears 404 first).
    from django.contrib.auth import get_user_model

    rater = get_user_model().objects.get(pk=world["path"]["user_id"])
    response = api_for(rater).generic("POST", f"/api/studies/{world['path']['slug']}/consent/", b"x",
                                      content_type="")
    assert response.status_code == 415 and "detail" in response.json()
    documented = api_schema["/api/studies/{slug}/consent/"]["POST"].definition.raw["responses"]
    assert "415" in documented
    no_body = api_schema["/api/studies/{slug}/rate/next/"]["POST"].definition.raw["responses"]
    assert "415" not in no_body  # it reads no body
