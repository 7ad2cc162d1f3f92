"""The workspace in real headless Chromium (Debian's package): a rater logs in through the login form
and completes an RRGen item, a GEC item and an HTML-visualisation item, reloading mid-item; the
database then holds each rating exactly once. Screenshots go to test-artifacts/."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from annotation.models import Assignment, Rating
from tests.conftest import log_in, make_user
from tests.screens import screenshot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
DEMO = Path(__file__).resolve().parents[2] / "annotation" / "demo"


def shot(page, name: str) -> None:
    screenshot(page, ARTIFACTS / f"workspace-{name}.png", full_page=True)


def open_workspace(page, live_server, study) -> None:
    page.goto(f"{live_server.url}/studies/{study.slug}/rate/")
    page.wait_for_selector("#ws-form[data-ready='1']")


def wait_saved(page) -> None:
    page.wait_for_function("() => document.querySelector('#save-status').dataset.saved === '1'", timeout=10_000)


def checked(page, scope: str) -> dict[str, str]:
    return dict(page.eval_on_selector_all(f"{scope} input[type=radio]:checked", "els => els.map(e => [e.name, e.value])"))


def drag_select(page, selector: str, n_chars: int) -> None:
    """Select the first n characters of an element's text with a real mouse drag."""
    x0, y0, x1, y1 = page.evaluate(
        """([sel, n]) => { const root = document.querySelector(sel); root.scrollIntoView({block: 'center'});
             const t = root.firstChild;
             const r = document.createRange(); r.setStart(t, 0); r.setEnd(t, 1); const a = r.getBoundingClientRect();
             r.setStart(t, n - 1); r.setEnd(t, n); const b = r.getBoundingClientRect();
             return [a.left + 1, a.top + a.height / 2, b.right - 1, b.top + b.height / 2]; }""",
        [selector, n_chars])
    page.mouse.move(x0, y0)
    page.mouse.down()
    page.mouse.move(x1, y1, steps=8)
    page.mouse.up()


def shown_outputs(a: Assignment):
    by_position = {o.position: o for o in a.item.outputs.all()}
    return [by_position[p] for p in a.permutation]


def assert_each_rating_once(a: Assignment, expected: int) -> list[Rating]:
    ratings = list(Rating.objects.filter(assignment=a))
    keys = Counter((r.output_id, r.criterion) for r in ratings)
    assert len(ratings) == expected and max(keys.values()) == 1
    return ratings


def test_rrgen_item_with_keyboard_mouse_highlight_and_reload(page, live_server, make_study):
    rater = make_user("browser-rr")
    study = make_study("rrgen-001", annotators=[rater], presentation="succession")
    log_in(page, live_server, rater)
    open_workspace(page, live_server, study)
    assert page.locator("#response-1").is_visible() and not page.locator("#response-2").is_visible()

    # Response 1 by keyboard: four Likert points, accept, and a highlight made with the mouse.
    for key in "6764a":
        page.keyboard.press(key)
    drag_select(page, "#response-1 [data-span-root]", 9)
    page.wait_for_selector("#response-1 mark.hl-span")
    wait_saved(page)
    shot(page, "rrgen-response1")
    page.keyboard.press("Enter")  # response 1 complete -> response 2
    assert page.locator("#response-2").is_visible()

    # Response 2 with the mouse, reject by key.
    for key, value in [("semantic_relevance", 5), ("fluency", 6), ("sentiment_appropriateness", 7),
                       ("domain_accuracy", 2)]:
        page.click(f"label[for=r2-{key}-{value}]")
    page.keyboard.press("r")
    wait_saved(page)

    page.reload()  # mid-item: nothing may be lost
    page.wait_for_selector("#ws-form[data-ready='1']")
    assert checked(page, "#response-1") == {"r1__semantic_relevance": "6", "r1__fluency": "7",
                                            "r1__sentiment_appropriateness": "6", "r1__domain_accuracy": "4",
                                            "r1__decision": "ACCEPT"}
    assert checked(page, "#response-2")["r2__decision"] == "REJECT"
    highlighted = page.inner_text("#response-1 mark.hl-span")

    page.click("#tab-3")
    for key in "123":
        page.keyboard.press(key)
    page.keyboard.press("Enter")  # domain accuracy and the decision still missing: no submit
    assert "Response 3" in page.inner_text("#save-status")
    assert not Rating.objects.exists()
    page.keyboard.press("4")
    page.keyboard.press("a")
    shot(page, "rrgen-response3")
    page.keyboard.press("Enter")
    page.wait_for_selector("[data-progress]:has-text('1 done')")
    shot(page, "rrgen-next-item")

    a = Assignment.objects.get(rater=rater, status="submitted")
    ratings = assert_each_rating_once(a, 3 * 5 + 1)
    shown = shown_outputs(a)
    got = {(r.output_id, r.criterion): r.value for r in ratings}
    assert [got[(shown[0].pk, k)] for k in ("semantic_relevance", "fluency", "sentiment_appropriateness",
                                            "domain_accuracy", "decision")] == [6, 7, 6, 4, "ACCEPT"]
    assert [got[(shown[1].pk, k)] for k in ("semantic_relevance", "fluency", "decision")] == [5, 6, "REJECT"]
    assert [got[(shown[2].pk, k)] for k in ("semantic_relevance", "fluency", "sentiment_appropriateness",
                                            "domain_accuracy", "decision")] == [1, 2, 3, 4, "ACCEPT"]
    (span,) = got[(shown[0].pk, "highlights")]
    assert span["start"] == 0 and span["end"] == 9 and span["text"] == shown[0].content[:9] == highlighted
    assert span["label"] == "relevant"
    assert a.time_on_task_ms > 0


