"""Study management in real headless Chromium, at a phone's width and a desktop's: every action
updates its part of the page in place, errors appear next to their field, no flow ends on a JSON
page, nothing overflows sideways; without JavaScript the forms still work (redirect + message).
Screenshots go to test-artifacts/manage-*.png."""

from __future__ import annotations

from pathlib import Path

import pytest

from annotation.models import Study, StudyChange, StudyMember
from tests.conftest import PASSWORD, log_in, make_user
from tests.manage.conftest import items_jsonl
from tests.screens import screenshot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
WIDTHS = [390, 1400]


def shot(page, name: str) -> None:
    screenshot(page, ARTIFACTS / f"manage-{name}.png", full_page=True)


def assert_html_page_without_overflow(page, path: str) -> None:
    """An HTML page at `path` whose content (main) fits the viewport. The site's top bar belongs to the
    shared layout (helper "ui") and is checked there."""
    assert page.evaluate("document.contentType") == "text/html", f"{page.url} is not an HTML page"
    assert page.url.split("#")[0].endswith(path), page.url
    offenders = page.evaluate("""() => [...document.querySelectorAll('main, main *')]
        .filter(e => e.getBoundingClientRect().right > document.documentElement.clientWidth + 1
                     && !e.closest('.table-wrap > table'))
        .slice(0, 8).map(e => e.tagName + '#' + e.id + '.' + e.className)""")
    assert not offenders, f"wider than the viewport at {page.url}: {offenders}"
    wraps = page.evaluate("""() => [...document.querySelectorAll('main .table-wrap')]
        .filter(e => e.scrollWidth > e.clientWidth + 1).map(e => e.parentElement.id)""")
    assert not wraps, f"tables that scroll sideways at {page.url}: {wraps}"


def error_beside(page, field_id: str):
    """The error list that belongs to a field: inside the field's own wrapper, right after it."""
    error = page.locator(f".field:has(#{field_id}) #{field_id}_error")
    error.wait_for(timeout=10_000)
    field_box, error_box = page.locator(f"#{field_id}").bounding_box(), error.bounding_box()
    assert 0 <= error_box["y"] - (field_box["y"] + field_box["height"]) < 40  # directly under the field
    return error


@pytest.fixture
def context_page(browser, request):
    contexts = []

    def _open(width: int, *, js: bool = True):
        ctx = browser.new_context(viewport={"width": width, "height": 900}, java_script_enabled=js)
        contexts.append(ctx)
        return ctx.new_page()

    yield _open
    for ctx in contexts:
        ctx.close()


