"""A search reads at most SEARCH_WINDOW items a page (issue 26: a rare word read all 2,000,000 items
of a study, 13 s): the matches in the window, then a link that searches on, until every match is found."""

from __future__ import annotations

import re

import pytest

from annotation import items_list
from tests.ui.test_pages import big_study  # noqa: F401  (fixture)
from tests.workspace.conftest import items_jsonl  # noqa: F401

pytestmark = pytest.mark.django_db


def shown(body: str) -> list[str]:
    return re.findall(r'data-item="([^"]+)"', body)


def link(body: str, rel: str) -> str | None:
    found = re.search(rf'href="\?([^"]*)" rel="{rel}"', body)
    return found.group(1).replace("&amp;", "&") if found else None


def test_a_search_walks_the_study_window_by_window_and_finds_every_match(big_study, admin_user, client_for,
                                                                         monkeypatch):
    monkeypatch.setattr(items_list, "SEARCH_WINDOW", 7)
    c = client_for(admin_user)
    url = f"/studies/{big_study.slug}/items/"
    wanted = sorted(big_study.items.filter(context__icontains="Review number 4").values_list("external_id", flat=True))
    found, pages, query = [], 0, "q=Review+number+4"
    while query is not None:
        body = c.get(f"{url}?{query}").content.decode()
        found += shown(body)
        pages += 1
        assert len(shown(body)) <= 7
        query = link(body, "next")
    assert found == wanted and pages == -(-120 // 7)  # every match once, in order, 7 items read a page
    first = c.get(url, {"q": "Review number 11"}).content.decode()  # items 11 and 110-119, beyond the first window
    assert shown(first) == [] and "Search further" in first
    assert "prev" not in first
    back_from = c.get(f"{url}?{link(first, 'next')}").content.decode()
    assert link(back_from, "prev") is not None
