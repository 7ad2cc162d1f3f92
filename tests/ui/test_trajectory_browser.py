"""Issue 56 §1: a trajectory in the workspace, in real Chromium at 390 and 1400 px: steps readable
without sideways scrolling, tool calls folded with their JSON arguments, a failed call marked in
words, j/k moving focus between steps (visible focus), per-step questions answered and stored, no
model name on the page, and axe clean. Screenshots: test-artifacts/ui/trajectory-<width>.png."""

from __future__ import annotations

import json

import pytest

from annotation.models import Rating
from annotation.simulation.agent import AGENT_RUBRIC, agent_item
from tests.a11y.axe import axe_run, describe
from tests.conftest import log_in
from tests.ui.conftest import WIDTHS, answer_the_rest_and_submit, horizontal_overflow, shot
from tests.workspace.conftest import open_study_with_rubric

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def _item() -> str:
    """An item whose second system's run has a failed tool call (seed and index picked for it)."""
    row = agent_item(0, 2)
    assert any((m.get("meta") or {}).get("error") for o in row["outputs"] for m in o["content"]["messages"])
    return json.dumps(row) + "\n"


@pytest.mark.parametrize("width", WIDTHS)
def test_a_trajectory_is_read_navigated_and_rated(page_at, live_server, admin_user, width):
    study, rater = open_study_with_rubric(AGENT_RUBRIC, _item(), admin_user=admin_user, name=f"Agent {width}",
                                          rater=f"traj-{width}")
    page = page_at(width)
    log_in(page, live_server, rater)
    page.goto(f"{live_server.url}/studies/{study.slug}/rate/")
    page.wait_for_selector("#ws-form[data-ready='1']")
    body = page.content()
    for secret in ("agent-gpt-4o", "agent-llama", "gpt-4o", "trace_id"):
        assert secret not in body
    assert page.locator(".step-error").first.inner_text().startswith("⚠ Error:")
    assert horizontal_overflow(page) == 0

    # A tool call opens to its pretty-printed arguments.
    call = page.locator("#response-1 li.step-tool_call").first
    call.locator("summary").click()
    assert call.locator("pre.traj-json").inner_text().startswith("{\n  ")

    # j / k (and the arrows) move focus between the steps of one trajectory, with a visible outline.
    first = page.locator("#response-1 li.step").first
    first.focus()
    page.keyboard.press("j")
    page.keyboard.press("j")
    focused = page.evaluate("""() => { const el = document.activeElement; const s = getComputedStyle(el);
        return {step: el.dataset.step, tab: el.tabIndex, outline: s.outlineStyle, width: s.outlineWidth}; }""")
    assert focused["step"] == "m2" and focused["tab"] == 0 and focused["outline"] != "none"
    page.keyboard.press("k")
    assert page.evaluate("document.activeElement.dataset.step") == "m1"
    page.keyboard.press("End")
    assert page.evaluate("document.activeElement.dataset.step") == page.locator(
        "#response-1 li.step").last.get_attribute("data-step")

    shot(page, f"trajectory-{width}", full_page=True)
    violations = [v for v in axe_run(page) if v["impact"] in ("serious", "critical")]
    assert not violations, describe(violations)

    # A and R answer the yes/no question in turn: after the scale, "supported?" then the first tool call's.
    page.locator('fieldset[data-name="r1__task_success"] label.seg').nth(3).click()
    page.keyboard.press("a")
    page.keyboard.press("r")
    checked = page.evaluate("""() => Object.fromEntries([...document.querySelectorAll('input[type=radio]:checked')]
        .map(r => [r.name, r.value]))""")
    assert checked["r1__answer_supported"] == "yes" and checked["r1__call_needed@m2.t0"] == "no"
    answer_the_rest_and_submit(page)  # the rest by pointer
    stored = set(Rating.objects.filter(assignment__study=study).values_list("criterion", flat=True))
    assert "call_needed@m2.t0" in stored and "turn_helpful@m2" in stored and "task_success" in stored
    shown_first = Rating.objects.filter(assignment__study=study, criterion="call_needed@m2.t0")
    assert "no" in set(shown_first.values_list("value", flat=True))
