"""The workspace without a mouse, in real headless Chromium: a passage highlighted by keyboard alone
(word by word, Shift to extend, Enter to mark) and stored with its offsets; the submit's result
announced in a live region; focus visible on every stop of the tab order; motion reduced when the
system asks."""

from __future__ import annotations

import json

import pytest

from annotation.models import Assignment, Rating
from tests.conftest import log_in, make_user
from tests.ui.conftest import WIDTHS, shot
from tests.workspace.conftest import items_jsonl

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

ROOT = "#response-1 [data-span-root]"


def _open(page, live_server, study) -> None:
    page.goto(f"{live_server.url}/studies/{study.slug}/rate/")
    page.wait_for_selector("#ws-form[data-ready='1']")


def _tab_to(page, selector: str, limit: int = 60) -> int:
    for n in range(1, limit + 1):
        page.keyboard.press("Tab")
        if page.evaluate("(sel) => document.activeElement === document.querySelector(sel)", selector):
            return n
    raise AssertionError(f"{selector} not reached with {limit} presses of Tab")


@pytest.mark.parametrize("width", WIDTHS)
def test_a_passage_is_highlighted_and_the_submit_announced_by_keyboard_alone(page_at, live_server, make_study,
                                                                              width):
    rater = make_user(f"kb-{width}")
    study = make_study("rrgen-001", annotators=[rater], presentation="succession", items_text=items_jsonl(2),
                       raters_per_item=1)
    page = page_at(width)
    log_in(page, live_server, rater)
    _open(page, live_server, study)
    for key in "6764a":
        page.keyboard.press(key)
    _tab_to(page, ROOT)
    assert page.get_attribute(ROOT, "role") == "textbox" and page.get_attribute(ROOT, "aria-describedby")
    text = page.inner_text(ROOT)  # "Response k to review 0." in the order this rater sees
    page.keyboard.press("ArrowRight")        # word 1
    page.keyboard.press("ArrowRight")        # word 2
    page.keyboard.press("Shift+ArrowRight")  # words 2-3
    page.keyboard.press("Shift+ArrowRight")  # words 2-4
    assert page.evaluate("getSelection().toString()") == " ".join(text.split()[1:4])
    # every text the status line shows from here: the autosave of the keys above may say "Draft saved" after it
    page.evaluate("""() => { window.statuses = [];
        new MutationObserver(() => statuses.push(document.getElementById('save-status').textContent))
          .observe(document.getElementById('save-status'), {childList: true, characterData: true, subtree: true}); }""")
    page.keyboard.press("Enter")
    page.wait_for_selector("#response-1 mark.hl-span")
    assert page.inner_text("#response-1 mark.hl-span") == " ".join(text.split()[1:4])
    page.wait_for_function("() => statuses.some(s => s.includes('Highlighted (1 in all)'))", timeout=5_000)
    (span,) = json.loads(page.input_value("#response-1 [data-spans-input]"))
    assert (span["start"], span["end"]) == (len(text.split()[0]) + 1, len(" ".join(text.split()[:4])))
    shot(page, f"keyboard-highlight-{width}", full_page=False)
    page.keyboard.press("Escape")
    for n in (2, 3):
        page.keyboard.press("ArrowRight")
        for key in "5555r":
            page.keyboard.press(key)
    page.keyboard.press("Enter")
    page.wait_for_selector("[data-progress]:has-text('1 done')")
    page.wait_for_function("() => document.getElementById('ws-announce').textContent.includes('Submitted')")
    assert page.get_attribute("#ws-announce", "aria-live") == "polite"
    a = Assignment.objects.get(rater=rater, status="submitted")
    stored = Rating.objects.get(assignment=a, criterion="highlights", output__position=a.permutation[0]).value
    assert stored == [{**span, "text": span["text"]}] and stored[0]["text"] == " ".join(text.split()[1:4])


def test_a_refused_submit_is_announced(page_at, live_server, make_study):
    rater = make_user("kb-refused")
    study = make_study("rrgen-001", annotators=[rater], items_text=items_jsonl(1), raters_per_item=1)
    page = page_at(1400)
    log_in(page, live_server, rater)
    _open(page, live_server, study)
    # The form without its script's check (as a plain post would arrive): the server names what is missing.
    page.evaluate("htmx.ajax('POST', document.getElementById('ws-form').getAttribute('hx-post'), "
                  "{source: '#ws-form', target: '#workspace', swap: 'outerHTML'})")
    page.wait_for_selector(".error-summary")
    page.wait_for_function("() => document.getElementById('ws-announce').textContent.includes('Not submitted')")


def test_focus_is_visible_on_every_stop_of_the_workspace(page_at, live_server, make_study):
    rater = make_user("kb-focus")
    study = make_study("feedback-000", annotators=[rater])
    page = page_at(1400)
    log_in(page, live_server, rater)
    _open(page, live_server, study)
    seen, invisible = 0, []
    for _ in range(40):
        page.keyboard.press("Tab")
        got = page.evaluate("""() => {
            const el = document.activeElement;
            if (!el || el === document.body) return null;
            const shown = el.matches('.sr-radio') ? el.nextElementSibling : el;
            const s = getComputedStyle(shown);
            return {what: el.outerHTML.slice(0, 80), style: s.outlineStyle, width: parseFloat(s.outlineWidth)};
        }""")
        if got is None:
            continue
        seen += 1
        if got["style"] == "none" or got["width"] < 2:
            invisible.append(got["what"])
    assert seen >= 20 and not invisible, invisible


@pytest.mark.parametrize("motion", ["reduce", "no-preference"])
def test_motion_is_reduced_when_the_system_asks(browser, live_server, motion):
    context = browser.new_context(viewport={"width": 1400, "height": 800}, reduced_motion=motion)
    page = context.new_page()
    page.goto(live_server.url + "/login/")
    duration = page.evaluate("""() => {
        const probe = document.createElement('div');
        probe.style.transition = 'opacity 2s'; probe.style.animation = 'none 3s';
        document.body.appendChild(probe);
        const s = getComputedStyle(probe);
        return [parseFloat(s.transitionDuration), parseFloat(s.animationDuration)];
    }""")
    context.close()
    assert duration == ([1e-05, 1e-05] if motion == "reduce" else [2.0, 3.0])
