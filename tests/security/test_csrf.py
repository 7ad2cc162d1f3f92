"""CSRF is enforced on every POST reached with a session: for each URL pattern, a client that
checks CSRF like a browser (enforce_csrf_checks=True), signed in as a user allowed there, is
refused without the token, and gets past the check with it (so the refusal is CSRF's doing)."""

from __future__ import annotations

import pytest
from django.test import Client

from config.routes import ROUTES, url_patterns
from tests.security.test_permission_matrix import path_for, world  # noqa: F401 (fixture)

pytestmark = pytest.mark.django_db


def allowed_persona(key: str, world) -> str:  # noqa: F811 - the fixture
    """The first persona the route's rule lets in (config/routes.py): POSTs are mostly for admins."""
    for persona in ("admin", "annotator", "researcher", "anonymous"):
        if ROUTES[key].rule.allows(world.users[persona], world.study):
            return persona
    raise AssertionError(f"nobody may reach {key}")


def is_csrf_refusal(response) -> bool:
    return response.status_code == 403 and b"CSRF" in response.content


def browser_like(role: str, world) -> Client:  # noqa: F811 - the fixture
    client = Client(enforce_csrf_checks=True, raise_request_exception=False)  # 5xx: test_permission_matrix
    if role != "anonymous":
        client.force_login(world.users[role])
    client.get("/login/")  # sets the csrftoken cookie, as any page with a form does
    return client


def test_every_post_needs_the_csrf_token(world):  # noqa: F811 - the fixture
    """Refused (403) without the token; with it, not refused: so the 403 was CSRF's, not a permission's."""
    problems = []
    for route in url_patterns():
        role = allowed_persona(route.key, world)
        path = path_for(route, world, role)
        without = browser_like(role, world).post(path, {})
        if route.key.startswith("django-admin"):
            # Django's admin: staff without model permissions get 403 anyway; its CSRF page says so.
            if not is_csrf_refusal(without):
                problems.append(f"{path} [{route.key}] as {role}: {without.status_code} without a token")
            continue
        client = browser_like(role, world)
        token = client.cookies["csrftoken"].value
        with_token = client.post(path, {"csrfmiddlewaretoken": token}, HTTP_X_CSRFTOKEN=token)
        if without.status_code != 403 or with_token.status_code == 403:
            problems.append(f"{path} [{route.key}] as {role}: {without.status_code} without the token, "
                            f"{with_token.status_code} with it")
    assert not problems, "CSRF not enforced (or the test cannot tell):\n" + "\n".join(problems)


def test_login_form_needs_the_csrf_token(world):  # noqa: F811 - the fixture
    client = Client(enforce_csrf_checks=True)
    response = client.post("/login/", {"username": "rater1", "password": "pw-for-tests-only"})
    assert is_csrf_refusal(response)
    assert "_auth_user_id" not in client.session
