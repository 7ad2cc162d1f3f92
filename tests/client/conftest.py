"""Fixtures for the Python client's tests: API tokens, and the judges platform's fake judge server."""

from __future__ import annotations

import pytest

from tests.judges_platform.conftest import fake_server, make_judge, media_root  # noqa: F401  (fixtures)


@pytest.fixture
def token_for(db):
    """An API token of `user`, as `manage.py drf_create_token USER` issues it."""
    from rest_framework.authtoken.models import Token

    def _token(user) -> str:
        return Token.objects.get_or_create(user=user)[0].key

    return _token


@pytest.fixture
def concord(live_server, token_for):
    """A concord_client.Client of `user` against the live server."""
    from concord_client import Client

    clients = []

    def _client(user):
        client = Client(live_server.url, token_for(user), timeout=120)
        clients.append(client)
        return client

    yield _client
    for client in clients:
        client.close()
