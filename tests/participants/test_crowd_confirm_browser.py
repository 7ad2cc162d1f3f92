"""In Chromium: an admin signed in opens a Prolific crowd link. The link asks first instead of replacing
the admin's session; "Go back" keeps the admin signed in; confirming signs them out and opens the
study as the participant, whose own later visits go straight in. Screenshot in
test-artifacts/crowd-confirm.png."""

from __future__ import annotations

from pathlib import Path

import pytest

from annotation.models import CrowdParticipant
from annotation.services.crowd import crowd_link_create
from tests.conftest import log_in
from tests.screens import screenshot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"


def test_a_crowd_link_asks_before_it_signs_an_admin_out(page, live_server, study, admin_user):
    link = crowd_link_create(study=study, user=admin_user, provider="prolific", completion_code="C1X2Y3")
    url = f"{live_server.url}/crowd/{link.token}/?PROLIFIC_PID=pidConfirm1&STUDY_ID=s&SESSION_ID=x"
    log_in(page, live_server, admin_user)

    page.goto(url)
    confirm = page.get_by_test_id("crowd-confirm")
    assert admin_user.username in confirm.inner_text()
    screenshot(page, ARTIFACTS / "crowd-confirm.png", full_page=True)
    assert not CrowdParticipant.objects.exists()  # nothing made before the person decides

    page.get_by_role("link", name=f"Go back, staying signed in as {admin_user.username}").click()
    page.wait_for_url(live_server.url + "/")
    assert page.goto(f"{live_server.url}/judges/").status == 200  # still the admin (an admins' page)
    assert not CrowdParticipant.objects.exists()

    page.goto(url)
    page.get_by_role("button", name="Sign out and continue as the participant").click()
    page.wait_for_url(f"**/studies/{study.slug}/rate/")
    participant = CrowdParticipant.objects.get()
    assert participant.participant_id == "pidConfirm1" and participant.user_id != admin_user.pk
    assert page.goto(f"{live_server.url}/judges/").status == 404  # the admin's session is gone
    page.goto(url)  # the participant coming back: straight to their work, no question
    page.wait_for_url(f"**/studies/{study.slug}/rate/")
    assert CrowdParticipant.objects.count() == 1
