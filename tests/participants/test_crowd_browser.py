"""A crowd participant is held by the browser that started: another browser with the same panel ids is
told the id is in use, and takes over only once the first was idle for CROWD_BROWSER_IDLE_MINUTES (the
first is then signed out); the panel's session id must be the one the participant started with."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.auth import SESSION_KEY
from django.test import Client
from django.utils import timezone

from annotation.models import Assignment, CrowdParticipant
from annotation.services.crowd import crowd_link_create
from annotation.views.crowd import BROWSER_COOKIE

PID = "6a7b8c9d0e"


@pytest.fixture
def link(study, admin_user):
    return crowd_link_create(study=study, user=admin_user, provider="prolific", completion_code="C1X2Y3")


def enter(browser: Client, link, session: str = "sess-1"):
    return browser.get(f"/crowd/{link.token}/", {"PROLIFIC_PID": PID, "STUDY_ID": "s", "SESSION_ID": session})


def workspace(browser: Client, study) -> int:
    return browser.get(f"/studies/{study.slug}/rate/").status_code


def signed_in(browser: Client) -> bool:
    return SESSION_KEY in browser.session


def idle(participant: CrowdParticipant, minutes: int) -> None:
    """As if the holding browser had done nothing for `minutes`: its entry and its item's lease moved back."""
    participant.refresh_from_db()
    back = timedelta(minutes=minutes)
    CrowdParticipant.objects.filter(pk=participant.pk).update(seen_at=participant.seen_at - back)
    for a in Assignment.objects.filter(rater=participant.user).exclude(expires_at=None):
        Assignment.objects.filter(pk=a.pk).update(expires_at=a.expires_at - back)


def test_a_second_browser_is_told_the_id_is_in_use(study, link):
    first, second = Client(), Client()
    assert enter(first, link).status_code == 302 and workspace(first, study) == 200
    refused = enter(second, link)
    assert refused.status_code == 409
    assert b"in use in another browser" in refused.content and not signed_in(second)
    assert workspace(second, study) == 302  # to the sign-in page: nothing of the participant's
    # the first goes on, and its own reload of the link is no second browser
    assert enter(first, link).status_code == 302 and workspace(first, study) == 200
    assert CrowdParticipant.objects.count() == 1


def test_after_the_idle_time_the_second_takes_over_and_the_first_is_signed_out(study, link, settings):
    first, second = Client(), Client()
    assert enter(first, link).status_code == 302 and workspace(first, study) == 200  # takes an item
    participant = CrowdParticipant.objects.get()
    idle(participant, settings.CROWD_BROWSER_IDLE_MINUTES - 2)
    assert enter(second, link).status_code == 409  # idle, but not long enough
    idle(participant, 3)
    assert enter(second, link).status_code == 302 and workspace(second, study) == 200
    assert workspace(first, study) == 302 and not signed_in(first)  # its session was ended
    assert enter(first, link).status_code == 409  # and now the second holds the participant
    participant.refresh_from_db()
    assert CrowdParticipant.objects.count() == 1 and int(second.session[SESSION_KEY]) == participant.user_id


def test_a_submit_keeps_the_browser_active(study, link, settings):
    first = Client()
    assert enter(first, link).status_code == 302 and workspace(first, study) == 200
    participant = CrowdParticipant.objects.get()
    idle(participant, settings.CROWD_BROWSER_IDLE_MINUTES + 5)
    Assignment.objects.filter(rater=participant.user).update(status=Assignment.Status.SUBMITTED,
                                                             submitted_at=timezone.now() - timedelta(minutes=1))
    assert enter(Client(), link).status_code == 409


def test_the_panel_session_id_must_match(study, link, settings):
    first = Client()
    assert enter(first, link, session="sess-1").status_code == 302
    participant = CrowdParticipant.objects.get()
    idle(participant, settings.CROWD_BROWSER_IDLE_MINUTES + 1)
    for browser in (Client(), first):  # idle or not, another browser or the same
        refused = enter(browser, link, session="sess-2")
        assert refused.status_code == 400 and b"SESSION_ID" in refused.content
        assert enter(browser, link, session="").status_code == 400
    assert enter(Client(), link, session="sess-1").status_code == 302  # the right one, after the idle time


def test_the_crowd_session_is_shorter_than_a_staff_session(study, link, settings):
    browser = Client()
    assert enter(browser, link).status_code == 302
    assert 0 < browser.session.get_expiry_age() <= settings.CROWD_SESSION_SECONDS < settings.SESSION_COOKIE_AGE
    cookie = browser.cookies[BROWSER_COOKIE]
    assert cookie["httponly"] and cookie["samesite"] == "Lax" and len(cookie.value) >= 40
    participant = CrowdParticipant.objects.get()
    assert participant.browser_key_hash and cookie.value not in participant.browser_key_hash  # only its hash
