"""The judges page in headless Chromium: an admin runs a judge and watches htmx poll the progress
to the end (a real Celery worker, the fake model server), then evaluates against gold."""

from __future__ import annotations

from pathlib import Path

import pytest

from judges.models import JudgeRun
from tests.conftest import log_in
from tests.screens import screenshot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"


def test_run_a_judge_and_watch_it_finish(page, live_server, celery_worker_session, make_study, make_judge,
                                         admin_user):
    from judges.fakeserver import running_fake_server

    study = make_study("aqua-003")
    with running_fake_server(latency_s=0.3) as server:
        make_judge("aqua-slow", endpoint=server.base_url, method="label", concurrency=1,
                   method_options={"chunk_size": 1})
        log_in(page, live_server, admin_user)
        page.goto(f"{live_server.url}/judges/studies/{study.slug}/")
        page.click("text=Run judge")
        run = JudgeRun.objects.get()
        card = page.locator(f"#run-{run.pk}")
        card.wait_for()
        assert card.get_attribute("hx-trigger") == "every 1s"  # polling while the run is active
        page.wait_for_selector(f"#run-{run.pk} >> text=Done", timeout=60_000)
    card = page.locator(f"#run-{run.pk}")
    text = card.inner_text()
    assert f"{run.n_expected} / {run.n_expected}" in text and "judgements/s" in text
    assert card.get_attribute("hx-trigger") is None  # polling stopped by the final fragment
    screenshot(page, ARTIFACTS / "judges-run-done.png", full_page=True)
    with page.expect_download() as dl:
        card.locator("text=labeled.csv").click()
    assert dl.value.suggested_filename == f"run{run.pk}-labeled.csv"

    page.click("nav.subnav a:has-text(\"Gold\")")
    page.click("button:has-text('Evaluate')")
    row = page.locator("#gold-table tbody tr").first
    assert "aqua-slow" in row.inner_text() and "label" in row.inner_text()
    screenshot(page, ARTIFACTS / "judges-gold.png", full_page=True)
