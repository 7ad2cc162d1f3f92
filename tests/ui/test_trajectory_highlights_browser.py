"""Issue 56 §1: highlights inside a turn, in real Chromium at 390 and 1400 px. The agent rubric's
"Highlight any claim the tool results do not support" is asked of each assistant turn with text; the
rater marks a passage of the final answer by keyboard alone (Tab to the step's text, arrows word by
word, Shift to extend, Enter), sees it marked in that step and listed under the question, submits,
and the stored offsets index that step's text. axe finds nothing at either width; screenshots:
test-artifacts/ui/trajectory-highlight-<width>.png."""

from __future__ import annotations

import json

import pytest

from annotation.models import Rating
from annotation.simulation.agent import AGENT_RUBRIC, agent_item
from annotation.step_questions import text_of
from tests.a11y.axe import axe_run, describe
from tests.conftest import log_in
from tests.ui.conftest import WIDTHS, answer_the_rest_and_submit, horizontal_overflow, shot
from tests.workspace.conftest import open_study_with_rubric

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.mark.parametrize("width", WIDTHS)
def test_a_claim_in_the_final_turn_is_highlighted_by_keyboard(page_at, live_server, admin_user, width):
    study, rater = open_study_with_rubric(AGENT_RUBRIC, json.dumps(agent_item(0, 0)) + "\n", admin_user=admin_user,
                                          name=f"Highlights {width}", rater=f"hl-{width}")
    page = page_at(width)
    log_in(page, live_server, rater)
    page.goto(f"{live_server.url}/studies/{study.slug}/rate/")
    page.wait_for_selector("#ws-form[data-ready='1']")

    question = page.locator('#response-1 fieldset[data-name^="r1__unsupported@"]').last
    step = question.get_attribute("data-step")
    root = page.locator(f'#response-1 li.step[data-step="{step}"] [data-span-root]')
    assert root.get_attribute("role") == "textbox" and root.get_attribute("tabindex") == "0"
    assert "this step" in question.locator(".span-help").inner_text()
    # Keyboard alone: reach the text by Tab from the step, select its second and third words, Enter.
    page.locator(f'#response-1 li.step[data-step="{step}"]').focus()
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.hasAttribute('data-span-root')")
    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowRight")
    page.keyboard.press("Shift+ArrowRight")
    page.keyboard.press("Enter")
    marked = root.locator("mark.hl-span")
    assert marked.count() >= 1
    listed = question.locator(".span-list li .span-text").inner_text()
    assert len(listed.strip("“”").split()) == 2  # the second and third words
    assert horizontal_overflow(page) == 0
    marked.first.scroll_into_view_if_needed()
    shot(page, f"trajectory-highlight-{width}")  # the marked words in their step
    question.scroll_into_view_if_needed()
    shot(page, f"trajectory-highlight-question-{width}")  # the question listing them
    violations = axe_run(page)
    assert not violations, describe(violations, impacts=("minor", "moderate", "serious", "critical"))

    answer_the_rest_and_submit(page)  # the rest by pointer
    rating = Rating.objects.get(assignment__study=study, criterion=f"unsupported@{step}")
    (span,) = rating.value
    text = text_of(rating.output.content, step)
    assert text[span["start"]:span["end"]] == span["text"] and span["label"] == "unsupported claim"
    assert len(span["text"].split()) == 2
