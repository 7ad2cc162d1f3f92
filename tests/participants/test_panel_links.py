"""The study URL each panel is given is filled in by that panel's documented rule, played here as the
panel plays it, and the participant then walks the real routes to the end and back to the panel:

- Prolific replaces the literal text `{{%PROLIFIC_PID%}}`, `{{%STUDY_ID%}}` and `{{%SESSION_ID%}}` in the
  study URL (a plain string replace, braces unencoded) and takes participants back at
  `https://app.prolific.com/submissions/complete?cc=CODE`;
- MTurk's ExternalQuestion appends `assignmentId`, `hitId`, `turkSubmitTo` and `workerId` to the URL
  (assignmentId ASSIGNMENT_ID_NOT_AVAILABLE in preview, without workerId) and takes the finished
  assignment as a form posted to `<turkSubmitTo>/mturk/externalSubmit` carrying the assignmentId;
- any other panel: the researcher puts the panel's placeholders where PARTICIPANT_ID and SESSION_ID
  stand, the panel fills them in, and the participant goes back to the link's return address."""

from __future__ import annotations

import html
import re
from urllib.parse import urlencode

import pytest

from annotation.models import CrowdParticipant
from tests.phases.conftest import phases_study
from tests.phases.walk import Walk

pytestmark = pytest.mark.django_db

QUOTA = 2


@pytest.fixture
def study(make_study):
    return phases_study(make_study, n_items=4)


def make_link(client, study, **fields) -> str:
    """Create the link on the Manage page, as a researcher does; the study URL the page shows for it."""
    resp = client.post(f"/studies/{study.slug}/crowd-links/", {"days": "30", "items_per_participant": str(QUOTA),
                                                               **fields}, follow=True)
    assert resp.status_code == 200
    link = study.crowd_links.latest("id")
    shown = re.search(rf'id="crowd-link-{link.pk}"[^>]*value="([^"]*)"', resp.content.decode())
    assert shown, "the Manage page shows no URL for the new link"
    return html.unescape(shown.group(1))


def to_the_end(walk: Walk) -> str:
    """Consent, questionnaire, instructions, training, the quota of items, the closing questions: the page."""
    walk.to_rating()
    assert walk.rate(QUOTA)["state"] == "questionnaire"
    done = walk.post_questionnaire()
    assert done["state"] == "done", done
    return walk.page()


def test_prolific_fills_in_its_literal_placeholders(study, client_for, admin_user):
    url = make_link(client_for(admin_user), study, provider="prolific", completion_code="C7QX2Z")
    assert url.endswith("?PROLIFIC_PID={{%PROLIFIC_PID%}}&STUDY_ID={{%STUDY_ID%}}&SESSION_ID={{%SESSION_ID%}}")
    assert url.startswith("http://testserver/crowd/") and "%7B" not in url
    filled = (url.replace("{{%PROLIFIC_PID%}}", "60a1b2c3d4e5f6a7b8c9d0e1").replace("{{%STUDY_ID%}}", "65f0aa11")
              .replace("{{%SESSION_ID%}}", "sess-77aa"))
    walk = Walk(study, filled)
    assert walk.entry.status_code == 302
    page = to_the_end(walk)
    participant = CrowdParticipant.objects.get()
    assert (participant.participant_id, participant.session_id) == ("60a1b2c3d4e5f6a7b8c9d0e1", "sess-77aa")
    back = html.unescape(re.search(r'href="([^"]+)" data-testid="completion-link"', page).group(1))
    assert back == "https://app.prolific.com/submissions/complete?cc=C7QX2Z"
    assert walk.state()["completion_url"] == back
    # One who declines goes back with the consent's return code, in the same format.
    declined = Walk(study, url.replace("{{%PROLIFIC_PID%}}", "60a1b2c3d4e5f6a7b8c9d0e2")
                    .replace("{{%STUDY_ID%}}", "65f0aa11").replace("{{%SESSION_ID%}}", "sess-77ab"))
    assert declined.consent(agree=False)["return_url"] == "https://app.prolific.com/submissions/complete?cc=NOCONSENT"


