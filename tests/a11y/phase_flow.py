"""Three crowd participants through every rater-facing state of the participant phases (the demo's
phases: consent, a pre-study questionnaire, instructions with the attention policy and a comprehension
check, training, one item, a post-study questionnaire, completion): one to the completion code, one who
fails training twice, one who declines consent. At each state `visit(name)` is called on the page as it
stands (errors included). Selectors only, never texts: the page may be in German."""

from __future__ import annotations

from typing import Callable
from urllib.parse import urlencode

from annotation.demo import TRAINING
from annotation.models import Assignment, CrowdParticipant
from annotation.services.crowd import crowd_link_create
from tests.phases.conftest import expected_winner, phases_study
from tests.ui.test_crowd_flow import _answer_pair

READY = "#ws-form[data-ready='1']"
Visit = Callable[[str], None]


def phases_study_and_link(make_study, admin_user):
    """The study of tests.phases (every phase, two training items) and a Prolific link for one item each."""
    study = phases_study(make_study, n_items=3)
    link = crowd_link_create(study=study, user=admin_user, provider="prolific", completion_code="PHASES-OK",
                             items_per_participant=1, time_limit_minutes=60)
    return study, link


def _workspace(page, base: str, study, selector: str) -> None:
    page.goto(f"{base}/studies/{study.slug}/rate/")
    page.wait_for_selector(selector)


def _continue(page, *, error: bool) -> None:
    page.click("[data-testid=phase-continue]")
    if error:
        page.wait_for_selector("[data-testid=question-error]")


def _train(page, base: str, study, pid: str, *, right: bool) -> None:
    for row in TRAINING:
        _workspace(page, base, study, READY)
        a = Assignment.objects.get(rater=CrowdParticipant.objects.get(participant_id=pid).user, status="active")
        good = expected_winner(a)
        _answer_pair(page, good if right else {"1": "2", "2": "1"}[good])
        page.wait_for_selector("[data-testid=training-result]" if row is TRAINING[-1] else
                               "[data-testid=training-feedback]")


def _start(page, base: str, link, pid: str) -> None:
    page.context.clear_cookies()
    query = urlencode({"PROLIFIC_PID": pid, "STUDY_ID": "st", "SESSION_ID": f"se-{pid}"})
    page.goto(f"{base}/crowd/{link.token}/?{query}")
    page.wait_for_selector("[data-testid=phase-consent]")


def _through_instructions(page, visit: Visit) -> None:
    page.click("[data-testid=consent-agree]")
    page.wait_for_selector("[data-testid=phase-pre-questionnaire]")
    visit("pre-questionnaire")
    _continue(page, error=True)
    visit("pre-questionnaire, required answers missing")
    page.check("input[name=q_native_english][value=no]")
    page.check("input[name=q_ai_use][value='4']")
    page.fill("input[name=q_age]", "17.5")  # below the range and not whole: its error comes back
    _continue(page, error=True)
    visit("pre-questionnaire, a number out of range")
    page.fill("input[name=q_age]", "34")
    _continue(page, error=False)
    page.wait_for_selector("[data-testid=phase-instructions]")
    visit("instructions")
    page.check("input[name=q_length][value=yes]")
    _continue(page, error=True)
    visit("instructions, comprehension check wrong")
    page.check("input[name='q_length'][value='not necessarily']")
    _continue(page, error=False)
    page.wait_for_selector(READY)


def walk_phases(page, base: str, study, link, visit: Visit, *, tag: str) -> None:
    # 1. Every phase to the completion code.
    _start(page, base, link, f"{tag}-a")
    visit("consent")
    _through_instructions(page, visit)
    _train(page, base, study, f"{tag}-a", right=True)
    _workspace(page, base, study, READY)
    _answer_pair(page, "1")
    page.wait_for_selector("[data-testid=phase-post-questionnaire]")
    visit("post-questionnaire")
    page.check("input[name=q_difficulty][value='2']")
    _continue(page, error=False)
    page.wait_for_selector("[data-testid=completion-code]")
    visit("completion")

    # 2. Training failed: the retry offered, then (failed again) screened out.
    _start(page, base, link, f"{tag}-b")
    _through_instructions(page, lambda name: None)
    _train(page, base, study, f"{tag}-b", right=False)
    _workspace(page, base, study, "[data-testid=phase-training-failed]")
    visit("training_failed, a retry left")
    page.click("[data-testid=phase-training-failed] button[type=submit]")
    _train(page, base, study, f"{tag}-b", right=False)
    page.wait_for_selector("[data-testid=training-continue]")
    visit("training result, no retry left")
    page.click("[data-testid=training-continue]")
    page.wait_for_selector("[data-testid=phase-screened-out][data-reason=training_failed]")
    visit("screened_out, training failed")

    # 3. Consent declined.
    _start(page, base, link, f"{tag}-c")
    page.click("[data-testid=consent-decline]")
    page.wait_for_selector("[data-testid=phase-screened-out][data-reason=consent_declined]")
    visit("screened_out, consent declined")
