"""The report page of a large study while a worker computes it (annotation.reports.background), in
real Chromium at 390 and 1400 px: the progress bar passes axe-core, and the page turns into the report
by itself (htmx poll, HX-Refresh) once the report is cached. The computation is marked queued
beforehand, so the page waits until the test computes the report as the task would."""

from __future__ import annotations

import time

import pytest

from annotation.reports.background import _keys, report_compute
from tests.a11y.axe import axe_run, describe
from tests.conftest import log_in
from tests.reports.conftest import raters, rated_study  # noqa: F401  (fixtures)
from tests.ui.conftest import WIDTHS, horizontal_overflow, shot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.mark.parametrize("width", WIDTHS)
def test_the_pending_report_is_accessible_and_becomes_the_report(page_at, live_server, rated_study, researcher,
                                                                 settings, width):
    from django.core.cache import cache

    settings.REPORT_BACKGROUND_RATINGS = 1
    queued, _failed, _latest = _keys(rated_study)
    cache.set(queued, time.time() - 3, 600)  # as if a reader had queued it 3 s ago
    page = page_at(width)
    log_in(page, live_server, researcher)
    page.goto(f"{live_server.url}/studies/{rated_study.slug}/report/")
    bar = page.locator("#report-pending [role=progressbar]")
    assert bar.is_visible() and 0 < int(bar.get_attribute("aria-valuenow")) < 100
    assert horizontal_overflow(page) <= 0
    failures = describe(axe_run(page))
    shot(page, f"report-pending-{width}")
    assert not failures, "\n".join(failures)
    page.wait_for_timeout(2500)  # a poll while it is still computing keeps the bar
    assert page.locator("#report-pending").is_visible()
    report_compute(rated_study.pk)
    # the next poll answers the report, its plots drawn then: 11 s in all on an instance three times slower
    # than usual (probe 26 ms), and 15 s did not do with the suite's other workers busy (2026-12-07)
    page.wait_for_selector("#agreement", timeout=60_000)
    assert page.locator("#report-pending").count() == 0
