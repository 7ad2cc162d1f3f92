"""The browser tests drive Debian's chromium-headless-shell (tests/conftest.py: a quarter of the full browser's
CPU). A layout or accessibility test is only worth its pass if the shell sees what Chromium's users see: here
the same pages, opened in both at both widths, give the same axe-core findings (every impact) and the same
layout, box for box."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.a11y.axe import axe_run
from tests.conftest import FULL_CHROMIUM, log_in, make_user
from tests.page_settle import settle, tracked
from tests.ui.conftest import WIDTHS

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# Every visible element of the page's main part: its tag, classes and box (rounded to whole pixels), and the
# document's own size. A font, wrapping or style the two browsers resolved differently moves some box.
LAYOUT = """() => {
  const boxes = [...document.querySelectorAll('body *')].filter((e) => e.offsetParent || e.tagName === 'BODY')
    .map((e) => { const r = e.getBoundingClientRect();
      return `${e.tagName}.${e.getAttribute('class') || ''} ${Math.round(r.x)},${Math.round(r.y)} `
        + `${Math.round(r.width)}x${Math.round(r.height)}`; });
  return {width: document.documentElement.scrollWidth, height: document.documentElement.scrollHeight, boxes};
}"""


def look(browser, server, url: str, width: int, user=None) -> dict:
    context = tracked(browser.new_context(viewport={"width": width, "height": 860}))
    try:
        page = context.new_page()
        if user is not None:
            log_in(page, server, user)
        page.goto(url)
        settle(page)
        violations = axe_run(page)
        return {"layout": page.evaluate(LAYOUT),
                "axe": sorted((v["id"], v["impact"], len(v["nodes"])) for v in violations)}
    finally:
        context.close()


def test_the_headless_shell_sees_the_pages_as_chromium_does(browser, live_server, make_study):
    if not Path(FULL_CHROMIUM).exists():
        pytest.fail(f"Chromium not found at {FULL_CHROMIUM}: run `make browsers`")
    rater = make_user("shell-rater")
    study = make_study("rrgen-001", annotators=[rater])
    pages = [(f"{live_server.url}/login/", None), (f"{live_server.url}/studies/{study.slug}/rate/", rater)]
    full = browser.browser_type.launch(executable_path=FULL_CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
    try:
        compared = 0
        for url, user in pages:
            for width in WIDTHS:
                shell_sees = look(browser, live_server, url, width, user)
                chromium_sees = look(full, live_server, url, width, user)
                assert shell_sees["axe"] == chromium_sees["axe"], (url, width)
                a, b = shell_sees["layout"], chromium_sees["layout"]
                assert (a["width"], a["height"]) == (b["width"], b["height"]), (url, width)
                assert len(a["boxes"]) >= 10
                moved = [(x, y) for x, y in zip(a["boxes"], b["boxes"]) if x != y]
                assert a["boxes"] == b["boxes"], f"{url} at {width}px, shell vs chromium: {moved[:5]}"
                print(url, width, len(a["boxes"]), "boxes", shell_sees["axe"])
                compared += 1
        assert compared == len(pages) * len(WIDTHS)
    finally:
        full.close()
