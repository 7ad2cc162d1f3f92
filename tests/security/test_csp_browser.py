"""The Content-Security-Policy breaks nothing: in Chromium, the key pages (the rating workspace with its
autosave, the report, progress, manage and items pages, the API docs, the documentation site, a crowd
participant's confirm dialog) raise no CSP violation, while an inline script injected into a page is
refused (the detector and the policy both work)."""

from __future__ import annotations

import pytest

from tests.conftest import log_in, make_user

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

REPORT = """(e) => { window.__csp = (window.__csp || 0) + 1;
    window.__cspReport(`${e.violatedDirective} ${e.blockedURI} at ${e.sourceFile}:${e.lineNumber}`); }"""


@pytest.fixture
def watched(new_context):
    """new_page() -> a page whose CSP violations (securitypolicyviolation events, console lines) land in `seen`."""
    seen: list[str] = []

    def new_page():
        context = new_context(viewport={"width": 1400, "height": 900})
        context.expose_function("__cspReport", lambda line: seen.append(line))
        context.add_init_script(f"document.addEventListener('securitypolicyviolation', {REPORT});")
        page = context.new_page()
        page.on("console", lambda m: seen.append(m.text) if "Content Security Policy" in m.text else None)
        return page

    return new_page, seen


@pytest.fixture
def docs_site(settings, tmp_path):
    """A stand-in for a page of the built site, with the theme's kinds of script: inline code, an inline JSON
    config and a bundle file. The inline code marks the page when it ran (its hash lets it)."""
    (tmp_path / "assets").mkdir()
    (tmp_path / "assets" / "bundle.js").write_text("document.body.dataset.bundle = 'ran';")
    (tmp_path / "index.html").write_text(
        "<!doctype html><html><head><title>Concord docs</title>"
        "<script>document.documentElement.dataset.inline = 'ran';</script></head><body><h1>Docs</h1>"
        '<script id="__config" type="application/json">{"base": "."}</script>'
        '<script src="assets/bundle.js"></script></body></html>')
    settings.DOCS_SITE_DIR = str(tmp_path)
    return tmp_path


def test_key_pages_raise_no_violation(live_server, watched, make_study, admin_user, docs_site):
    from annotation.services.crowd import crowd_link_create

    new_page, seen = watched
    rater = make_user("csp-rater")
    study = make_study("rrgen-001", annotators=[rater])
    slug = study.slug

    page = new_page()
    log_in(page, live_server, rater)
    page.goto(f"{live_server.url}/studies/{slug}/rate/")
    page.wait_for_selector("#ws-form[data-ready='1']")
    page.keyboard.press("5")  # an answer: the autosave posts the draft through htmx
    page.wait_for_load_state("networkidle")
    page.goto(f"{live_server.url}/studies/{slug}/rate/history/")

    admin = new_page()
    admin_user.set_password("csp-admin-pass-42")
    admin_user.save()
    admin.goto(live_server.url + "/login/")
    admin.fill("#id_username", admin_user.username)
    admin.fill("#id_password", "csp-admin-pass-42")
    admin.click("button[type=submit]")
    admin.wait_for_url(live_server.url + "/")
    for path in (f"/studies/{slug}/manage/", f"/studies/{slug}/items/", f"/studies/{slug}/report/",
                 f"/studies/{slug}/progress/", "/account/tokens/", "/api/docs/"):
        response = admin.goto(live_server.url + path)
        assert response is not None and response.status == 200, path
        admin.wait_for_load_state("networkidle")
    admin.wait_for_selector(".swagger-ui .info")  # Swagger UI's initialiser ran (a file, not inline)
    admin.goto(live_server.url + "/docs/")
    assert admin.evaluate("document.documentElement.dataset.inline") == "ran"  # allowed by its hash
    assert admin.evaluate("document.body.dataset.bundle") == "ran"

    crowd = new_page()
    link = crowd_link_create(study=study, user=admin_user, provider="prolific", completion_code="C0DE")
    crowd.goto(f"{live_server.url}/crowd/{link.token}/?PROLIFIC_PID=csp1&STUDY_ID=s&SESSION_ID=se1")
    crowd.wait_for_selector("#ws-form[data-ready='1']")
    asked: list[str] = []
    crowd.once("dialog", lambda d: (asked.append(d.message), d.dismiss()))
    crowd.click("text=Return the task")  # a dismissed confirm sends nothing: the page stays
    assert asked and "Return the task?" in asked[0] and crowd.locator("#ws-form").count() == 1
    crowd.once("dialog", lambda d: d.accept())
    crowd.click("text=Return the task")
    crowd.wait_for_selector("h1:has-text('Task returned')")

    assert seen == []

    # The control: an inline script added to a page is refused, and reported.
    admin.goto(f"{live_server.url}/studies/{slug}/report/")
    admin.evaluate("() => { const s = document.createElement('script'); s.textContent = 'window.injected = 1';"
                   " document.body.append(s); }")
    admin.wait_for_function("() => window.__csp > 0")
    assert admin.evaluate("window.injected") is None
    assert any("script-src" in line for line in seen), seen