def test_gec_item_label_survives_a_reload(page, live_server, make_study):
    rater = make_user("browser-gec")
    study = make_study("aqua-003", annotators=[rater])
    log_in(page, live_server, rater)
    open_workspace(page, live_server, study)
    assert page.locator(".diff del").count() + page.locator(".diff ins").count() >= 1
    page.keyboard.press("2")  # FP3
    wait_saved(page)
    page.reload()
    page.wait_for_selector("#ws-form[data-ready='1']")
    assert checked(page, "#response-1") == {"r1__label": "FP3"}
    shot(page, "gec")
    page.keyboard.press("1")  # TP after all
    page.click("button.submit-btn")
    page.wait_for_selector("[data-progress]:has-text('1 done')")
    a = Assignment.objects.get(rater=rater, status="submitted")
    (rating,) = assert_each_rating_once(a, 1)
    assert rating.criterion == "label" and rating.value == "TP" and rating.output.item_id == a.item_id


def test_html_visualisation_renders_sandboxed_and_is_rated(page, live_server, make_study):
    lines = [line for line in (DEMO / "codegen-002.jsonl").read_text().splitlines()
             if all(o["kind"] == "html" for o in json.loads(line)["outputs"])]
    assert lines, "the demo needs an item whose outputs are all HTML"
    rater = make_user("browser-html")
    study = make_study("codegen-002", annotators=[rater], items_text="\n".join(lines) + "\n",
                       presentation="side_by_side")
    log_in(page, live_server, rater)
    open_workspace(page, live_server, study)
    frames = page.locator("iframe")
    n = frames.count()
    assert n >= 2
    # The frame's CSP forbids eval, which wait_for_function needs; poll with evaluate instead.
    drawn = "() => [document.title, document.querySelectorAll('svg *').length]"
    charts: dict[str, int] = {}
    for i in range(n):
        assert frames.nth(i).get_attribute("sandbox") == "allow-scripts"
        frame = frames.nth(i).element_handle().content_frame()
        for _ in range(30):
            title, count = frame.evaluate(drawn)
            if count > 5:
                break
            page.wait_for_timeout(100)
        charts[title] = count
        assert frame.evaluate("() => { try { return parent.document ? 'leak' : 'none'; } catch (e) { return 'blocked'; } }") == "blocked"
        assert frame.evaluate("() => { try { return document.cookie === '' ? 'no cookie' : 'cookie'; } catch (e) { return 'blocked'; } }") in ("blocked", "no cookie")
        assert frame.evaluate(f"() => fetch('{live_server.url}/').then(() => 'fetched', () => 'blocked')") == "blocked"
    # The demo's good chart is drawn by its script (its <svg> starts empty); a weak model's broken
    # page may stay blank, as it would for the rater.
    assert charts.get("Average monthly temperature, Lisbon", 0) > 20, charts
    # The code is shown beside its preview, highlighted.
    assert page.locator("#response-1 .source pre.hl span").count() > 10
    shot(page, "html-preview")

    for key, value in [("technical_quality", 4), ("aesthetic_quality", 5)]:
        page.click(f"label[for=r1-{key}-{value}]")
    page.fill("#r1-technical_quality-reasoning", "Clean SVG code.")
    wait_saved(page)
    page.reload()
    page.wait_for_selector("#ws-form[data-ready='1']")
    assert checked(page, "#response-1") == {"r1__technical_quality": "4", "r1__aesthetic_quality": "5"}
    assert page.input_value("#r1-technical_quality-reasoning") == "Clean SVG code."
    for r in range(2, n + 1):
        page.click(f"label[for=r{r}-technical_quality-3]")
        page.click(f"label[for=r{r}-aesthetic_quality-2]")
    page.click("button.submit-btn")
    page.wait_for_selector("[data-progress]:has-text('1 done')")
    a = Assignment.objects.get(rater=rater, status="submitted")
    ratings = assert_each_rating_once(a, 2 * n)
    first = shown_outputs(a)[0]
    tq = next(r for r in ratings if r.output_id == first.pk and r.criterion == "technical_quality")
    assert (tq.value, tq.reasoning) == (4, "Clean SVG code.")


def test_a_refused_submit_shows_the_servers_reasons(page, live_server, make_study):
    """The server refuses (400) what the rubric does not ask for; htmx swaps the returned form in, with
    the reason named, and nothing is stored."""
    rater = make_user("browser-refused")
    study = make_study("aqua-003", annotators=[rater])
    log_in(page, live_server, rater)
    open_workspace(page, live_server, study)
    page.keyboard.press("1")  # TP: complete as far as the page can tell
    page.evaluate("""() => { const f = document.querySelector('#ws-form'); const i = document.createElement('input');
                             i.type = 'hidden'; i.name = 'r1__severity'; i.value = '3'; f.appendChild(i); }""")
    page.click("button.submit-btn")
    page.wait_for_selector("text=this rubric has no criterion 'severity'")
    shot(page, "refused-submit")
    assert not Rating.objects.exists()
    assert checked(page, "#response-1") == {"r1__label": "TP"}  # what was chosen is still there
    page.click("button.submit-btn")  # the returned form no longer carries the stray field
    page.wait_for_selector("[data-progress]:has-text('1 done')")
    assert Rating.objects.count() == 1
