"""Issue 25 §5: a scale shown as a slider (rubric `widget: slider`) in real Chromium, at 1400 px with
the keyboard and at 390 px by touch: tick marks and level labels at their points, no value until
the rater places it, arrows / Home / End / digits, the level's label in aria-valuetext, and the
submitted value stored."""

from __future__ import annotations

import pytest

from annotation.models import Rating
from tests.conftest import log_in
from tests.ui.conftest import horizontal_overflow, shot
from tests.workspace.conftest import open_study_with_rubric
from tests.screens import screenshot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

RUBRIC = {
    "slug": "slider-test", "name": "Slider test",
    "criteria": [
        {"key": "quality", "name": "Quality", "kind": "likert", "min": 1, "max": 7, "widget": "slider",
         "levels": [{"value": 1, "label": "Not at all"}, {"value": 4, "label": "Somewhat"},
                    {"value": 7, "label": "Completely"}]},
        {"key": "confidence", "name": "Confidence", "kind": "confidence", "min": 0, "max": 100, "widget": "slider"},
    ],
}
ITEMS = "".join(f'{{"id": "s-{i}", "context": "Review {i}.", "outputs": [{{"system": "a", "content": "Answer {i}."}}]}}\n'
                for i in range(3))


@pytest.fixture
def slider_study(admin_user):
    return open_study_with_rubric(RUBRIC, ITEMS, admin_user=admin_user, name="Sliders", rater="slider-rater")


def _open(page, live_server, study, rater):
    log_in(page, live_server, rater)
    page.goto(f"{live_server.url}/studies/{study.slug}/rate/")
    page.wait_for_selector("#ws-form[data-ready='1']")


def _state(page, key):
    return page.evaluate("""(key) => { const fs = document.querySelector('.criterion[data-name$="' + key + '"]');
      const t = fs.querySelector('[role=slider]'), input = fs.querySelector('[data-slider-input]');
      return {value: input.value, now: t.getAttribute('aria-valuenow'), text: t.getAttribute('aria-valuetext'),
              unset: fs.querySelector('.slider').classList.contains('unset'),
              opacity: getComputedStyle(t).opacity}; }""", key)


def _tick_x(page, key, value):
    """Centre of the tick for `value` and of the track, in page pixels."""
    return page.evaluate("""([key, value]) => { const fs = document.querySelector('.criterion[data-name$="' + key + '"]');
      const mark = fs.querySelector('[data-tick="' + value + '"] .tick-mark').getBoundingClientRect();
      const track = fs.querySelector('[data-slider-track]').getBoundingClientRect();
      return {x: mark.left + mark.width / 2, y: track.top + track.height / 2, left: track.left, width: track.width}; }""",
                         [key, value])


