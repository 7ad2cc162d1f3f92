"""Unknown API addresses answer in JSON, as the rest of the API does; pages keep the HTML error page."""

from __future__ import annotations

import pytest
from django.test import RequestFactory

from config.errors import server_error

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("path", ["/api/no-such-thing/", "/api/studies/no-such-study/rate/next/x/"])
def test_unknown_api_url_is_a_json_404(client, path):
    response = client.get(path)
    assert response.status_code == 404
    assert response["Content-Type"] == "application/json"
    assert response.json() == {"detail": "Not found."}


def test_unknown_page_is_the_html_404(client):
    response = client.get("/no-such-page/")
    assert response.status_code == 404
    assert response["Content-Type"].startswith("text/html")


def test_server_error_is_json_under_api_and_html_elsewhere():
    api = server_error(RequestFactory().get("/api/studies/"))
    assert api.status_code == 500 and api["Content-Type"] == "application/json"
    page = server_error(RequestFactory().get("/studies/"))
    assert page.status_code == 500 and page["Content-Type"].startswith("text/html")


@pytest.mark.parametrize("path,json_body", [("/api/studies/x/rate/next/", True), ("/studies/x/rate/", False)])
def test_database_unreachable_is_a_503_with_retry_after(path, json_body):
    from django.db import OperationalError

    from config.errors import DatabaseUnavailableMiddleware

    middleware = DatabaseUnavailableMiddleware(lambda request: None)
    request = RequestFactory().post(path)
    response = middleware.process_exception(request, OperationalError("connection refused"))
    assert response.status_code == 503 and response["Retry-After"] == "2"
    assert response["Content-Type"].startswith("application/json" if json_body else "text/plain")
    # any other error is left to Django's 500 handling
    assert middleware.process_exception(request, ValueError("a bug")) is None
