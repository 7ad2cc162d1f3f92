"""In Chromium: the admin opens a Prolific participant's erasure from the Progress page, chooses to keep
the ratings under a random id, and finds the erasure in the audit log. Screenshot in
test-artifacts/participants-audit.png."""

from __future__ import annotations

from pathlib import Path

import pytest

from annotation.models import ParticipantErasure
from tests.conftest import log_in
from tests.screens import screenshot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"


def test_erase_from_progress_then_read_the_audit_log(page, live_server, rated, crowd_rater, admin_user):
    log_in(page, live_server, admin_user)
    page.goto(f"{live_server.url}/studies/{rated.slug}/progress/")
    row = page.locator(f"tr[data-rater='{crowd_rater.username}']")
    row.get_by_role("link", name="erase…").click()
    page.wait_for_url(f"**/participants/{crowd_rater.pk}/erase/")
    assert "3 assignments, 30 ratings" in page.inner_text("#erase")  # two rated (15 each), one open
    page.check("input[value=pseudonymise]")
    page.click("button:has-text('Erase')")
    page.wait_for_url(f"**/studies/{rated.slug}/manage/")
    erasure = ParticipantErasure.objects.get()
    assert erasure.pseudonym in page.inner_text("body")
    page.click("nav.subnav >> text=Audit log")
    entry = page.locator("tr[data-action=participant_erase]")
    assert erasure.pseudonym in entry.inner_text() and "boss" in entry.inner_text()
    assert "5f1a2b3c4d" not in page.content() and crowd_rater.username not in page.content()
    screenshot(page, ARTIFACTS / "participants-audit.png", full_page=True)
