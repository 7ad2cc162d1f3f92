"""Issue 25: signed out, the API docs page sends to the sign-in page and back (not a bare 403);
the machine-read schema still refuses anonymous clients."""

from tests.conftest import PASSWORD


def test_signed_out_api_docs_go_to_sign_in_and_back(client, researcher, make_study):
    make_study(researchers=[researcher])  # the docs are for staff and study members (annotation.access)
    resp = client.get("/api/docs/")
    assert resp.status_code == 302
    assert resp["Location"] == "/login/?next=/api/docs/"
    login = client.get(resp["Location"])
    assert login.status_code == 200 and 'name="next" value="/api/docs/"' in login.content.decode()
    back = client.post("/login/?next=/api/docs/", {"username": researcher.username, "password": PASSWORD,
                                                  "next": "/api/docs/"})
    assert back.status_code == 302 and back["Location"] == "/api/docs/"
    docs = client.get("/api/docs/")
    assert docs.status_code == 200 and "swagger-ui" in docs.content.decode()


def test_signed_out_schema_stays_refused(client, db):
    assert client.get("/api/schema/").status_code in (401, 403)
