"""The report page in headless Chromium: plots render, nothing overflows the page."""

from __future__ import annotations

import os

import pytest
from django.urls import reverse
from tests.screens import screenshot

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.browser]


def test_report_page_renders_in_chromium(rated_study, researcher, live_server, page):
    from tests.conftest import PASSWORD

    page.goto(live_server.url + reverse("login"))
    page.fill("input[name=username]", researcher.username)
    page.fill("input[name=password]", PASSWORD)
    page.click("button[type=submit]")
    page.goto(live_server.url + reverse("report", args=[rated_study.slug]))
    assert page.locator("h1").first.inner_text().startswith("Report:")
    page.wait_for_selector("#report-plots[data-drawn]", state="attached")  # the page's second request
    assert page.locator(".report svg").count() >= 5
    assert page.locator(".report [aria-busy=true]").count() == 0  # every placeholder filled or emptied
    # the widest element must fit the viewport: plots scale with their container
    overflow = page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth")
    assert overflow <= 0
    shot = os.environ.get("CONCORD_SCREENSHOT")
    if shot:
        screenshot(page, shot, full_page=True)
