"""Each role walks Concord served as production serves it (tests/prod/conftest.py: collected static
files, gunicorn, DEBUG unset) in real Chromium, at a phone's width and a desktop's.

On every page reachable from the navigation: an answer below 500, the stylesheets and htmx loaded
(a computed style, `window.htmx`), no request to another host, no Content-Security-Policy violation
(the production policy), no horizontal overflow at 390 px and
1400 px; each role reaches its study's pages, and an annotator no report or item list. Screenshots of every page
go to test-artifacts/prod/ for a person to look at (`make screenshots`)."""

from __future__ import annotations

import json
import re
from collections import deque
from dataclasses import dataclass, field
from urllib.parse import urldefrag, urlsplit

import httpx
import pytest

from annotation.models import Assignment, Rating
from tests.conftest import PASSWORD, make_user
from tests.prod.conftest import ARTIFACTS
from tests.screens import screenshot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

WIDTHS = (1400, 390)
MAX_PAGES = 60  # per role; paths are deduplicated, query strings ignored
MAX_DEPTH = 3  # clicks from the home page
# Links the walk does not follow: leaving the session, or deeper into Django's own admin (its index,
# linked from the navigation, is walked; its change lists are Django's, not ours).
NOT_FOLLOWED = re.compile(r"^/(logout/|django-admin/.+)")
CONCORD_BG = "rgb(246, 247, 249)"  # body background from static/css/concord.css (--bg)


@dataclass
class Watch:
    """What the browser asked for and got while a page was open."""

    origin: str
    foreign: list[str] = field(default_factory=list)
    static_failures: list[str] = field(default_factory=list)
    server_errors: list[str] = field(default_factory=list)
    csp_violations: list[str] = field(default_factory=list)

    def attach(self, page) -> None:
        page.on("request", self._request)
        page.on("response", self._response)

    def attach_csp(self, context) -> None:
        """Every Content-Security-Policy violation of the context's pages, as the browser reports it."""
        context.expose_function("__cspReport", lambda line: self.csp_violations.append(line))
        context.add_init_script("document.addEventListener('securitypolicyviolation', (e) => window.__cspReport("
                                "`${e.violatedDirective} ${e.blockedURI} at ${e.sourceFile}:${e.lineNumber}`));")

    def _request(self, request) -> None:
        url = request.url
        if url.startswith(("data:", "blob:", "about:")):
            return
        if not url.startswith(self.origin + "/"):
            self.foreign.append(url)

    def _response(self, response) -> None:
        path = urlsplit(response.url).path
        if path.startswith("/static/") and response.status >= 400:
            self.static_failures.append(f"{response.status} {response.url}")
        if response.status >= 500:
            self.server_errors.append(f"{response.status} {response.url}")


