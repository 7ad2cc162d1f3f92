"""Everything a rater sees, in German, in real headless Chromium: the workspace of every preset and
comparative kind, with the study's language set (the browser asks for English: the study wins), and
the pages around it with the browser's language (LocaleMiddleware). No text of the platform's own is
left in English: the texts on the page that are the same in the English and the German rendering are
the study's own (rubric, items, names) or words that are the same in both languages.
Right-to-left items are laid out right to left. Screenshots: test-artifacts/i18n/."""

from __future__ import annotations

import json
import re

import pytest

from annotation.demo_languages import ITEMS as RTL_ITEMS
from annotation.models import Study
from tests.a11y.inventory import PRESETS
from tests.conftest import REPO, log_in, make_user
from tests.screens import screenshot
from tests.ui.conftest import WIDTHS, page_at  # noqa: F401

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

ARTIFACTS = REPO / "test-artifacts" / "i18n"
# The same in German and English (or a proper name): not a sign of a missing translation.
SAME_IN_BOTH = {"Training", "(optional)", "optional", "offline", "Concord", "Tab", "Shift", "Enter", "Alt", "Esc",
                "Ctrl", "Admin"}

TEXTS_JS = """() => {
  const out = [];
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    const p = n.parentElement;
    if (!p || p.closest('script, style, iframe, pre.hl, .hl-span')) continue;
    const t = n.data.replace(/\\s+/g, ' ').trim();
    if (t) out.push(t);
  }
  document.querySelectorAll('[aria-label], [title], [placeholder], [alt]').forEach((el) => {
    ['aria-label', 'title', 'placeholder', 'alt'].forEach((a) => { const v = el.getAttribute(a); if (v) out.push(v.trim()); });
  });
  out.push(document.title);
  return out;
}"""


def _owned(study: Study, rater) -> str:
    """The study's own texts (rubric, items, outputs, names): never translated."""
    parts = [json.dumps(study.rubric_version.definition, ensure_ascii=False), study.name, study.instructions,
             rater.username]
    for item in study.items.prefetch_related("outputs"):
        parts += [item.context, item.external_id] + [o.content for o in item.outputs.all()]
    return "\n".join(parts)


def _english_left(german: list[str], english: list[str], owned: str) -> list[str]:
    left = []
    for text in set(german) & set(english):
        words = re.sub(r"[\d\W_]+", " ", text).strip()
        if len(words) <= 1:  # nothing, or a letter on a keycap (G, H, R)
            continue
        if text in SAME_IN_BOTH or words in SAME_IN_BOTH or text in owned or words in owned:
            continue
        if all(w in owned or w in SAME_IN_BOTH for w in words.split()):
            continue
        left.append(text)
    return sorted(left)


def _texts(page, live_server, study, language: str) -> list[str]:
    Study.objects.filter(pk=study.pk).update(language=language)
    page.goto(f"{live_server.url}/studies/{study.slug}/rate/")
    page.wait_for_selector("#ws-form[data-ready='1']")
    page.keyboard.press("Enter")  # nothing answered: the script names what is missing (its own catalog)
    page.wait_for_function("() => document.getElementById('save-status').textContent.length > 0")
    page.click("[data-open=guidelines-dialog]")
    page.wait_for_selector("#guidelines-body .guide")
    page.keyboard.press("Escape")
    page.click("[data-open=help-dialog]")
    texts = page.evaluate(TEXTS_JS)
    page.keyboard.press("Escape")
    return texts


@pytest.mark.parametrize("preset", PRESETS)
def test_the_workspace_of_every_preset_is_german_when_the_study_says_so(page_at, live_server, make_study, preset):
    rater = make_user(f"de-{preset}")
    study = make_study(preset, annotators=[rater], raters_per_item=1,
                       **({"items_text": _compare_items(preset)} if preset.startswith("compare") else {}))
    page = page_at(1400)
    log_in(page, live_server, rater)
    english = _texts(page, live_server, study, "en")
    german = _texts(page, live_server, study, "de")
    assert page.get_attribute("html", "lang") == "de"
    assert "Absenden" in german and "Submit" in english
    left = _english_left(german, english, _owned(study, rater))
    assert not left, f"untranslated in the German workspace of {preset}: {left}"
    screenshot(page, ARTIFACTS / f"workspace-de-{preset}.png")


def _compare_items(preset: str) -> str:
    from annotation.simulation.items import items_for

    return "\n".join(json.dumps(r) for r in items_for(preset, 2, seed=3))


@pytest.mark.parametrize("width", WIDTHS)
def test_right_to_left_items_are_laid_out_right_to_left(page_at, live_server, make_study, width):
    rater = make_user(f"rtl-{width}")
    items = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in RTL_ITEMS)
    study = make_study("rrgen-001", annotators=[rater], items_text=items, raters_per_item=1, language="de",
                       randomize_items=False)
    page = page_at(width)
    log_in(page, live_server, rater)
    page.goto(f"{live_server.url}/studies/{study.slug}/rate/")
    page.wait_for_selector("#ws-form[data-ready='1']")
    directions = page.eval_on_selector_all(
        "#context-body .content-text, .response-body .content-text",
        "els => els.map(e => [getComputedStyle(e).direction, e.textContent.trim().slice(0, 12)])")
    assert directions and all(d == "rtl" for d, _ in directions), directions
    assert page.evaluate("document.documentElement.scrollWidth - window.innerWidth") <= 0
    screenshot(page, ARTIFACTS / f"workspace-rtl-{width}.png", full_page=width > 600)


def test_the_browser_language_chooses_when_the_study_does_not(browser, live_server, make_study):
    rater = make_user("de-browser")
    study = make_study("rrgen-001", annotators=[rater], raters_per_item=1)
    context = browser.new_context(locale="de-DE", viewport={"width": 1400, "height": 900})
    page = context.new_page()
    page.goto(live_server.url + "/login/")
    assert page.inner_text("h1") == "Bei Concord anmelden"
    log_in(page, live_server, rater)
    assert "Mit dem Bewerten beginnen" in page.inner_text("main")
    page.goto(f"{live_server.url}/studies/{study.slug}/rate/")
    page.wait_for_selector("#ws-form[data-ready='1']")
    assert page.inner_text(".submit-btn") == "Absenden"
    page.goto(f"{live_server.url}/studies/{study.slug}/rate/history/")
    assert "Ihre Elemente" in page.inner_text("h1")
    page.goto(f"{live_server.url}/no-such-page/")
    assert "Diese Seite gibt es nicht" in page.inner_text("h1")
    context.close()