def test_unfilled_prolific_placeholders_are_refused_with_the_field_named(study, client_for, admin_user):
    url = make_link(client_for(admin_user), study, provider="prolific", completion_code="C7QX2Z")
    walk = Walk(study, url)  # opened unedited: not a participant id
    assert walk.entry.status_code == 400 and "PROLIFIC_PID" in walk.entry.content.decode()
    assert not CrowdParticipant.objects.exists()


def test_mturk_appends_its_parameters_and_takes_the_assignment_back(study, client_for, admin_user):
    url = make_link(client_for(admin_user), study, provider="mturk", completion_code="MT-DONE-1")
    assert "?" not in url  # an ExternalQuestion URL: MTurk adds the query
    submit_to = "https://workersandbox.mturk.com"
    preview = Walk(study, f"{url}?{urlencode({'assignmentId': 'ASSIGNMENT_ID_NOT_AVAILABLE', 'hitId': '3HIT'})}"
                          f"&{urlencode({'turkSubmitTo': submit_to})}")
    assert preview.entry.status_code == 200 and "Accept the HIT" in preview.entry.content.decode()
    assert not CrowdParticipant.objects.exists()  # a preview creates nothing
    appended = urlencode({"assignmentId": "3ASSIGN9XYZ", "hitId": "3HIT", "turkSubmitTo": submit_to,
                          "workerId": "A1WORKER42"})
    walk = Walk(study, f"{url}?{appended}")
    assert walk.entry.status_code == 302
    page = to_the_end(walk)
    participant = CrowdParticipant.objects.get()
    assert (participant.participant_id, participant.session_id) == ("A1WORKER42", "3ASSIGN9XYZ")
    form = re.search(r'<form method="post" action="([^"]+)" data-testid="mturk-submit">(.*?)</form>', page, re.S)
    assert form and form.group(1) == "https://workersandbox.mturk.com/mturk/externalSubmit"
    fields = dict(re.findall(r'name="(\w+)" value="([^"]*)"', form.group(2)))
    assert fields == {"assignmentId": "3ASSIGN9XYZ", "completion_code": "MT-DONE-1"}
    # A worker screened out by training submits the HIT too, marked so, for the screen-out payment.
    failing = Walk(study, f"{url}?" + urlencode({"assignmentId": "3ASSIGN9FAIL", "hitId": "3HIT",
                                                 "turkSubmitTo": submit_to, "workerId": "A1WORKER43"}))
    failing.consent()
    failing.pre()
    state = failing.instructions().json()
    for attempt in (1, 2):
        while state["state"] == "training":
            state = failing.answer(state, right=False)
        state = failing.retry_training() if attempt == 1 else state
    assert state["state"] == "screened_out"
    form = re.search(r'data-testid="mturk-submit">(.*?)</form>', failing.page(), re.S)
    assert dict(re.findall(r'name="(\w+)" value="([^"]*)"', form.group(1))) == {
        "assignmentId": "3ASSIGN9FAIL", "screened_out": "training_failed"}


def test_mturk_submits_only_to_mturk(study, client_for, admin_user):
    url = make_link(client_for(admin_user), study, provider="mturk")
    appended = urlencode({"assignmentId": "A9", "hitId": "H", "turkSubmitTo": "https://evil.example", "workerId": "W9"})
    walk = Walk(study, f"{url}?{appended}")
    assert "mturk-submit" not in to_the_end(walk)


def test_another_panel_fills_in_what_the_researcher_put_in_its_place(study, client_for, admin_user):
    url = make_link(client_for(admin_user), study, provider="generic",
                    completion_url="https://panel.example.org/complete?code=GX1")
    assert url.endswith("?participant=PARTICIPANT_ID&session=SESSION_ID")
    # e.g. a panel whose placeholders are [%PID%] and [%SID%]: the researcher writes them in, the panel fills them
    template = url.replace("PARTICIPANT_ID", "[%PID%]").replace("SESSION_ID", "[%SID%]")
    walk = Walk(study, template.replace("[%PID%]", "cr-8812").replace("[%SID%]", "run-3"))
    assert walk.entry.status_code == 302
    page = to_the_end(walk)
    assert CrowdParticipant.objects.get().participant_id == "cr-8812"
    back = html.unescape(re.search(r'href="([^"]+)" data-testid="completion-link"', page).group(1))
    assert back == "https://panel.example.org/complete?code=GX1"
