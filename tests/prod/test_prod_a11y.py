"""Accessibility and languages as production serves them (gunicorn, DEBUG unset, collected static):
axe-core finds no serious or critical violation on the sign-in page and a rater's workspace at 390
and 1400 px, the workspace's scripts (scroll regions, the JavaScript catalog) are served, and a study
in German reaches its rater in German, script strings included."""

from __future__ import annotations

import pytest

from annotation.models import Study
from tests.a11y.axe import axe_run, describe
from tests.conftest import make_user
from tests.prod.test_prod_browser import log_in, new_page
from tests.workspace.conftest import items_jsonl

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.mark.parametrize("width", [390, 1400])
def test_production_pages_pass_axe_and_speak_german(browser, prod_server, make_study, width):
    rater = make_user(f"prod-a11y-{width}")
    study = make_study("rrgen-001", annotators=[rater], items_text=items_jsonl(2), raters_per_item=1)
    context, page, watch = new_page(browser, prod_server, width)
    page.goto(prod_server.url + "/login/")
    assert not describe(axe_run(page)), describe(axe_run(page))
    log_in(page, prod_server, rater)
    Study.objects.filter(pk=study.pk).update(language="de")
    scripts = []
    page.on("response", lambda r: scripts.append((r.status, r.url)) if r.request.resource_type == "script" else None)
    page.goto(f"{prod_server.url}/studies/{study.slug}/rate/")
    page.wait_for_selector("#ws-form[data-ready='1']")
    assert all(status == 200 for status, _ in scripts) and any("/jsi18n/de/" in url for _, url in scripts) \
        and any("scroll-regions" in url for _, url in scripts), scripts
    assert page.inner_text(".submit-btn") == "Absenden"
    page.keyboard.press("Enter")  # nothing answered: the script's own (translated) message
    page.wait_for_function("() => document.getElementById('save-status').textContent.includes('erforderlich')")
    problems = describe(axe_run(page))
    context.close()
    assert not problems, problems
    assert not watch.static_failures and not watch.server_errors, (watch.static_failures, watch.server_errors)
