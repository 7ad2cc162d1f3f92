"""bench/loop_variants.py: the 1,000-rater bench's knobs refuse what they do not know, and a session turned into
a signed cookie is the same logged-in session to Django's signed_cookies engine (and to nothing else)."""

import pytest
from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY
from django.contrib.sessions.backends.db import SessionStore as DbStore
from django.contrib.sessions.backends.signed_cookies import SessionStore as CookieStore
from django.test import override_settings

from bench.loop_variants import knobs, session_env, signed_cookie_sessions


def test_knobs_default_to_the_project_serving(monkeypatch):
    for name in ("BENCH_1K_SERVER", "BENCH_1K_SESSIONS", "BENCH_1K_ACCESS_LOG", "BENCH_1K_ONE_TRIP"):
        monkeypatch.delenv(name, raising=False)
    assert knobs() == {"server": "gunicorn", "sessions": "cached_db", "access_log": True, "one_trip": False}
    assert session_env("cached_db") == {}


@pytest.mark.parametrize(("name", "value"), [("BENCH_1K_SERVER", "uwsgi"), ("BENCH_1K_SESSIONS", "file")])
def test_knobs_refuse_an_unknown_choice(monkeypatch, name, value):
    monkeypatch.setenv(name, value)
    with pytest.raises(ValueError, match=name):
        knobs()


@pytest.mark.django_db
def test_signed_cookie_is_the_same_session_under_the_servers_key(django_user_model, settings):
    user = django_user_model.objects.create_user("cookie-rater", password="x-9-long-password")
    server_key = "the-server's-own-secret-key-" + "k" * 30
    with override_settings(SECRET_KEY=server_key):  # setup_study stores sessions signed with the server's key
        store = DbStore()
        store.update({SESSION_KEY: str(user.pk), BACKEND_SESSION_KEY: "annotation.auth_backend.ModelBackend",
                      HASH_SESSION_KEY: user.get_session_auth_hash()})
        store.create()
    [cookie] = signed_cookie_sessions([store.session_key], server_key)
    with override_settings(SECRET_KEY=server_key):
        assert CookieStore(session_key=cookie).load() == {
            SESSION_KEY: str(user.pk), BACKEND_SESSION_KEY: "annotation.auth_backend.ModelBackend",
            HASH_SESSION_KEY: user.get_session_auth_hash()}
    assert CookieStore(session_key=cookie).load() == {}  # another key: not a session
    assert settings.SECRET_KEY != server_key  # the bench's own key is back
