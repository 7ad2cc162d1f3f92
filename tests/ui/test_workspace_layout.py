"""The rater's workspace at 390 px and 1400 px in real Chromium: labels neither overlap nor get
clipped, level anchors are on screen without hovering, a long context can be expanded, and
feedback-000 can be rated from the keyboard alone (digits, Tab to reasoning, submit) without the
active field ever sitting under the sticky submit bar."""

from __future__ import annotations

import json

import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from annotation.models import Rating
from tests.conftest import log_in, make_user
from tests.ui.conftest import WIDTHS, horizontal_overflow, shot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# For every scale label: is it clipped (text wider than its box), and does it overlap a neighbour?
LABEL_PROBLEMS = """() => {
  const out = [];
  document.querySelectorAll('.segmented').forEach((scale) => {
    const labels = Array.from(scale.querySelectorAll('.seg')).filter((l) => l.offsetParent);
    const boxes = labels.map((l) => l.getBoundingClientRect());
    labels.forEach((l, i) => {
      const text = l.querySelector('.seg-label');
      if (text && text.scrollWidth > text.clientWidth + 1) out.push('clipped: ' + text.textContent);
      if (text) { const t = text.getBoundingClientRect(), b = boxes[i];
        if (t.left < b.left - 1 || t.right > b.right + 1) out.push('outside its box: ' + text.textContent); }
      for (let j = i + 1; j < labels.length; j++) {
        const a = boxes[i], b = boxes[j];
        if (a.left < b.right - 1 && b.left < a.right - 1 && a.top < b.bottom - 1 && b.top < a.bottom - 1)
          out.push('overlap: ' + l.textContent.trim() + ' / ' + labels[j].textContent.trim());
      }
    });
  });
  return out;
}"""


def _open(page, live_server, study):
    page.goto(f"{live_server.url}/studies/{study.slug}/rate/")
    page.wait_for_selector("#ws-form[data-ready='1']")


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("preset,presentation", [("rrgen-001", "side_by_side"), ("rrgen-001", "succession"),
                                                  ("feedback-000", "side_by_side"), ("codegen-002", "side_by_side"),
                                                  ("aqua-003", "side_by_side"), ("fulltext-004", "side_by_side")])
def test_labels_fit_and_nothing_overflows(page_at, live_server, make_study, preset, presentation, width):
    rater = make_user("layout-rater")
    study = make_study(preset, annotators=[rater], presentation=presentation)
    page = page_at(width)
    log_in(page, live_server, rater)
    _open(page, live_server, study)
    shot(page, f"workspace-{preset}-{presentation}-{width}")
    assert page.evaluate(LABEL_PROBLEMS) == []
    assert horizontal_overflow(page) <= 0
    assert page.foreign == []
    assert page.evaluate("""() => Array.from(document.querySelectorAll('[role=tab]')).every((t) =>
        t.getBoundingClientRect().right <= t.parentElement.getBoundingClientRect().right + 1)"""), \
        "a response tab is cut off"
    if preset == "rrgen-001":
        # "Completely" (7) is shown whole, as text on the page, without hovering.
        label = page.locator("#response-1 .seg-label", has_text="Completely").first
        assert label.is_visible()
        assert label.evaluate("e => e.scrollWidth <= e.clientWidth")


@pytest.mark.parametrize("width", WIDTHS)
def test_level_anchor_is_shown_for_the_chosen_level(page_at, live_server, make_study, width):
    rater = make_user("anchor-rater")
    study = make_study("feedback-000", annotators=[rater])
    page = page_at(width)
    log_in(page, live_server, rater)
    _open(page, live_server, study)
    first = page.locator("#response-1 .criterion").first
    hint = first.locator(".anchor-empty")
    assert hint.is_visible() and "1 = Unacceptable" in hint.inner_text()
    page.keyboard.press("2")
    anchor = first.locator("[data-anchor='2']")
    assert anchor.is_visible() and "Poor" in anchor.inner_text() and not hint.is_visible()


def test_sparse_anchors_are_listed_without_hovering(page_at, live_server, make_study):
    rater = make_user("sparse-rater")
    study = make_study("fulltext-004", annotators=[rater])
    page = page_at(390)
    log_in(page, live_server, rater)
    _open(page, live_server, study)
    anchors = page.locator("#response-1 .criterion").first.locator(".anchor-list li")
    assert [a.get_attribute("data-anchor-value") for a in anchors.all()] == ["0", "4", "6", "8", "10"]
    assert anchors.nth(0).is_visible() and "chaotic structure" in anchors.nth(0).inner_text()


