"""The crowd participant's pages that only a flow reaches, checked with axe-core at 390 and 1400 px:
the training feedback, the completion code, and the page after returning the task (and after a
submit, the announcement of its result)."""

from __future__ import annotations

import json
from urllib.parse import urlencode

import pytest

from annotation.services.crowd import crowd_link_create
from annotation.services.items import items_import
from annotation.simulation.items import items_for
from tests.a11y.axe import axe_run, describe
from tests.a11y.conftest import TRAINING_ITEM
from tests.page_settle import settle
from tests.ui.conftest import WIDTHS, shot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def _answer_pair(page) -> None:
    """Helpfulness for both answers, then the better one (the training's expected answer where it shows)."""
    better = page.evaluate("""() => { const r = [...document.querySelectorAll('[data-response]')]
        .find((el) => el.textContent.includes('Unplug')); return r ? r.dataset.response : '1'; }""")
    for key in ("6", "Enter", "3", better, "c", "Enter"):
        page.keyboard.press(key)


def _check(page, name: str, failures: list) -> None:
    settle(page)
    failures.extend(f"{name}: {d}" for d in describe(axe_run(page)))
    shot(page, f"a11y-crowd-{name}")


@pytest.mark.parametrize("width", WIDTHS)
def test_training_feedback_completion_and_return_pages(page_at, live_server, make_study, admin_user, width):
    items = "\n".join(json.dumps(r) for r in items_for("compare-pairwise", 2, seed=5))
    study = make_study("compare-pairwise", items_text=items, raters_per_item=1, training_pass_mark=0.5)
    items_import(study=study, text=json.dumps(TRAINING_ITEM) + "\n", filename="training.jsonl")
    link = crowd_link_create(study=study, user=admin_user, provider="prolific", completion_code="A11Y-OK",
                             items_per_participant=1, time_limit_minutes=30)
    failures: list[str] = []
    page = page_at(width)
    page.goto(f"{live_server.url}/crowd/{link.token}/?{urlencode({'PROLIFIC_PID': f'p{width}', 'SESSION_ID': 's'})}")
    page.wait_for_selector("#ws-form[data-ready='1']")
    _answer_pair(page)
    page.wait_for_selector("[data-testid=training-feedback]")
    _check(page, f"training-feedback-{width}", failures)
    page.click("text=Start rating")
    page.wait_for_selector("#ws-form[data-ready='1']")
    _answer_pair(page)
    page.wait_for_selector("[data-testid=completion-code]")
    page.wait_for_function("() => document.getElementById('ws-announce').textContent.includes('Submitted')")
    _check(page, f"completion-{width}", failures)

    page = page_at(width)
    page.goto(f"{live_server.url}/crowd/{link.token}/?{urlencode({'PROLIFIC_PID': f'q{width}', 'SESSION_ID': 's'})}")
    page.wait_for_selector("#ws-form[data-ready='1']")
    page.once("dialog", lambda dialog: dialog.accept())
    page.click("text=Return the task")
    page.wait_for_selector("h1:has-text('Task returned')")
    _check(page, f"returned-{width}", failures)
    assert not failures, "\n".join(failures)
