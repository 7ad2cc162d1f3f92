"""Comparative questions in real headless Chromium, at 390 px and 1400 px, by mouse and by keyboard:
pairwise (compare-pairwise: a helpfulness score per answer, the better answer, its strength, a
reason), best-worst and ranking (compare-ranking: drag and drop, Alt+arrows, numbers typed best
first). The stored values are checked against what was chosen on screen, by output id."""

from __future__ import annotations

import json

import pytest

from annotation.models import Assignment, Rating
from annotation.simulation.items import items_for
from tests.conftest import log_in, make_user
from tests.ui.conftest import WIDTHS, horizontal_overflow, shot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def _items(preset: str, n: int = 2) -> str:
    return "\n".join(json.dumps(r) for r in items_for(preset, n, seed=3))


def _open(page, live_server, study):
    page.goto(f"{live_server.url}/studies/{study.slug}/rate/")
    page.wait_for_selector("#ws-form[data-ready='1']")


def _submitted(rater) -> Assignment:
    return Assignment.objects.get(rater=rater, status="submitted")


def _ids(a: Assignment) -> list[int]:
    by_position = {o.position: o.pk for o in a.item.outputs.all()}
    return [by_position[p] for p in a.permutation]


def _click(page, selector: str) -> None:
    """Click as a person would: with the control in the middle of the window, clear of the submit bar."""
    page.eval_on_selector(selector, "el => el.scrollIntoView({block: 'center'})")
    page.click(selector)


def _wait_done(page):
    page.wait_for_selector("[data-progress]:has-text('1 done')")


@pytest.mark.parametrize("width", WIDTHS)
def test_pairwise_by_keyboard(page_at, live_server, make_study, width):
    rater = make_user(f"pair-key-{width}")
    study = make_study("compare-pairwise", annotators=[rater], items_text=_items("compare-pairwise"),
                       raters_per_item=1)
    page = page_at(width)
    log_in(page, live_server, rater)
    _open(page, live_server, study)
    assert page.locator(".pair-choice").is_visible() or page.locator(".pair-choice").count() == 1
    assert horizontal_overflow(page) == 0
    page.keyboard.press("6")       # Response 1 helpfulness
    page.keyboard.press("Enter")   # on to Response 2
    page.keyboard.press("3")       # Response 2 helpfulness, then the comparison is next
    page.keyboard.press("1")       # Response 1 is better ...
    page.keyboard.press("c")       # ... clearly
    shot(page, f"comparative-pairwise-keyboard-{width}", full_page=True)
    page.keyboard.press("Enter")
    _wait_done(page)
    a = _submitted(rater)
    first, second = _ids(a)
    pref = Rating.objects.get(assignment=a, criterion="preference")
    assert pref.output_id is None
    assert pref.value == {"shown": [first, second], "winner": first, "strength": "clearly"}
    help_ = {r.output_id: r.value for r in Rating.objects.filter(assignment=a, criterion="helpfulness")}
    assert help_ == {first: 6, second: 3}


@pytest.mark.parametrize("width", WIDTHS)
def test_pairwise_by_mouse_with_a_tie_and_a_reason(page_at, live_server, make_study, width):
    rater = make_user(f"pair-mouse-{width}")
    study = make_study("compare-pairwise", annotators=[rater], items_text=_items("compare-pairwise"),
                       raters_per_item=1)
    page = page_at(width)
    log_in(page, live_server, rater)
    _open(page, live_server, study)
    page.click("label[for=r1-helpfulness-5]")
    if page.locator("#tab-2").is_visible():
        page.click("#tab-2")
    page.click("label[for=r2-helpfulness-5]")
    page.click("label[for=item-preference-2]")
    page.click("label[for=item-preference-s-slightly]")
    page.click("label[for=item-preference-tie]")  # changes their mind: a tie has no strength
    page.fill("#item-preference-reasoning", "Both answers are correct and complete.")
    shot(page, f"comparative-pairwise-mouse-{width}", full_page=True)
    page.click("button.submit-btn")
    _wait_done(page)
    a = _submitted(rater)
    pref = Rating.objects.get(assignment=a, criterion="preference")
    assert pref.value == {"shown": _ids(a), "winner": "tie", "strength": None}
    assert pref.reasoning == "Both answers are correct and complete."


