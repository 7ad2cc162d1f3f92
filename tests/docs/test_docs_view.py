"""/docs/: the built documentation site, served to signed-in users only; a clear 404 until it is built."""

from __future__ import annotations

import pytest

from tests.conftest import make_user


@pytest.fixture
def built(settings, tmp_path):
    """A small stand-in for site/ as `mkdocs build` lays it out (use_directory_urls)."""
    (tmp_path / "how-to" / "deploy").mkdir(parents=True)
    (tmp_path / "assets").mkdir()
    (tmp_path / "index.html").write_text("<h1>Concord docs home</h1>")
    (tmp_path / "how-to" / "deploy" / "index.html").write_text("<h1>Deploy with compose</h1>")
    (tmp_path / "assets" / "site.css").write_text("body{}")
    (tmp_path.parent / "secret.txt").write_text("outside the site")
    settings.DOCS_SITE_DIR = str(tmp_path)
    return tmp_path


def test_signed_in_users_read_the_pages_and_their_files(built, client_for, researcher, annotator):
    for user in (researcher, annotator):
        client = client_for(user)
        home = client.get("/docs/")
        assert home.status_code == 200 and b"Concord docs home" in b"".join(home.streaming_content)
        page = client.get("/docs/how-to/deploy/")
        assert page.status_code == 200 and page["Content-Type"].startswith("text/html")
        assert b"Deploy with compose" in b"".join(page.streaming_content)
        css = client.get("/docs/assets/site.css")
        assert css.status_code == 200 and css["Content-Type"].startswith("text/css")


def test_a_folder_without_its_slash_is_redirected_so_relative_links_work(built, client_for, researcher):
    response = client_for(researcher).get("/docs/how-to/deploy")
    assert response.status_code == 302 and response["Location"] == "/docs/how-to/deploy/"


def test_signed_out_visitors_are_sent_to_sign_in(built, client):
    response = client.get("/docs/how-to/deploy/")
    assert response.status_code == 302 and response["Location"] == "/login/?next=/docs/how-to/deploy/"


def test_nothing_outside_the_site_and_no_missing_page_is_served(built, client_for, researcher):
    client = client_for(researcher)
    for path in ("/docs/../secret.txt", "/docs/%2e%2e/secret.txt", "/docs/no-such-page/", "/docs/assets/none.css"):
        response = client.get(path)
        assert response.status_code == 404, path
        assert b"outside the site" not in (response.content if not response.streaming else b"")


def test_only_reading(built, client_for, researcher):
    assert client_for(researcher).post("/docs/", {}).status_code == 405


def test_a_site_not_built_yet_says_how_to_build_it(settings, tmp_path, client_for, db):
    settings.DOCS_SITE_DIR = str(tmp_path / "site")
    response = client_for(make_user("reader")).get("/docs/")
    assert response.status_code == 404
    body = response.content.decode()
    assert "The documentation is not built on this server" in body and "make docs" in body
