"""Walk every page reachable from the navigation, for each role, at 390 px and 1400 px in real
Chromium: each answers below 500 with an HTML page, none scrolls sideways, none asks another host for anything.
Screenshots of every page go to test-artifacts/ui/walk-<role>-<width>-<path>.png."""

from __future__ import annotations

from urllib.parse import urlsplit

import pytest

from tests.conftest import log_in, make_user
from tests.ui.conftest import WIDTHS, horizontal_overflow, shot
from tests.page_settle import settle
from tests.workspace.conftest import items_jsonl

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

NAV_LINKS = "header nav a, .subnav a, .study-card .actions a"
MAX_PAGES = 40


def _walk(page, live_server, role: str, width: int) -> list[str]:
    host = urlsplit(live_server.url).netloc
    seen: list[str] = []
    queue = ["/"]
    failures = []
    while queue and len(seen) < MAX_PAGES:
        path = queue.pop(0)
        if path in seen:
            continue
        seen.append(path)
        response = page.goto(live_server.url + path)
        settle(page)
        status = response.status if response else 0
        if status >= 500 or status == 0:
            failures.append(f"{path}: status {status}")
        elif not response.headers.get("content-type", "").startswith("text/html"):
            failures.append(f"{path}: ends on {response.headers.get('content-type')}, not a page")
        overflow = horizontal_overflow(page)
        if overflow > 0:
            failures.append(f"{path}: {overflow}px wider than the window")
        shot(page, f"walk-{role}-{width}-{path.strip('/').replace('/', '_') or 'home'}")
        for href in page.eval_on_selector_all(NAV_LINKS, "els => els.map(e => e.href)"):
            parts = urlsplit(href)
            if parts.netloc == host and parts.path not in seen and parts.path not in queue:
                queue.append(parts.path)
    assert not failures, failures
    assert page.foreign == [], page.foreign
    return seen


@pytest.fixture
def site(make_study, admin_user):
    rater, reader = make_user("walk-rater"), make_user("walk-reader")
    make_study("rrgen-001", annotators=[rater], researchers=[reader], items_text=items_jsonl(5))
    make_study("feedback-000", annotators=[rater], researchers=[reader])
    make_study("aqua-003", annotators=[rater], status="closed")
    return {"admin": admin_user, "researcher": reader, "annotator": rater}


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("role", ["admin", "researcher", "annotator"])
def test_every_page_in_the_navigation(page_at, live_server, site, role, width):
    page = page_at(width)
    log_in(page, live_server, site[role])
    seen = _walk(page, live_server, role, width)
    slug = "test-rrgen-001"
    if role in ("admin", "researcher"):
        assert {f"/studies/{slug}/report/", f"/studies/{slug}/plan/", f"/studies/{slug}/progress/",
                f"/studies/{slug}/datasets/",
                f"/judges/studies/{slug}/", f"/judges/studies/{slug}/gold/",
                f"/judges/studies/{slug}/doubt/"} <= set(seen)
    if role == "admin":
        assert {f"/studies/{slug}/manage/", f"/studies/{slug}/items/"} <= set(seen)
    if role == "annotator":
        assert f"/studies/{slug}/rate/" in seen and not any("/report/" in p or "/items/" in p for p in seen)