def log_in(page, server, user) -> None:
    page.goto(server.url + "/login/")
    page.fill("#id_username", user.username)
    page.fill("#id_password", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url(server.url + "/")


def new_page(browser, server, width: int = 1400):
    context = browser.new_context(viewport={"width": width, "height": 900})
    watch = Watch(server.url)
    watch.attach_csp(context)
    page = context.new_page()
    watch.attach(page)
    return context, page, watch


def same_site_links(page, origin: str) -> list[str]:
    hrefs = page.eval_on_selector_all("a[href]:not([download])", "els => els.map(e => e.href)")
    paths = []
    for href in hrefs:
        href, _ = urldefrag(href)
        if href.startswith(origin + "/"):
            paths.append(urlsplit(href).path)
    return paths


def page_problems(page, path: str, width: int) -> list[tuple[str, str]]:
    """(kind, message) for each way the page is not whole: "broken" when a stylesheet or htmx did not load,
    "overflow" when it is wider than the window."""
    state = page.evaluate("""() => ({
        sheets: [...document.styleSheets].map(s => { try { return s.cssRules.length } catch (e) { return -1 } }),
        concord: !!document.querySelector('link[href*="/static/css/concord."]'),
        htmxTag: !!document.querySelector('script[src*="/static/vendor/htmx."]'),
        htmx: typeof window.htmx === 'object' && typeof window.htmx.ajax === 'function',
        bg: getComputedStyle(document.body).backgroundColor,
        scrollWidth: document.documentElement.scrollWidth, innerWidth: window.innerWidth })""")
    problems = []
    if not state["sheets"] or not all(n > 0 for n in state["sheets"]):
        problems.append(("broken", f"{path}: a stylesheet did not load ({state['sheets']})"))
    if state["concord"] and state["bg"] != CONCORD_BG:
        problems.append(("broken", f"{path}: concord.css not applied (body background {state['bg']})"))
    if state["htmxTag"] and not state["htmx"]:
        problems.append(("broken", f"{path}: htmx did not load"))
    if state["scrollWidth"] > state["innerWidth"]:
        problems.append(("overflow", f"{path} overflows horizontally at {width} px: "
                                     f"{state['scrollWidth']} > {state['innerWidth']}"))
    return problems


def assert_page_is_whole(page, path: str, width: int) -> None:
    problems = page_problems(page, path, width)
    assert not problems, [message for _, message in problems]


def shot(page, name: str) -> None:
    screenshot(page, ARTIFACTS / f"{name}.png", full_page=True)


def slug_of(path: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", path.lower()).strip("-") or "home"


def walk(browser, server, user, role: str) -> list[str]:
    """Breadth-first from the home page through every same-site link; each HTML page checked at both
    widths. Returns the paths walked."""
    context, page, watch = new_page(browser, server)
    try:
        log_in(page, server, user)
        seen, walked = {"/"}, []
        queue: deque[tuple[str, int]] = deque([("/", 0)])
        problems: list[str] = []
        errors: list[str] = []
        overflows: list[str] = []
        while queue and len(walked) < MAX_PAGES:
            path, depth = queue.popleft()
            answer = page.request.get(server.url + path, max_redirects=5)
            if answer.status >= 500:
                errors.append(f"{answer.status} {path}")
                continue
            kind = answer.headers.get("content-type", "")
            attachment = "attachment" in answer.headers.get("content-disposition", "")
            if kind.startswith("application/json") and not attachment:
                problems.append(f"{path}: a link from the pages ends on a JSON page")
                continue
            if not kind.startswith("text/html") or attachment:
                continue  # a download (CSV, Parquet, a report file): its status is all a page walk can check
            walked.append(path)
            for width in WIDTHS:
                page.set_viewport_size({"width": width, "height": 900})
                response = page.goto(server.url + path)  # "load": stylesheets and deferred scripts are in
                assert response is not None and response.status < 500, f"{path}: {response and response.status}"
                shot(page, f"{role}-{slug_of(path)}-{width}")
                for kind_of_problem, message in page_problems(page, path, width):
                    (overflows if kind_of_problem == "overflow" else problems).append(message)
            if depth < MAX_DEPTH and not path.startswith(("/django-admin/", "/api/")):
                for link in same_site_links(page, server.url):
                    if link not in seen and not NOT_FOLLOWED.match(link):
                        seen.add(link)
                        queue.append((link, depth + 1))
        assert not errors and not watch.server_errors, (f"server errors while {role} walked: {errors} "
                                                        f"{watch.server_errors}\n{server.log_tail()}")
        assert not watch.static_failures, f"static files missing: {watch.static_failures}"
        assert not watch.foreign, f"requests to another host: {watch.foreign}"
        assert not watch.csp_violations, f"Content-Security-Policy violations: {watch.csp_violations}"
        assert not problems, f"{role} walked {walked}:\n" + "\n".join(problems)
        assert not overflows, f"{role} walked {walked}:\n" + "\n".join(overflows)
        return walked
    finally:
        context.close()


@pytest.fixture
def people(db):
    return {"admin": make_user("prod-admin", staff=True), "annotator": make_user("prod-rater"),
            "researcher": make_user("prod-reader")}


@pytest.fixture
def studies(make_study, people):
    members = {"annotators": [people["annotator"]], "researchers": [people["researcher"]]}
    return [make_study("rrgen-001", **members), make_study("aqua-003", **members),
            make_study("feedback-000", status="draft", **members),
            make_study("aqua-003", slug="closed-aqua-003", status="closed", annotators=[people["annotator"]])]


@pytest.mark.parametrize("role", ["admin", "annotator", "researcher"])
def test_every_page_from_the_navigation_works_at_both_widths(browser, prod_server, people, studies, role):
    """Each role reaches its study's pages from the navigation, and an annotator no report or item list."""
    walked = set(walk(browser, prod_server, people[role], role))
    study = f"/studies/{studies[0].slug}/"
    assert "/" in walked
    if role in ("admin", "researcher"):
        judges = f"/judges{study}"
        assert {f"{study}report/", f"{study}plan/", f"{study}progress/", f"{study}datasets/", judges,
                f"{judges}gold/", f"{judges}doubt/"} <= walked, sorted(walked)
    if role == "admin":
        assert {f"{study}manage/", f"{study}items/"} <= walked, sorted(walked)
    if role == "annotator":
        assert f"{study}rate/" in walked and not any("/report/" in p or "/items/" in p for p in walked), walked


def test_annotator_rates_an_item_end_to_end(browser, prod_server, people, studies):
    rater = people["annotator"]
    gec = studies[1]
    context, page, watch = new_page(browser, prod_server)
    try:
        log_in(page, prod_server, rater)
        page.goto(f"{prod_server.url}/studies/{gec.slug}/rate/")
        page.wait_for_selector("#ws-form[data-ready='1']")
        page.keyboard.press("1")  # TP, by the workspace script's keyboard path
        page.click("button.submit-btn")
        page.wait_for_selector("[data-progress]:has-text('1 done')")
        shot(page, "annotator-rated-one-item")
    finally:
        context.close()
    (assignment,) = Assignment.objects.filter(rater=rater, status="submitted")
    (rating,) = Rating.objects.filter(assignment=assignment)
    assert rating.criterion == "label" and rating.value == "TP"
    assert not watch.foreign and not watch.static_failures and not watch.server_errors


def test_missing_page_is_our_404_with_the_navigation(browser, prod_server, people):
    context, page, watch = new_page(browser, prod_server)
    try:
        response = page.goto(prod_server.url + "/no-such-page/")
        assert response.status == 404
        assert "This page does not exist" in page.inner_text("main")
        assert_page_is_whole(page, "/no-such-page/", 1400)
        log_in(page, prod_server, people["researcher"])
        response = page.goto(prod_server.url + "/studies/no-such-study/report/")
        assert response.status == 404
        assert page.locator("nav[aria-label=Main] a", has_text="Studies").is_visible()
        assert "Traceback" not in page.content() and "URLconf" not in page.content()  # no debug page
        for width in WIDTHS:
            page.set_viewport_size({"width": width, "height": 900})
            assert_page_is_whole(page, "404", width)
            shot(page, f"404-{width}")
    finally:
        context.close()
    assert not watch.foreign and not watch.static_failures


def test_api_docs_render_swagger_ui_from_our_own_static_files(browser, prod_server, people, studies):
    # `studies`: the researcher is a member of them; the API docs are for staff and study members
    context, page, watch = new_page(browser, prod_server)
    try:
        log_in(page, prod_server, people["researcher"])
        page.goto(prod_server.url + "/api/docs/", wait_until="networkidle")
        page.wait_for_selector(".swagger-ui .info .title", timeout=20_000)
        assert "Concord API" in page.inner_text(".swagger-ui .info .title")
        assert page.locator(".opblock").count() > 5  # the operations, from /api/schema/
        shot(page, "api-docs")
    finally:
        context.close()
    assert not watch.foreign, f"/api/docs/ asked another host: {watch.foreign}"
    assert not watch.static_failures
    assert not watch.csp_violations, watch.csp_violations  # its initialiser is a script file, not inline


def test_static_files_are_hashed_cached_for_ever_and_compressed(prod_server):
    html = httpx.get(prod_server.url + "/login/").text
    found = re.findall(r'(?:href|src)="(/static/[^"]+)"', html)
    css = [u for u in found if u.startswith("/static/css/concord.")]
    js = [u for u in found if u.startswith("/static/vendor/htmx.")]
    assert css and js, found
    for url in css + js:
        assert re.search(r"\.[0-9a-f]{12}\.(css|js)$", url), f"{url} is not a content-hashed name"
        for encoding in ("br", "gzip"):
            answer = httpx.get(prod_server.url + url, headers={"Accept-Encoding": encoding})
            assert answer.status_code == 200, url
            assert answer.headers["content-encoding"] == encoding, (url, encoding, answer.headers)
            cache = answer.headers["cache-control"]
            max_age = int(re.search(r"max-age=(\d+)", cache).group(1))
            assert max_age >= 365 * 24 * 3600 and "immutable" in cache, cache
        plain = httpx.get(prod_server.url + url, headers={"Accept-Encoding": "identity"})
        assert plain.status_code == 200 and "content-encoding" not in plain.headers
    source = (prod_server.static_root / "css").glob("concord.*.css")
    assert any(f.read_bytes() == httpx.get(prod_server.url + css[0]).content for f in source)
    # a file that does not exist is a 404, not the 200 of a catch-all page
    assert httpx.get(prod_server.url + "/static/css/no-such-file.css").status_code == 404


def test_only_hashed_copies_are_collected_and_source_maps_stay_uncompressed(prod_server):
    """WHITENOISE_KEEP_ONLY_HASHED_FILES and the maps skipped by compression (config/settings.py): every file
    the manifest names is there, nothing else is, and Swagger UI's style sheet's map is served as it is."""
    root = prod_server.static_root
    manifest = json.loads((root / "staticfiles.json").read_text())["paths"]
    hashed = set(manifest.values())
    stored = {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()} - {"staticfiles.json"}
    assert hashed and hashed <= stored
    plain = {s for s in stored if s.removesuffix(".br").removesuffix(".gz") not in hashed}
    assert not plain, sorted(plain)[:5]  # no unhashed copy, which no page links
    maps = [name for name in hashed if name.endswith(".map")]
    assert maps and not [m for m in maps if m + ".br" in stored or m + ".gz" in stored]
    styles = manifest["drf_spectacular_sidecar/swagger-ui-dist/swagger-ui.css"]  # links its map
    link = re.search(rb"sourceMappingURL=([^\s*]+)", (root / styles).read_bytes()).group(1).decode()
    assert re.fullmatch(r"swagger-ui\.css\.[0-9a-f]{12}\.map", link), link
    folder = styles.rsplit("/", 1)[0]
    answer = httpx.get(f"{prod_server.url}/static/{folder}/{link}", headers={"Accept-Encoding": "br"})
    assert answer.status_code == 200 and "content-encoding" not in answer.headers
    assert b'"mappings"' in answer.content
    assert httpx.get(prod_server.url + "/static/css/concord.css").status_code == 404  # the plain name is gone


def test_other_errors_are_our_pages_under_gunicorn(browser, prod_server, people):
    """A rater on an admin page gets a 403 with the navigation; an unknown Host header (ALLOWED_HOSTS)
    gets our 400; an unknown API address stays JSON. Never Django's debug pages."""
    context, page, watch = new_page(browser, prod_server, width=390)
    try:
        log_in(page, prod_server, people["annotator"])
        response = page.goto(f"{prod_server.url}/studies/new/")  # admins only
        assert response.status == 403
        assert page.locator("nav[aria-label=Main] a", has_text="Studies").is_visible()
        assert_page_is_whole(page, "403", 390)
        shot(page, "403-390")
    finally:
        context.close()
    assert not watch.foreign and not watch.static_failures

    wrong_host = httpx.get(prod_server.url + "/login/", headers={"Host": "evil.example.org"})
    assert wrong_host.status_code == 400 and "could not understand this request" in wrong_host.text
    assert "DisallowedHost" not in wrong_host.text
    api = httpx.get(prod_server.url + "/api/no-such-thing/")
    assert api.status_code == 404 and api.json() == {"detail": "Not found."}
