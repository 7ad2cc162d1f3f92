"""The web steps of docs/tutorials/crowd-study.md, walked in Chromium as a reader does them: with the page's
own items and phases block, set the training pass mark on the Manage page, paste the phases, create the
Prolific link (its URL ends as the page says), open the study; then, in a private window, the link with
Prolific's placeholders filled in, through consent, the questionnaire, the instructions' check, training
and rating to the completion code and the way back to Prolific."""

from __future__ import annotations

import json
import re

import pytest

from annotation.models import Assignment, CrowdParticipant
from tests.conftest import REPO, log_in
from tests.docs.blocks import page_blocks
from tests.ui.conftest import page_at  # noqa: F401 (a fixture)
from tests.ui.test_crowd_flow import _answer_pair

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PAGE = REPO / "docs" / "tutorials" / "crowd-study.md"


def tutorial() -> dict:
    text = PAGE.read_text(encoding="utf-8")
    blocks = page_blocks(PAGE, REPO)
    items = next(b.code for b in blocks if "<<'JSONL'" in b.code).split("<<'JSONL'\n", 1)[1].split("\nJSONL", 1)[0]
    ending = re.search(r"it ends in\s+`([^`]+)`", text).group(1)
    return {"items": items + "\n", "phases": next(b.code for b in blocks if b.lang == "yaml"), "ending": ending,
            "code": re.search(r"e\.g\.\s+`(\w+)`", text).group(1)}


def shown_winner(user, system: str = "good") -> str:
    """The shown number of the training item's `system` answer (the tutorial's gold names it)."""
    a = Assignment.objects.get(rater=user, status="active")
    systems = {o.position: o.system for o in a.item.outputs.all()}
    return str([systems[p] for p in a.permutation].index(system) + 1)


def test_the_crowd_tutorials_web_steps(page_at, live_server, admin_user, preset_version):  # noqa: F811
    from annotation.services.items import items_import
    from annotation.services.studies import study_create

    steps = tutorial()
    study = study_create(name="Tea and tomatoes", slug="crowd-tutorial", rubric_version=preset_version[
        "compare-pairwise"], user=admin_user, raters_per_item=3)  # the page's Python step, as the client does it
    items_import(study=study, text=steps["items"], filename="crowd-items.jsonl")
    assert len([json.loads(line) for line in steps["items"].splitlines() if line]) == 5

    page = page_at(1400)
    log_in(page, live_server, admin_user)
    page.goto(f"{live_server.url}/studies/{study.slug}/manage/")
    # 1. Settings: the training pass mark.
    page.fill("#id_training_pass_mark", "0.5")
    page.click("#settings button:has-text('Save settings')")
    page.wait_for_selector("#settings .notice, #settings .error")
    assert page.locator("#settings .error").count() == 0, page.inner_text("#settings")
    study.refresh_from_db()
    assert study.training_pass_mark == 0.5
    # 2. Participant phases: the page's block, pasted.
    page.fill("#phases-text", steps["phases"])
    page.click("#phases button:has-text('Save phases')")
    page.wait_for_load_state()
    assert page.locator("[data-testid=phases-errors]").count() == 0
    study.refresh_from_db()
    assert study.phases["pre_questionnaire"]["questions"][0]["options"] == ["yes", "no"]
    # 3. Crowd links: Prolific, the completion code; the URL ends as the page says.
    page.select_option("#crowd select[name=provider]", "prolific")
    page.fill("#crowd input[name=completion_code]", steps["code"])
    page.click("#crowd form[hx-post$='/crowd-links/'] button[type=submit]")
    page.wait_for_selector("#crowd input.invitation-link")
    url = page.input_value("#crowd input.invitation-link")
    assert url.endswith(steps["ending"]), url
    # 4. Status: open the study.
    page.click("#lifecycle button[value=open]")
    page.click("#lifecycle button:has-text('Yes, open')")
    page.wait_for_function("() => document.querySelector('#lifecycle').textContent.includes('is open')")

    # The participant, in a private window: the link as Prolific fills it in.
    part = page_at(1400)
    part.route("https://app.prolific.com/**", lambda route: route.fulfill(
        status=200, content_type="text/html", body="<h1>Back on Prolific</h1>"))
    part.goto(url.replace("{{%PROLIFIC_PID%}}", "test-participant-1").replace("{{%STUDY_ID%}}", "s1")
              .replace("{{%SESSION_ID%}}", "session-1"))
    part.wait_for_selector("[data-testid=phase-consent]")
    assert "Do you agree to take part?" in part.inner_text("[data-testid=phase-consent]")
    part.click("[data-testid=consent-agree]")
    part.wait_for_selector("[data-testid=phase-pre-questionnaire]")
    part.check("input[name=q_native_english][value=no]")
    part.check("input[name=q_ai_use][value='4']")
    part.click("[data-testid=phase-continue]")
    part.wait_for_selector("[data-testid=phase-instructions]")
    part.check("input[name='q_length'][value='not necessarily']")
    part.click("[data-testid=phase-continue]")
    user = CrowdParticipant.objects.get(participant_id="test-participant-1").user
    for n in range(2):  # the two training items, each followed by what was expected and why
        part.wait_for_selector("#ws-form[data-ready='1']")
        _answer_pair(part, shown_winner(user))
        part.wait_for_selector("[data-testid=training-feedback]")
        part.click("text=Next training item" if n == 0 else "text=Start rating")
    for n in range(3):
        part.wait_for_selector("#ws-form[data-ready='1']")
        _answer_pair(part, "1")
        if n < 2:
            part.wait_for_function("n => document.querySelector('[data-progress]')?.textContent.startsWith(n)",
                                   arg=f"{n + 1} done")
    part.wait_for_selector("[data-testid=completion-code]")
    assert part.inner_text("[data-testid=completion-code]") == steps["code"]
    part.click("[data-testid=completion-link]")
    part.wait_for_url(f"https://app.prolific.com/submissions/complete?cc={steps['code']}")