def test_slider_by_keyboard_at_1400(new_context, live_server, slider_study):
    study, rater = slider_study
    page = new_context(viewport={"width": 1400, "height": 900}).new_page()
    _open(page, live_server, study, rater)
    # unset until placed: no value, no thumb shown, "not set" read out
    for key in ("quality", "confidence"):
        s = _state(page, key)
        assert s["value"] == "" and s["now"] is None and s["text"] == "not set" and s["unset"] and s["opacity"] == "0"
    # ticks at their points, the level labels under them
    ticks = page.locator(".criterion[data-name$=quality] .slider-tick")
    assert [t.get_attribute("data-tick") for t in ticks.all()] == [str(v) for v in range(1, 8)]
    for value, share in ((1, 0.0), (4, 0.5), (7, 1.0)):
        t = _tick_x(page, "quality", value)
        assert abs(t["x"] - (t["left"] + share * t["width"])) <= 2
    assert page.locator(".criterion[data-name$=quality] [data-tick='4'] .tick-label").inner_text() == "Somewhat"
    assert page.locator(".criterion[data-name$=quality] [data-tick='7'] .tick-label").is_visible()
    conf_ticks = page.locator(".criterion[data-name$=confidence] .slider-tick")
    assert [t.get_attribute("data-tick") for t in conf_ticks.all()] == [str(v) for v in range(0, 101, 10)]
    # a submit with nothing placed stores nothing
    page.click(".submit-btn")
    page.wait_for_selector("#save-status.bad:has-text('required')")  # refused in the page, the scale named
    assert not Rating.objects.filter(assignment__study=study).exists()

    thumb = page.locator(".criterion[data-name$=quality] [role=slider]")
    thumb.focus()
    page.keyboard.press("ArrowRight")  # the first arrow places it at the near end
    assert _state(page, "quality")["value"] == "1" and _state(page, "quality")["text"] == "1, Not at all"
    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowUp")
    assert _state(page, "quality")["now"] == "3"
    page.keyboard.press("End")
    assert _state(page, "quality")["text"] == "7, Completely" and _state(page, "quality")["opacity"] == "1"
    page.keyboard.press("Home")
    page.keyboard.press("ArrowLeft")  # stays at the end of the scale
    assert _state(page, "quality")["value"] == "1"
    page.keyboard.press("4")
    assert _state(page, "quality")["text"] == "4, Somewhat"
    assert page.locator(".criterion[data-name$=quality] [data-slider-readout]").inner_text() == "4, Somewhat"
    page.locator(".criterion[data-name$=confidence] [role=slider]").focus()
    page.keyboard.press("7")
    page.keyboard.press("5")  # digits typed in a row: 75
    assert _state(page, "confidence")["now"] == "75"
    page.keyboard.press("PageDown")
    assert _state(page, "confidence")["now"] == "65"
    page.keyboard.press("ArrowRight")
    assert _state(page, "confidence")["value"] == "66"
    assert _state(page, "quality")["value"] == "4"  # the arrows stayed inside the slider
    shot(page, "slider-keyboard-1400")
    screenshot(page, "test-artifacts/ui/slider-1400-full.png", full_page=True)
    page.click(".submit-btn")
    page.wait_for_selector("[data-progress]:has-text('1 done')")
    stored = dict(Rating.objects.filter(assignment__study=study).values_list("criterion", "value"))
    assert stored == {"quality": 4, "confidence": 66}


def test_slider_by_touch_at_390(new_context, live_server, slider_study):
    study, rater = slider_study
    context = new_context(viewport={"width": 390, "height": 800}, has_touch=True, is_mobile=True)
    page = context.new_page()
    _open(page, live_server, study, rater)
    assert horizontal_overflow(page) == 0
    for key in ("quality", "confidence"):
        page.locator(f".criterion[data-name$={key}] .slider").scroll_into_view_if_needed()
    t = _tick_x(page, "quality", 6)
    assert t["width"] >= 250  # a usable track on a phone
    page.touchscreen.tap(t["x"], t["y"])
    assert _state(page, "quality")["text"] == "6" and not _state(page, "quality")["unset"]
    c = _tick_x(page, "confidence", 30)
    page.touchscreen.tap(c["x"], c["y"])
    assert _state(page, "confidence")["value"] == "30"
    # the level labels between the ends give way to the readout on a narrow screen; the ends stay
    assert page.locator(".criterion[data-name$=quality] [data-tick='1'] .tick-label").is_visible()
    assert not page.locator(".criterion[data-name$=quality] [data-tick='4'] .tick-label").is_visible()
    box = page.locator(".criterion[data-name$=quality] [role=slider]").bounding_box()
    assert box["width"] >= 24 and box["height"] >= 24
    shot(page, "slider-touch-390")
    screenshot(page, "test-artifacts/ui/slider-390-full.png", full_page=True)
    page.locator(".submit-btn").tap()
    page.wait_for_selector("[data-progress]:has-text('1 done')")
    stored = dict(Rating.objects.filter(assignment__study=study).values_list("criterion", "value"))
    assert stored == {"quality": 6, "confidence": 30}
