"""Our own 400, 403, 404, 500 and CSRF-failure pages: the site's layout and navigation for browsers,
JSON under /api/. The browser side under gunicorn is in test_prod_browser.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from django.core.exceptions import PermissionDenied
from django.test import Client, RequestFactory

from config import errors
from tests.conftest import REPO, PASSWORD

pytestmark = pytest.mark.django_db


def with_user(request, user):
    request.user = user
    return request


def test_404_page_has_the_navigation_and_names_the_address(client_for, researcher):
    response = client_for(researcher).get("/studies/no-such-study/report/")
    assert response.status_code == 404
    assert [t.name for t in response.templates][:2] == ["404.html", "_error.html"]
    body = response.content.decode()
    assert 'aria-label="Main"' in body and "This page does not exist" in body
    assert "/studies/no-such-study/report/" in body


def test_403_page_for_browsers_json_for_the_api(rf, annotator):
    page = errors.permission_denied(with_user(rf.get("/studies/x/manage/"), annotator), PermissionDenied())
    assert page.status_code == 403 and b"You cannot open this page" in page.content
    assert b'aria-label="Main"' in page.content  # the navigation of a logged-in user
    api = errors.permission_denied(with_user(rf.get("/api/studies/x/"), annotator), PermissionDenied())
    assert api.status_code == 403 and api["Content-Type"] == "application/json"


def test_400_page_for_browsers_json_for_the_api(rf, annotator):
    page = errors.bad_request(with_user(rf.get("/studies/"), annotator), ValueError("bad"))
    assert page.status_code == 400 and b"could not understand this request" in page.content
    api = errors.bad_request(with_user(rf.get("/api/studies/"), annotator), ValueError("bad"))
    assert api.status_code == 400 and json.loads(api.content) == {"detail": "Bad request."}


def test_a_form_posted_without_its_csrf_token_gets_our_page(annotator):
    browser = Client(enforce_csrf_checks=True)
    response = browser.post("/login/", {"username": annotator.username, "password": PASSWORD})
    assert response.status_code == 403
    body = response.content.decode()
    assert "This form has expired" in body and "nothing was saved" in body
    assert "CSRF verification failed" not in body  # not Django's own page


def test_500_page_renders_with_no_request_context():
    """handler500 gets no context processors: the page may not depend on user, messages or the session."""
    response = errors.server_error(RequestFactory().get("/studies/"))
    assert response.status_code == 500
    body = response.content.decode()
    assert "Something went wrong on our side" in body
    assert 'href="/"' in body and "/static/css/concord" in body  # the layout, a way home


def test_500_page_falls_back_to_plain_text_when_the_template_itself_fails(monkeypatch):
    def broken(name):
        raise RuntimeError("template engine down")

    monkeypatch.setattr(errors.loader, "get_template", broken)
    response = errors.server_error(RequestFactory().get("/studies/"))
    assert response.status_code == 500 and response["Content-Type"].startswith("text/plain")


def test_an_exception_in_a_view_shows_our_500_page(client, monkeypatch, annotator):
    from annotation.views import studies

    def explode(**kwargs):
        raise RuntimeError("a bug")

    monkeypatch.setattr(studies, "home_cards", lambda user: explode())
    client.raise_request_exception = False
    client.force_login(annotator)
    response = client.get("/")
    assert response.status_code == 500 and b"Something went wrong on our side" in response.content


def _production_settings(code: str, **env: str) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items() if k not in {"DEBUG", "CONCORD_TESTING", "SECRET_KEY"}}
    return subprocess.run([sys.executable, "-c", "import django; django.setup(); from django.conf import settings as s;"
                           + code], cwd=REPO, capture_output=True, text=True,
                          env={**clean, "DJANGO_SETTINGS_MODULE": "config.settings", "SECRET_KEY": "k" * 50, **env})


@pytest.mark.parametrize("debug", [None, "", "0", "false", "no"])
def test_debug_unset_or_false_is_production(debug):
    """Production: no debug pages, hashed and compressed static files served by WhiteNoise."""
    result = _production_settings(
        "print(s.DEBUG, s.STORAGES['staticfiles']['BACKEND'], 'whitenoise.middleware.WhiteNoiseMiddleware' in"
        " s.MIDDLEWARE, s.WHITENOISE_USE_FINDERS)", **({} if debug is None else {"DEBUG": debug}))
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["False", "whitenoise.storage.CompressedManifestStaticFilesStorage", "True",
                                     "False"]


def test_swagger_ui_comes_from_the_sidecar(client_for, researcher, make_study):
    make_study(researchers=[researcher])  # the API docs are for staff and study members (annotation.access)
    body = client_for(researcher).get("/api/docs/").content.decode()
    assert "/static/drf_spectacular_sidecar/swagger-ui-dist/swagger-ui-bundle.js" in body
    assert "cdn" not in body.lower() and "https://" not in body


def test_check_deploy_names_static_files_not_collected(tmp_path):
    code = "from django.core.management import call_command; call_command('check', '--deploy')"
    missing = _production_settings(code, STATIC_ROOT=str(tmp_path / "empty"))
    assert missing.returncode != 0 and "concord.E002" in missing.stderr and "collectstatic" in missing.stderr
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "staticfiles.json").write_text('{"paths": {}, "version": "1.1", "hash": "x"}')
    collected = _production_settings(code, STATIC_ROOT=str(tmp_path / "full"))
    assert "concord.E002" not in collected.stderr
