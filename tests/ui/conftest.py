"""Helpers for the layout tests: a page at a given width that records requests to other hosts,
an overflow check, and screenshots under test-artifacts/ui/ (`make screenshots`)."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlsplit

import pytest

from tests.page_settle import tracked
from tests.screens import screenshot

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "ui"
WIDTHS = (390, 1400)


@pytest.fixture
def page_at(browser, live_server):
    """page_at(width) -> a fresh page; page.foreign lists every request made to another host."""
    contexts = []
    own_host = urlsplit(live_server.url).netloc

    def _page(width: int):
        context = tracked(browser.new_context(viewport={"width": width, "height": 860 if width > 600 else 780}))
        contexts.append(context)
        page = context.new_page()
        page.foreign = []

        def _track(request):
            parts = urlsplit(request.url)
            if parts.scheme in ("http", "https", "ws", "wss") and parts.netloc != own_host:
                page.foreign.append(request.url)

        page.on("request", _track)
        return page

    yield _page
    for c in contexts:
        c.close()


def horizontal_overflow(page) -> int:
    """Pixels by which the document is wider than the window (0 when it fits)."""
    return page.evaluate("document.documentElement.scrollWidth - window.innerWidth")


def shot(page, name: str, *, full_page: bool = False) -> None:
    screenshot(page, ARTIFACTS / f"{name}.png", full_page=full_page)


def answer_the_rest_and_submit(page) -> None:
    """Answer every yes/no and scale question still open by pointer (the first choice, the fourth
    point), leave highlights as they are, submit, and wait for the workspace to move on."""
    for fs in page.locator("fieldset.criterion").all():
        if fs.locator("input:checked").count():
            continue
        if fs.get_attribute("data-kind") == "binary":
            fs.locator("label").first.click()
        elif fs.get_attribute("data-kind") == "likert":
            fs.locator("label.seg").nth(3).click()
    page.locator(".submit-btn").first.click()
    page.wait_for_function("() => !document.querySelector('#ws-form') || "
                           "document.querySelector('#workspace').dataset.state !== 'rate'")
