"""The datasets page in headless Chromium: the release form creates a release and the
releases table polls until it is ready."""

from __future__ import annotations

import os

import pytest
from django.urls import reverse

from annotation.models import DatasetRelease
from tests.screens import screenshot

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.browser]


def test_create_a_release_in_the_browser(celery_worker_session, codegen_study, researcher, live_server, page,
                                         settings, tmp_path):
    from tests.conftest import PASSWORD

    settings.MEDIA_ROOT = tmp_path
    page.goto(live_server.url + reverse("login"))
    page.fill("input[name=username]", researcher.username)
    page.fill("input[name=password]", PASSWORD)
    page.click("button[type=submit]")
    page.goto(live_server.url + reverse("datasets", args=[codegen_study.slug]))
    assert page.input_value("input[name=version]") == "0.1.0"
    page.fill("textarea[name=changelog]", "First public release")
    page.click("text=Create release")
    page.wait_for_selector("#releases .badge.open", timeout=30_000)  # htmx polling swapped in 'ready'
    page.wait_for_function("() => document.querySelectorAll('#releases .badge.open').length == 2", timeout=30_000)
    assert DatasetRelease.objects.filter(status="ready").count() == 2  # jsonl and parquet by default
    assert page.locator("#releases a.button", has_text="Download").count() == 2
    overflow = page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth")
    assert overflow <= 0
    shot = os.environ.get("CONCORD_SCREENSHOT_DATASETS")
    if shot:
        screenshot(page, shot, full_page=True)
