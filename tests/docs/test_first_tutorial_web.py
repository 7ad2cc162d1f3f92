"""The web steps of docs/tutorials/first-study.md, walked in Chromium as a reader does them: as `admin`, **New
study** with the page's own rubric file, then the study's **Manage** page uploads the page's items, adds the two
raters and opens it; each rater opens **My first study** and rates every item; the **Report** tab shows the
verdicts, *uncertain* with six items and two raters, as the page says."""

from __future__ import annotations

import random

import pytest

from annotation.models import Rating, Study
from tests.conftest import REPO, log_in, make_user
from tests.docs.blocks import page_blocks
from tests.ui.conftest import page_at  # noqa: F401 (a fixture)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PAGE = REPO / "docs" / "tutorials" / "first-study.md"


def heredoc(marker: str) -> bytes:
    """The text a ```bash block of the page writes with `<<'MARKER'`."""
    code = next(b.code for b in page_blocks(PAGE, REPO) if f"<<'{marker}'" in b.code)
    return (code.split(f"<<'{marker}'\n", 1)[1].split(f"\n{marker}", 1)[0] + "\n").encode()


def rate_like_the_script(page, seed: int) -> None:
    """Each answer on screen as the page's scripted raters rate it (long answers helpful and correct, with
    noise drawn from the rater's seed and the answer, so the shuffled order changes nothing), by clicking the
    scale's and the choice's labels; then submit."""
    for answer in page.locator("article[data-response]").all():
        body = answer.locator("[data-response-body]").inner_text().strip()
        rng = random.Random(f"{seed}:{body}")
        long = len(body) > 40
        values = {"helpfulness": str(min(5, max(1, (4 if long else 2) + rng.choice([-1, 0, 0, 1])))),
                  "correct": "yes" if long or rng.random() < 0.3 else "no"}
        for key, value in values.items():
            radio = answer.locator(f"fieldset[data-name$='{key}'] input[type=radio][value='{value}']")
            answer.locator(f"label[for='{radio.get_attribute('id')}']").first.click()
    page.click("#ws-form button.submit-btn")


def test_the_first_tutorials_web_steps(page_at, live_server, admin_user):  # noqa: F811
    text = PAGE.read_text(encoding="utf-8")
    for named in ("**New study**", "**Rubric file**", "**Raters per item**", "**Create study**", "**Manage**",
                  "**Upload items**", "**Add members**", "**Status**", "**My first study**", "**Report**",
                  "*uncertain*"):
        assert named in text  # the names this walk follows are the page's
    raters = [make_user("annotator"), make_user("annotator2")]

    page = page_at(1400)
    log_in(page, live_server, admin_user)
    # Create the study: New study, the rubric file, two raters an item.
    page.click("a:has-text('New study') >> nth=0")
    page.fill("#id_name", "My first study")
    page.fill("#id_slug", "my-first-study")
    rubric = {"name": "helpfulness.yaml", "mimeType": "text/yaml", "buffer": heredoc("YAML")}
    page.get_by_label("Rubric file", exact=True).set_input_files(files=[rubric])
    page.get_by_label("Raters per item", exact=True).fill("2")  # the fields by the labels the page names
    page.click("button:text-is('Create study')")
    page.wait_for_url(f"{live_server.url}/studies/my-first-study/manage/")
    # The Manage page: the items, the raters, open.
    assert page.locator("#upload h2:has-text('Upload items')").count() == 1
    assert page.locator("#lifecycle h2:text-is('Status')").count() == 1
    page.set_input_files("#upload input[type=file]", files=[{"name": "items.jsonl", "mimeType": "application/jsonl",
                                                             "buffer": heredoc("JSONL")}])
    page.click("#upload button:has-text('Upload')")
    page.wait_for_function("() => document.querySelector('#upload').textContent.includes('6 items')")
    page.fill("#members textarea", "annotator\nannotator2")
    page.click("#members button:has-text('Add members')")
    page.wait_for_function("() => document.querySelector('#members').textContent.includes('annotator2')")
    page.click("#lifecycle button[value=open]")
    page.click("#lifecycle button:has-text('Yes, open')")
    page.wait_for_function("() => document.querySelector('#lifecycle').textContent.includes('is open')")
    study = Study.objects.get(slug="my-first-study")
    assert (study.raters_per_item, study.items.count(), study.rubric_version.rubric.slug) == (2, 6, "helpfulness")

    # Let two raters rate: open My first study, rate each item.
    for seed, rater in enumerate(raters, 1):
        rp = page_at(1400)
        log_in(rp, live_server, rater)
        rp.click("section.study-card:has(h2:text-is('My first study')) a.button.primary")
        for n in range(6):
            rp.wait_for_selector("#ws-form[data-ready='1']")
            assert "model-a" not in rp.content() and "model-b" not in rp.content()  # systems never named
            rate_like_the_script(rp, seed)
            if n < 5:
                rp.wait_for_selector(f"[data-progress]:has-text('{n + 1} done')")
        rp.wait_for_function("() => !document.querySelector(\"#ws-form[data-ready='1']\")")
        rp.context.close()
    assert Rating.objects.filter(assignment__study=study).values("assignment").distinct().count() == 12

    # Read the report: the Report tab, its verdicts uncertain.
    page.goto(f"{live_server.url}/studies/my-first-study/manage/")
    page.click("nav a:text-is('Report')")
    page.wait_for_url(f"{live_server.url}/studies/my-first-study/report/")
    page.wait_for_selector("[data-verdict]", timeout=30_000)
    verdicts = page.locator("[data-verdict]")
    assert verdicts.count() == 2
    assert {verdicts.nth(i).get_attribute("data-verdict") for i in range(2)} == {"uncertain"}
