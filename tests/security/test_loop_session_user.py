"""annotation.loop_auth: the rating loop's API reads the session's user in its first statement, and
checks it as Django's get_user does. Each case signs in through a real session (the test client's
cookie), not force_authenticate, so the session path is the one under test."""

from __future__ import annotations

import pytest
from django.contrib.auth import HASH_SESSION_KEY
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from rest_framework.authtoken.models import Token

from annotation.models import Assignment
from annotation.services.members import member_remove
from tests.conftest import make_user

pytestmark = pytest.mark.django_db

USER_READ = 'FROM "auth_user" u WHERE u.id'  # what annotation.auth_backend sends on its own


def _user_reads(queries) -> int:
    return sum(USER_READ.replace('"', "") in q["sql"].replace('"', "") and "LATERAL" not in q["sql"]
               for q in queries)


def _answers(shown: dict) -> dict:
    import random

    from bench.loadclient import answers

    return answers(random.Random(0), shown["responses"])


def signed_in(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_next_and_submit_read_the_user_with_the_study_and_nothing_else(make_study, annotator):
    study = make_study("rrgen-001", annotators=[annotator])
    client = signed_in(annotator)
    with CaptureQueriesContext(connection) as next_queries:
        shown = client.post(f"/api/studies/{study.slug}/rate/next/").json()["assignment"]
    body = {"answers": _answers(shown), "time_on_task_ms": 900}
    with CaptureQueriesContext(connection) as submit_queries:
        done = client.post(f"/api/studies/{study.slug}/rate/{shown['token']}/submit/", body,
                           content_type="application/json")
    assert done.status_code == 200 and done.json()["status"] == "submitted"
    assert _user_reads(next_queries.captured_queries) == 0 and _user_reads(submit_queries.captured_queries) == 0
    assert any("LATERAL" in q["sql"] for q in next_queries.captured_queries)
    assert Assignment.objects.get(token=shown["token"]).rater_id == annotator.pk


def test_a_changed_password_signs_the_old_session_out_of_the_loop(make_study, annotator):
    study = make_study("rrgen-001", annotators=[annotator])
    client = signed_in(annotator)
    token = client.post(f"/api/studies/{study.slug}/rate/next/").json()["assignment"]["token"]
    annotator.set_password("another-long-passphrase")
    annotator.save()
    refused = client.post(f"/api/studies/{study.slug}/rate/{token}/submit/", {"answers": {}},
                          content_type="application/json")
    assert refused.status_code == 403 and "credentials were not provided" in refused.json()["detail"]
    assert client.session.get("_auth_user_id") is None  # flushed, as Django's get_user does
    assert client.post(f"/api/studies/{study.slug}/rate/next/").status_code == 403
    assert not Assignment.objects.filter(token=token, status="submitted").exists()


def test_a_deactivated_account_and_a_removed_member_are_refused(make_study, annotator):
    other = make_user("rater2")
    study = make_study("rrgen-001", annotators=[annotator, other])
    deactivated, removed = signed_in(annotator), signed_in(other)
    annotator.is_active = False
    annotator.save()
    member_remove(study=study, user_id=other.pk)
    assert deactivated.post(f"/api/studies/{study.slug}/rate/next/").status_code == 403
    assert removed.post(f"/api/studies/{study.slug}/rate/next/").status_code == 404
    assert removed.post("/api/studies/no-such-study/rate/next/").status_code == 404


def test_a_session_signed_with_a_retired_secret_is_renewed(make_study, annotator, settings):
    study = make_study("rrgen-001", annotators=[annotator])
    client = signed_in(annotator)
    old_hash = client.session[HASH_SESSION_KEY]
    old_key = client.cookies[settings.SESSION_COOKIE_NAME].value
    settings.SECRET_KEY_FALLBACKS = [settings.SECRET_KEY]
    settings.SECRET_KEY = "a-new-secret-key-of-enough-length-for-django-" + "x" * 20
    assert client.post(f"/api/studies/{study.slug}/rate/next/").status_code == 200
    assert client.cookies[settings.SESSION_COOKIE_NAME].value != old_key  # cycled
    assert client.session[HASH_SESSION_KEY] != old_hash
    settings.SECRET_KEY_FALLBACKS = []
    assert client.post(f"/api/studies/{study.slug}/rate/next/").status_code == 200  # the renewed hash holds


def test_the_loop_still_needs_csrf_with_a_session_and_not_with_a_token(make_study, annotator):
    study = make_study("rrgen-001", annotators=[annotator])
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(annotator)
    refused = browser.post(f"/api/studies/{study.slug}/rate/next/")
    assert refused.status_code == 403 and "CSRF" in refused.json()["detail"]
    key = Token.objects.create(user=annotator).key
    by_token = Client(enforce_csrf_checks=True).post(f"/api/studies/{study.slug}/rate/next/",
                                                     HTTP_AUTHORIZATION=f"Token {key}")
    assert by_token.status_code == 200 and by_token.json()["state"] == "rate"


def test_a_wrong_method_from_a_signed_out_session_hears_it_is_not_signed_in(make_study, annotator):
    study = make_study("rrgen-001", annotators=[annotator])
    client = signed_in(annotator)
    assert client.get(f"/api/studies/{study.slug}/rate/next/").status_code == 405
    annotator.is_active = False
    annotator.save()
    assert client.get(f"/api/studies/{study.slug}/rate/next/").status_code == 403
