"""The admin's new pages in real Chromium: the items page filters in place (htmx) and pages on,
the preview is the rater's screen (blinded, nothing saved) at both widths, and the progress
dashboard refreshes itself when a rating arrives."""

from __future__ import annotations

import json

import pytest

from annotation.models import Assignment
from annotation.services.assignments import assignment_next
from annotation.services.ratings import assignment_submit
from tests.conftest import log_in
from tests.ui.conftest import WIDTHS, horizontal_overflow, shot
from tests.workspace.conftest import items_jsonl, rrgen_answers

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_items_search_updates_in_place_and_pages(page_at, live_server, make_study, admin_user):
    study = make_study("rrgen-001", items_text=items_jsonl(60))
    page = page_at(1400)
    log_in(page, live_server, admin_user)
    page.goto(f"{live_server.url}/studies/{study.slug}/items/")
    assert page.locator("tr[data-item]").count() == 50
    page.click("a[rel=next]")
    page.wait_for_selector("tr[data-item='it-0059']")
    assert page.locator("tr[data-item]").count() == 10
    page.goto(f"{live_server.url}/studies/{study.slug}/items/")
    page.fill("#f-q", "it-0042")
    page.wait_for_function("() => document.querySelectorAll('tr[data-item]').length === 1")
    assert page.locator("tr[data-item='it-0042']").is_visible()
    assert "q=it-0042" in page.url  # the filtered view has its own address
    shot(page, "items-search-1400")


@pytest.mark.parametrize("width", WIDTHS)
def test_preview_is_the_raters_screen_blinded(page_at, live_server, make_study, admin_user, width):
    item = json.dumps({"id": "pv-1", "context": "The hotel was noisy.", "outputs": [
        {"system": "secret-model-a", "content": "We are sorry about the noise."},
        {"system": "secret-model-b", "content": "Thanks for staying."}]})
    study = make_study("rrgen-001", items_text=item + "\n")
    page = page_at(width)
    posts = []
    page.on("request", lambda r: posts.append(r.url) if r.method == "POST" else None)
    log_in(page, live_server, admin_user)
    posts.clear()
    page.goto(f"{live_server.url}/studies/{study.slug}/items/{study.items.get().pk}/preview/")
    page.wait_for_selector("#ws-form[data-ready='1']")
    assert "secret-model" not in page.content()
    assert page.locator("[data-preview]").is_visible() and page.locator(".submit-btn").is_disabled()
    page.keyboard.press("6")  # the workspace's keys work in the preview too
    assert page.locator("#response-1 input[type=radio]:checked").count() == 1
    assert horizontal_overflow(page) <= 0
    shot(page, f"item-preview-{width}")
    page.wait_for_timeout(500)  # give a (wrong) autosave the chance to fire
    assert posts == [] and not Assignment.objects.exists()


def test_progress_dashboard_refreshes_itself(page_at, live_server, make_study, admin_user, annotator):
    study = make_study("rrgen-001", annotators=[annotator], items_text=items_jsonl(3), raters_per_item=1)
    page = page_at(1400)
    log_in(page, live_server, admin_user)
    page.goto(f"{live_server.url}/studies/{study.slug}/progress/")
    assert "0 of 3 ratings done" in page.inner_text("[data-done]")
    assignment_submit(assignment=assignment_next(study=study, rater=annotator), answers=rrgen_answers(3),
                      time_on_task_ms=5000)
    page.wait_for_selector("[data-done]:has-text('1 of 3 ratings done')", timeout=15_000)  # by polling, no reload
    assert page.locator(f"tr[data-rater='{annotator.username}']").inner_text().split()[1] == "1"
    shot(page, "progress-live-1400")
