"""A Prolific-style crowd end to end in headless Chromium: a participant arrives by the entry link
(no account, no password), passes the training after seeing the expected answer and why, rates
until the quota, gets the completion code and goes back to Prolific; a second participant returns
the task, and the item they held goes to another rater at once."""

from __future__ import annotations

import json
from urllib.parse import urlencode

import pytest

from annotation.models import Assignment, CrowdParticipant, TrainingAttempt
from annotation.services.assignments import assignment_next
from annotation.services.crowd import crowd_link_create
from annotation.services.items import items_import
from annotation.simulation.items import items_for
from tests.conftest import make_user
from tests.ui.conftest import horizontal_overflow, shot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

WHY = "Response 1 answers the question and gives the steps; Response 2 only restates it."
PROLIFIC = "https://app.prolific.com/**"


def _training_item() -> str:
    return json.dumps({
        "id": "train-1", "context": "How do I reset my router?", "training": True, "explanation": WHY,
        "gold": {"preference": ["helpful-bot", "vague-bot"]},
        "outputs": [{"system": "helpful-bot", "content": "Unplug it for 30 seconds, then hold reset for 10."},
                    {"system": "vague-bot", "content": "You want to reset your router."}]}) + "\n"


def _enter(page, live_server, link, pid: str) -> None:
    query = urlencode({"PROLIFIC_PID": pid, "STUDY_ID": "st-1", "SESSION_ID": f"se-{pid}"})
    page.goto(f"{live_server.url}/crowd/{link.token}/?{query}")
    page.wait_for_selector("#ws-form[data-ready='1']")  # keys pressed before the script is ready are lost


def _answer_pair(page, better: str) -> None:
    """Helpfulness for both answers, then which is better and how clearly, by keyboard; submit."""
    page.keyboard.press("6")
    page.keyboard.press("Enter")
    page.keyboard.press("3")
    page.keyboard.press(better)
    page.keyboard.press("c")
    page.keyboard.press("Enter")


def _train(page, width: int, name: str) -> None:
    assert page.locator("[data-testid=training-banner]").is_visible()
    _answer_pair(page, "1")  # Response 1 is the gold's better answer
    page.wait_for_selector("[data-testid=training-feedback]")
    assert "Answered as expected" in page.inner_text("h1")
    assert WHY in page.inner_text("[data-testid=training-explanation]")
    assert page.locator("[data-testid=training-result][data-passed=yes]").is_visible()
    assert "helpful-bot" not in page.content()  # the expected answer is given by response number only
    assert horizontal_overflow(page) == 0
    shot(page, f"crowd-training-feedback-{name}-{width}", full_page=True)
    page.click("text=Start rating")
    page.wait_for_selector("#ws-form[data-ready='1']")
    assert page.locator("[data-testid=training-banner]").count() == 0


def test_prolific_participants_train_rate_return_and_complete(page_at, live_server, make_study, admin_user):
    items = "\n".join(json.dumps(r) for r in items_for("compare-pairwise", 2, seed=5))
    study = make_study("compare-pairwise", items_text=items, raters_per_item=1, training_pass_mark=1.0)
    items_import(study=study, text=_training_item(), filename="training.jsonl")
    link = crowd_link_create(study=study, user=admin_user, provider="prolific", completion_code="CONC0RD",
                             items_per_participant=1, time_limit_minutes=30)

    # Participant A (a phone): training, one item (the quota), the completion code, back to Prolific.
    page = page_at(390)
    page.route(PROLIFIC, lambda route: route.fulfill(status=200, content_type="text/html",
                                                     body="<h1>Prolific: submission received</h1>"))
    _enter(page, live_server, link, "pidA")
    _train(page, 390, "a")
    _answer_pair(page, "2")
    page.wait_for_selector("[data-testid=completion-code]")
    assert page.inner_text("[data-testid=completion-code]") == "CONC0RD"
    shot(page, "crowd-completion-390", full_page=True)
    page.click("[data-testid=completion-link]")
    page.wait_for_url("https://app.prolific.com/submissions/complete?cc=CONC0RD")
    assert "submission received" in page.inner_text("h1")
    a = CrowdParticipant.objects.get(participant_id="pidA")
    assert a.finished_at is not None and a.user.username == "prolific-pidA" and not a.user.has_usable_password()
    assert TrainingAttempt.objects.get(rater=a.user).passed is True
    assert Assignment.objects.filter(rater=a.user, status="submitted", item__is_training=False).count() == 1

    # Participant B (a desktop): training, then returns the task while holding the last item.
    page = page_at(1400)
    _enter(page, live_server, link, "pidB")
    _train(page, 1400, "b")
    b = CrowdParticipant.objects.get(participant_id="pidB")
    held = Assignment.objects.get(rater=b.user, status="active")
    page.once("dialog", lambda dialog: dialog.accept())
    page.click("text=Return the task")
    page.wait_for_selector("h1:has-text('Task returned')")
    held.refresh_from_db()
    assert held.status != "active"
    b.refresh_from_db()
    assert b.returned_at is not None
    # The item is free at once (not after the lease): another rater gets it now.
    other = make_user("lab-rater")
    study.members.create(user=other, role="annotator")
    study.training_pass_mark = None
    study.save(update_fields=["training_pass_mark"])
    got = assignment_next(study=study, rater=other)
    assert got is not None and got.item_id == held.item_id
    # And B cannot come back in with the same link.
    _, _ = page.goto(f"{live_server.url}/crowd/{link.token}/?PROLIFIC_PID=pidB&SESSION_ID=x"), None
    assert "returned this task" in page.content()
