"""Must show, in headless Chromium: a participant from a Prolific-style link through consent, the
pre-study questionnaire, the instructions (with the attention policy and a comprehension check),
training, rating, the post-study questionnaire and completion; one who declines consent; one who
fails training twice; and the payment sheet for the three."""

from __future__ import annotations

import csv
import io
from urllib.parse import urlencode

import pytest

from annotation.models import Assignment, CrowdParticipant, PhaseRecord
from annotation.services.crowd import crowd_link_create
from tests.phases.conftest import expected_winner, phases_study
from tests.ui.conftest import ARTIFACTS, horizontal_overflow, page_at, shot  # noqa: F401 (page_at: a fixture)
from tests.ui.test_crowd_flow import _answer_pair

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PROLIFIC = "https://app.prolific.com/**"


@pytest.fixture
def study(make_study):
    return phases_study(make_study, n_items=6)


def _enter(page, live_server, link, pid: str) -> None:
    page.route(PROLIFIC, lambda route: route.fulfill(status=200, content_type="text/html",
                                                     body="<h1>Prolific: back on Prolific</h1>"))
    query = urlencode({"PROLIFIC_PID": pid, "STUDY_ID": "st-23", "SESSION_ID": f"se-{pid}"})
    page.goto(f"{live_server.url}/crowd/{link.token}/?{query}")


def _consent_and_questions(page) -> None:
    page.wait_for_selector("[data-testid=phase-consent]")
    assert "Do you agree to take part?" in page.inner_text("[data-testid=phase-consent]")
    page.click("[data-testid=consent-agree]")
    page.wait_for_selector("[data-testid=phase-pre-questionnaire]")
    page.click("[data-testid=phase-continue]")  # nothing answered: the required ones are named
    page.wait_for_selector("[data-testid=question-error]")
    errors = page.locator("[data-testid=question-error]").all_inner_texts()
    assert errors == ["an answer is required", "an answer is required"]
    page.check("input[name=q_native_english][value=no]")
    page.check("input[name=q_ai_use][value='4']")
    page.fill("input[name=q_age]", "34")
    page.click("[data-testid=phase-continue]")
    page.wait_for_selector("[data-testid=phase-instructions]")
    policy = page.inner_text("[data-testid=attention-policy]")
    assert "rejected only after 2 failed attention checks" in policy and "never a rejection" in policy
    page.check("input[name=q_length][value=yes]")  # the comprehension check: wrong first
    page.click("[data-testid=phase-continue]")
    page.wait_for_selector("[data-testid=question-error]")
    assert "read them again" in page.inner_text("[data-testid=question-error]")
    page.check("input[name='q_length'][value='not necessarily']")
    page.click("[data-testid=phase-continue]")
    page.wait_for_selector("#ws-form[data-ready='1']")


def _train(page, user, *, right: bool) -> None:
    page.wait_for_selector("[data-testid=training-banner]")
    a = Assignment.objects.get(rater=user, status="active")
    assert a.item.is_training
    good = expected_winner(a)
    _answer_pair(page, good if right else {"1": "2", "2": "1"}[good])
    page.wait_for_selector("[data-testid=training-feedback]")