@pytest.mark.parametrize("width", WIDTHS)
def test_admin_manages_a_study_in_place(make_study, admin_user, annotator, live_server, context_page, width,
                                        tmp_path):
    study = make_study("rrgen-001", annotators=[annotator], items_text=items_jsonl(4))
    make_user("ann")
    path = f"/studies/{study.slug}/manage/"
    page = context_page(width)
    log_in(page, live_server, admin_user)
    page.goto(live_server.url + path)
    assert_html_page_without_overflow(page, path)
    shot(page, f"{width}-page")

    # members: an unknown name refuses the list, shown under the field; then the good list
    page.fill("#id_names", "ann, ghost")
    page.click("#members button:has-text('Add members')")
    assert "ghost: no such user" in error_beside(page, "id_names").inner_text()
    assert page.input_value("#id_names") == "ann, ghost"  # what was typed is still there
    page.wait_for_function("() => document.activeElement && document.activeElement.id === 'id_names'")  # focus on it
    assert_html_page_without_overflow(page, path)
    shot(page, f"{width}-members-error")
    page.fill("#id_names", "ann")
    page.click("#members button:has-text('Add members')")
    page.wait_for_selector("#members .notice:has-text('Added 1: ann')")
    assert StudyMember.objects.filter(study=study, user__username="ann").exists()

    # pause a rater: their row says so at once
    page.click("#members tr[data-member=rater1] button:has-text('Pause')")
    page.wait_for_selector("#members tr[data-member=rater1] .badge.member-paused")
    assert StudyMember.objects.get(study=study, user=annotator).paused
    # remove asks first (what happens to the open work and the ratings), then marks the row
    page.once("dialog", lambda dialog: dialog.accept())
    page.click("#members tr[data-member=ann] button:has-text('Remove')")
    page.wait_for_selector("#members tr[data-member=ann] .badge.member-removed")
    assert StudyMember.objects.get(study=study, user__username="ann").removed_at is not None

    # settings: a bad value shown beside its field, then saved and logged
    page.fill("#id_raters_per_item", "0")
    page.click("#settings button:has-text('Save settings')")
    error_beside(page, "id_raters_per_item")
    page.fill("#id_raters_per_item", "2")
    page.fill("#id_name", "Hotel replies, round 2")
    page.click("#settings button:has-text('Save settings')")
    page.wait_for_selector("#settings .notice:has-text('Saved')")
    page.wait_for_selector("#header h1:has-text('Hotel replies, round 2')")  # out-of-band header
    page.wait_for_selector("#changes td:has-text('Raters per item')")
    assert_html_page_without_overflow(page, path)

    # upload: the problems as a table of line, field, message
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "n1", "outputs": [{"system": "s", "content": "x"}]}\n{"id": 5}\nnot json\n')
    page.set_input_files("#id_file", str(bad))
    page.click("#upload button:has-text('Upload')")
    page.wait_for_selector("#upload table.upload-errors")
    rows = page.locator("#upload table.upload-errors tbody tr")
    assert rows.count() >= 2 and rows.first.locator("td").first.inner_text() == "2"
    assert_html_page_without_overflow(page, path)
    shot(page, f"{width}-upload-errors")

    # invitation link: created in place, readable in full
    page.fill("#id_days", "3")
    page.click("#invitations button:has-text('Create link')")
    page.wait_for_selector("#invitations .invitation-link")
    link = page.input_value("#invitations .invitation-link")
    assert link.startswith(live_server.url + "/invite/")
    page.click("#invitations button:has-text('Copy')")
    page.wait_for_selector("#invitations button:has-text('Copied')")
    assert_html_page_without_overflow(page, path)

    # lifecycle: consequences stated before the click, a confirm step, the badge follows
    consequence = page.locator("#consequence-closed").inner_text()
    assert "Closing stops new assignments" in consequence and "open assignment" in consequence
    page.click("#lifecycle button:has-text('Close study')")
    page.wait_for_selector("#lifecycle .confirm")
    assert "Closing stops new assignments" in page.locator("#lifecycle .confirm").inner_text()
    shot(page, f"{width}-close-confirm")
    page.click("#lifecycle button:has-text('Yes, close study')")
    page.wait_for_selector("#header .badge.closed")
    assert Study.objects.get(pk=study.pk).status == "closed"
    page.wait_for_selector("#changes td:has-text('Status')")
    assert_html_page_without_overflow(page, path)
    shot(page, f"{width}-done")


@pytest.mark.parametrize("width", WIDTHS)
def test_invited_person_creates_an_account_and_rates(make_study, admin_user, live_server, context_page, width):
    from annotation.services.invitations import invitation_create

    study = make_study("rrgen-001", items_text=items_jsonl(3))
    inv = invitation_create(study=study, user=admin_user, days=1, max_uses=1)
    page = context_page(width)
    page.goto(f"{live_server.url}/invite/{inv.token}/")
    assert_html_page_without_overflow(page, f"/invite/{inv.token}/")
    page.fill("#id_username", "newcomer")
    page.fill("#id_password", "short")
    page.fill("#id_password2", "short")
    page.click("button:has-text('Create my account')")
    error_beside(page, "id_password")
    shot(page, f"{width}-invitation-error")
    page.fill("#id_password", "a-Long-pass-9")
    page.fill("#id_password2", "a-Long-pass-9")
    page.click("button:has-text('Create my account')")
    page.wait_for_url(f"{live_server.url}/studies/{study.slug}/rate/**")
    page.wait_for_selector("#ws-form[data-ready='1']")
    assert StudyMember.objects.filter(study=study, user__username="newcomer", role="annotator").exists()
    other = context_page(width)
    other.goto(f"{live_server.url}/invite/{inv.token}/")
    assert "used already" in other.locator("#invitation").inner_text()


def test_without_javascript_forms_redirect_back_with_messages(make_study, admin_user, annotator, live_server,
                                                              context_page):
    study = make_study("rrgen-001", annotators=[annotator], items_text=items_jsonl(2))
    path = f"/studies/{study.slug}/manage/"
    page = context_page(1400, js=False)
    page.goto(live_server.url + "/login/")
    page.fill("#id_username", admin_user.username)
    page.fill("#id_password", PASSWORD)
    page.click("button[type=submit]")
    page.goto(live_server.url + path)
    page.fill("#id_names", "ghost")
    page.click("#members button:has-text('Add members')")
    assert "ghost: no such user" in error_beside(page, "id_names").inner_text()
    page.click("#lifecycle button:has-text('Pause study')")
    page.click("#lifecycle button:has-text('Yes, pause study')")
    page.wait_for_selector(".messages li:has-text('Study is now paused')")
    assert_html_page_without_overflow(page, path)
    assert StudyChange.objects.filter(study=study, field="status", new="paused", user=admin_user).exists()