def test_long_context_can_be_expanded(page_at, live_server, make_study):
    rater = make_user("ctx-rater")
    context = "\n\n".join(f"Paragraph {i} of a long review." for i in range(80))
    long_item = json.dumps({"id": "long-1", "context": context,
                            "outputs": [{"system": "a", "content": "Thanks."}, {"system": "b", "content": "Sorry."}]})
    study = make_study("rrgen-001", annotators=[rater], items_text=long_item + "\n", presentation="side_by_side")
    page = page_at(1400)
    log_in(page, live_server, rater)
    _open(page, live_server, study)
    body = page.locator("#context-body")
    capped = body.evaluate("e => e.clientHeight")
    toggle = page.locator("[data-ctx-toggle]")
    assert toggle.is_visible() and toggle.get_attribute("aria-expanded") == "false"
    page.keyboard.press("e")
    assert toggle.get_attribute("aria-expanded") == "true"
    assert body.evaluate("e => e.clientHeight") > capped * 2
    assert body.evaluate("e => e.scrollHeight <= e.clientHeight + 1")
    toggle.click()
    assert body.evaluate("e => e.clientHeight") == capped


CLEAR_OF_BAR = """() => {
  let el = document.activeElement;
  if (el.matches('.sr-radio')) el = document.querySelector('label[for="' + el.id + '"]');
  const r = el.getBoundingClientRect(), bar = document.querySelector('.ws-actions').getBoundingClientRect();
  return r.bottom <= bar.top + 1 && r.top >= 0;
}"""


WHERE = """() => { const a = document.activeElement, fs = a.closest('.criterion');
  if (a.matches('.submit-btn')) return {kind: 'submit'};
  if (a.matches('textarea.reasoning')) return {kind: 'reasoning'};
  if (!fs) return {kind: 'other'};
  const values = Array.from(fs.querySelectorAll('input[type=radio]')).map((r) => r.value);
  return {kind: fs.dataset.widget, name: fs.dataset.name, values, tag: a.tagName}; }"""


def _rate_by_keyboard(page) -> int:
    """Answer every control of the item on screen with keys only, following the focus; returns the
    number of reasoning boxes written. Ends with the focus on the submit button."""
    reasonings = 0
    for _ in range(150):
        where = page.evaluate(WHERE)
        kind = where["kind"]
        if kind == "submit":
            return reasonings
        if kind == "other":  # between criteria (a response's rendered page, its code toggle): Tab on
            page.keyboard.press("Tab")
            continue
        try:  # the workspace scrolls the focused field clear of the bar; give the scroll a moment to end
            page.wait_for_function(CLEAR_OF_BAR, timeout=3000)
        except PlaywrightTimeout:
            raise AssertionError(f"focused field hidden under the submit bar ({where})") from None
        if kind == "reasoning":
            page.keyboard.type("Because of the evidence.")
            reasonings += 1
            page.keyboard.press("Tab")
            continue
        if kind == "segmented":
            values = where["values"]
            key = values[len(values) // 2]
            page.keyboard.press(key[-1] if len(key) > 1 else key)
        elif kind == "choice":
            page.keyboard.press("1")
        elif kind == "binary":
            page.keyboard.press("a")
        elif kind == "slider":
            page.keyboard.press("5")
        elif kind in ("number", "text") and where["tag"] in ("INPUT", "TEXTAREA"):
            page.keyboard.type("4")
        if page.evaluate(WHERE).get("name") == where.get("name"):
            page.keyboard.press("Tab")  # its reasoning box, or on to the next control
    pytest.fail("the keyboard path never reached the submit button")


@pytest.mark.parametrize("width,preset", [(390, "feedback-000"), (1400, "feedback-000"), (1400, "rrgen-001"),
                                          (1400, "codegen-002"), (1400, "aqua-003"), (1400, "fulltext-004"),
                                          (390, "fulltext-004")])
def test_every_preset_can_be_rated_by_keyboard_alone(page_at, live_server, make_study, width, preset):
    rater = make_user("kbd-rater")
    study = make_study(preset, annotators=[rater], raters_per_item=1)
    page = page_at(width)
    log_in(page, live_server, rater)
    _open(page, live_server, study)
    page.keyboard.press("Tab")  # into the page: the first control (after the context's toggle, if any)
    while page.evaluate(WHERE)["kind"] == "other":
        page.keyboard.press("Tab")
    reasonings = _rate_by_keyboard(page)
    shot(page, f"workspace-keyboard-{preset}-{width}")
    page.keyboard.press("Enter")
    page.wait_for_selector("[data-progress]:has-text('1 done')")
    ratings = Rating.objects.filter(assignment__study=study)
    assert ratings.exists()
    if preset == "feedback-000":
        assert reasonings >= 6
        assert {r.criterion for r in ratings} >= {"correctness", "clarity", "tone", "actionability", "coherence",
                                                  "emotion", "overall", "confidence"}
        assert all(r.reasoning for r in ratings if r.criterion == "correctness")