@pytest.mark.parametrize("width", WIDTHS)
def test_best_worst_and_ranking_by_keyboard(page_at, live_server, make_study, width):
    rater = make_user(f"bws-key-{width}")
    study = make_study("compare-ranking", annotators=[rater], items_text=_items("compare-ranking"),
                       raters_per_item=1)
    page = page_at(width)
    log_in(page, live_server, rater)
    _open(page, live_server, study)
    assert page.locator(".bw-table tbody tr").count() == 4
    assert horizontal_overflow(page) == 0
    for key in "31":     # best: Response 3, worst: Response 1
        page.keyboard.press(key)
    for key in "243":    # ranking best first: 2, 4, 3 (and 1 last by itself)
        page.keyboard.press(key)
    order = page.eval_on_selector_all(".rank-row", "rows => rows.map(r => r.dataset.n)")
    assert order == ["2", "4", "3", "1"]
    # Alt+ArrowUp on the focused third row moves Response 3 above Response 4
    page.focus(".rank-row[data-n='3']")
    page.keyboard.press("Alt+ArrowUp")
    assert page.eval_on_selector_all(".rank-row", "rows => rows.map(r => r.dataset.n)") == ["2", "3", "4", "1"]
    shot(page, f"comparative-bws-keyboard-{width}", full_page=True)
    page.keyboard.press("Control+Enter")
    _wait_done(page)
    a = _submitted(rater)
    ids = _ids(a)
    bw = Rating.objects.get(assignment=a, criterion="best_worst").value
    assert bw == {"shown": ids, "best": ids[2], "worst": ids[0]}
    order = Rating.objects.get(assignment=a, criterion="order").value
    assert order == {"shown": ids, "ranks": [4, 1, 2, 3]}


@pytest.mark.parametrize("width", WIDTHS)
def test_best_worst_and_ranking_by_mouse_drag_and_drop(page_at, live_server, make_study, width):
    rater = make_user(f"bws-mouse-{width}")
    study = make_study("compare-ranking", annotators=[rater], items_text=_items("compare-ranking"),
                       raters_per_item=1)
    page = page_at(width)
    log_in(page, live_server, rater)
    _open(page, live_server, study)
    _click(page, "#item-best_worst-best-4")
    _click(page, "#item-best_worst-worst-2")
    # Drag Response 4 to the top, then Response 2 to the bottom; the order shown is the ranking.
    page.drag_and_drop(".rank-row[data-n='4'] .rank-grip", ".rank-row[data-n='1'] .rank-grip", target_position={"x": 2, "y": 1})
    assert page.eval_on_selector_all(".rank-row", "rows => rows.map(r => r.dataset.n)")[0] == "4"
    rows = page.eval_on_selector_all(".rank-row", "rows => rows.map(r => r.dataset.n)")
    _click(page, ".rank-row[data-n='2'] .rank-down")
    _click(page, ".rank-row[data-n='2'] .rank-down")
    order = page.eval_on_selector_all(".rank-row", "rows => rows.map(r => r.dataset.n)")
    assert order[0] == "4" and order[-1] == "2", (rows, order)
    shot(page, f"comparative-bws-mouse-{width}", full_page=True)
    page.click("button.submit-btn")
    _wait_done(page)
    a = _submitted(rater)
    ids = _ids(a)
    assert Rating.objects.get(assignment=a, criterion="best_worst").value == \
        {"shown": ids, "best": ids[3], "worst": ids[1]}
    ranks = Rating.objects.get(assignment=a, criterion="order").value["ranks"]
    assert [ranks[int(n) - 1] for n in order] == [1, 2, 3, 4]


def test_a_half_answered_ranking_is_refused_by_name(page_at, live_server, make_study):
    rater = make_user("bws-half")
    study = make_study("compare-ranking", annotators=[rater], items_text=_items("compare-ranking"),
                       raters_per_item=1)
    page = page_at(1400)
    log_in(page, live_server, rater)
    _open(page, live_server, study)
    _click(page, "#item-best_worst-best-1")
    _click(page, "#item-best_worst-worst-2")
    page.select_option("#item-order-rank-1", "1")
    page.click("button.submit-btn")
    # The page refuses it before sending and names what is missing on the status line ...
    page.wait_for_function("() => document.querySelector('#save-status').textContent.includes('Ranking')")
    assert page.locator(".criterion.has-error").count() == 1
    # ... and the autosave that the last edit scheduled, finishing after the refusal, does not replace it.
    assignment = Assignment.objects.get(rater=rater)
    for _ in range(100):
        assignment.refresh_from_db()
        if assignment.draft:
            break
        page.wait_for_timeout(100)
    assert assignment.draft, "the draft was never saved"
    page.wait_for_timeout(300)  # time for the draft's answer to reach the page
    assert "Ranking" in page.inner_text("#save-status")
    assert not Rating.objects.filter(assignment__rater=rater).exists()