def test_three_participants_and_their_payment_sheet(page_at, live_server, study, admin_user, client_for):
    link = crowd_link_create(study=study, user=admin_user, provider="prolific", completion_code="DONE23",
                             items_per_participant=2, time_limit_minutes=60)

    # 1. Through every phase to the completion code.
    page = page_at(1400)
    _enter(page, live_server, link, "full1")
    _consent_and_questions(page)
    user = CrowdParticipant.objects.get(participant_id="full1").user
    _train(page, user, right=True)
    page.click("text=Next training item")
    page.wait_for_selector("#ws-form[data-ready='1']")
    _train(page, user, right=False)  # 1 of 2: the pass mark is 0.5
    assert page.locator("[data-testid=training-result][data-passed=yes]").is_visible()
    page.click("text=Start rating")
    for n in range(2):  # the quota
        page.wait_for_selector("#ws-form[data-ready='1']")
        assert page.locator("[data-testid=training-banner]").count() == 0
        _answer_pair(page, "1")
        if n == 0:  # the next item is swapped in: wait for its own form before pressing keys
            page.wait_for_function("n => document.querySelector('[data-progress]')?.textContent.startsWith(n)",
                                   arg="1 done")
    page.wait_for_selector("[data-testid=phase-post-questionnaire]")
    page.check("input[name=q_difficulty][value='2']")
    page.fill("input[name=q_comments]", "Some pairs were close.")
    shot(page, "phases-post-questionnaire-1400", full_page=True)
    page.click("[data-testid=phase-continue]")
    page.wait_for_selector("[data-testid=completion-code]")
    assert page.inner_text("[data-testid=completion-code]") == "DONE23"
    assert "Thank you for taking part." in page.inner_text("[data-testid=completion-text]")
    assert horizontal_overflow(page) == 0
    page.click("[data-testid=completion-link]")
    page.wait_for_url("https://app.prolific.com/submissions/complete?cc=DONE23")
    answers = {r.phase: r.answers for r in PhaseRecord.objects.filter(rater=user)}
    assert answers["pre"] == {"native_english": "no", "ai_use": 4, "age": 34}
    assert answers["post"] == {"difficulty": 2, "comments": "Some pairs were close."}

    # 2. Declines consent: back to Prolific with the no-consent code; only the decline is kept.
    page = page_at(390)
    _enter(page, live_server, link, "decline2")
    page.wait_for_selector("[data-testid=consent-decline]")
    page.click("[data-testid=consent-decline]")
    page.wait_for_selector("[data-testid=phase-screened-out][data-reason=consent_declined]")
    shot(page, "phases-declined-390", full_page=True)
    page.click("[data-testid=return-link]")
    page.wait_for_url("https://app.prolific.com/submissions/complete?cc=NOCONSENT")
    decliner = CrowdParticipant.objects.get(participant_id="decline2").user
    assert list(PhaseRecord.objects.filter(rater=decliner).values_list("phase", "outcome")) == [("consent", "declined")]

    # 3. Fails training twice: a retry is offered once, then a screen-out (not a rejection).
    page = page_at(1400)
    _enter(page, live_server, link, "fail3")
    _consent_and_questions(page)
    failer = CrowdParticipant.objects.get(participant_id="fail3").user
    for attempt in (1, 2):
        _train(page, failer, right=False)
        page.click("text=Next training item")
        page.wait_for_selector("#ws-form[data-ready='1']")
        _train(page, failer, right=False)
        assert page.locator("[data-testid=training-result][data-passed=no]").is_visible()
        if attempt == 1:
            page.click("text=Try the training again")
            page.wait_for_selector("#ws-form[data-ready='1']")
    page.click("[data-testid=training-continue]")
    page.wait_for_selector("[data-testid=phase-screened-out][data-reason=training_failed]")
    assert "not a rejection" in page.inner_text("[data-testid=phase-screened-out]")
    shot(page, "phases-screened-out-1400", full_page=True)
    page.click("[data-testid=return-link]")
    page.wait_for_url("https://app.prolific.com/submissions/complete?cc=SCREENOUT")

    # The payment sheet for the three.
    resp = client_for(admin_user).get(f"/studies/{study.slug}/crowd-links/payments.csv",
                                      {"pay_per_item": "0.60", "bonus_per_item": "0.10"})
    text = resp.content.decode()
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    (ARTIFACTS / "phases-payment-sheet.csv").write_text(text)
    rows = {r["participant_id"]: r for r in csv.DictReader(io.StringIO(text))}
    assert set(rows) == {"full1", "decline2", "fail3"}
    full, declined, failed = rows["full1"], rows["decline2"], rows["fail3"]
    assert (full["decision"], full["training"], full["attention_checks"], full["payable_items"], full["payment"],
            full["bonus"]) == ("approve", "passed 1/2", "0", "2", "1.20", "0.20")
    assert (declined["decision"], declined["items_submitted"], declined["payment"]) == ("return", "0", "0.00")
    assert (failed["decision"], failed["training"], failed["payment"]) == ("screened_out", "failed 0/2, then 0/2",
                                                                          "0.40")
