"""API tokens expire (API_TOKEN_DAYS), their owner lists and revokes them (page and API), and a new
password or a deactivation revokes them; crowd participants hold none."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.test import Client
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from annotation.api_tokens import PREFIX_LENGTH, TokenError, api_token_create

pytestmark = pytest.mark.django_db


def api(token: Token | str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {getattr(token, 'key', token)}")
    return client


def works(token) -> bool:
    return api(token).get("/api/studies/").status_code == 200


def test_a_token_expires(researcher, settings):
    token = api_token_create(user=researcher)
    assert works(token)
    Token.objects.filter(pk=token.pk).update(created=token.created - timedelta(days=settings.API_TOKEN_DAYS, seconds=1))
    response = api(token).get("/api/studies/")
    # 403 rather than 401: DRF answers so when the first scheme listed (the session) names no challenge
    assert response.status_code == 403 and "expired" in response.json()["detail"]
    settings.API_TOKEN_DAYS = settings.API_TOKEN_DAYS + 1  # the setting decides
    assert works(token)


def test_the_owner_lists_and_revokes_by_the_api(researcher, annotator):
    mine, theirs = api_token_create(user=researcher), api_token_create(user=annotator)
    listed = api(mine).get("/api/tokens/").json()
    assert [t["prefix"] for t in listed] == [mine.key[:PREFIX_LENGTH]] and mine.key not in str(listed)
    assert {"created", "expires", "expired"} <= listed[0].keys() and listed[0]["expired"] is False
    # another account's token is not found by its prefix, and keeps working
    assert api(mine).delete(f"/api/tokens/{theirs.key[:PREFIX_LENGTH]}/").status_code == 404
    assert works(theirs)
    assert api(mine).delete(f"/api/tokens/{mine.key[:3]}/").status_code == 400  # too short to name one
    assert api(mine).delete(f"/api/tokens/{mine.key[:PREFIX_LENGTH]}/").json() == {"revoked": 1}
    assert not works(mine) and works(theirs)


def test_the_owner_creates_lists_and_revokes_on_the_page(researcher):
    browser = Client()
    browser.force_login(researcher)
    assert b"You have no API token" in browser.get("/account/tokens/").content
    page = browser.post("/account/tokens/", {"create": "1"})
    key = Token.objects.get(user=researcher).key
    assert page.status_code == 200 and key.encode() in page.content and works(key)
    listed = browser.get("/account/tokens/").content
    assert key[:PREFIX_LENGTH].encode() in listed and key.encode() not in listed  # shown once only
    assert browser.post("/account/tokens/", {"revoke": key[:PREFIX_LENGTH]}).status_code == 200
    assert not Token.objects.filter(user=researcher).exists() and not works(key)


def test_a_new_password_or_a_deactivation_revokes(researcher, annotator):
    token = api_token_create(user=researcher)
    researcher.last_login = researcher.date_joined
    researcher.save(update_fields=["last_login"])  # a sign-in's save keeps it
    researcher.first_name = "Ada"
    researcher.save()  # so does a save of other fields
    assert works(token)
    researcher.set_password("a whole new secret")
    researcher.save()
    assert not works(token) and not Token.objects.filter(user=researcher).exists()

    token = api_token_create(user=annotator)
    annotator.is_active = False
    annotator.save(update_fields=["is_active"])
    assert not Token.objects.filter(user=annotator).exists()
    annotator.is_active = True
    annotator.save()
    assert not works(token)  # reactivating does not bring it back


def test_the_admin_password_form_revokes(researcher, admin_user):
    token = api_token_create(user=researcher)
    admin_user.is_superuser = True  # the model permission to change users
    admin_user.save(update_fields=["is_superuser"])
    admin = Client()
    admin.force_login(admin_user)
    response = admin.post(f"/django-admin/auth/user/{researcher.pk}/password/",
                          {"password1": "Another-long-pass-42", "password2": "Another-long-pass-42",
                           "usable_password": "true"})
    assert response.status_code == 302, response.content[:300]
    assert not works(token)


def test_crowd_participants_hold_no_token(study_with_crowd):
    participant, browser = study_with_crowd
    with pytest.raises(TokenError):
        api_token_create(user=participant)
    assert browser.get("/account/tokens/").status_code == 403
    assert browser.post("/account/tokens/", {"create": "1"}).status_code == 403
    assert browser.get("/api/tokens/").status_code == 403
    assert not Token.objects.filter(user=participant).exists()


@pytest.fixture
def study_with_crowd(make_study, admin_user):
    from annotation.models import CrowdParticipant
    from annotation.services.crowd import crowd_link_create

    study = make_study("rrgen-001")
    link = crowd_link_create(study=study, user=admin_user, provider="prolific", completion_code="C0DE")
    browser = Client()
    assert browser.get(f"/crowd/{link.token}/", {"PROLIFIC_PID": "tok-pid", "SESSION_ID": "s"}).status_code == 302
    return CrowdParticipant.objects.get(participant_id="tok-pid").user, browser
