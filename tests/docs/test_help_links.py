"""Help one click away: the header links the docs site, each page the docs page that explains it, and every
link in config/help_links.py lands on a page and heading that exist in docs/."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.template import Context, Template, TemplateSyntaxError

from config.help_links import HELP, help_url

DOCS = Path(__file__).resolve().parents[2] / "docs"


def _heading_ids(markdown: str) -> set[str]:
    """Python-Markdown's toc slugify (MkDocs' default): lower case, punctuation dropped, spaces to '-'."""
    ids = set()
    in_fence = False
    for line in markdown.splitlines():
        if line.startswith("```"):
            in_fence = not in_fence
        if in_fence or not line.startswith("#"):
            continue
        text = re.sub(r"[`*_]", "", line.lstrip("#").strip())
        slug = re.sub(r"[^\w\s-]", "", text).strip().lower()
        ids.add(re.sub(r"[-\s]+", "-", slug))
    return ids


@pytest.mark.parametrize("key", sorted(HELP))
def test_every_help_link_lands_on_a_page_and_heading_that_exist(key):
    entry = HELP[key]
    page = DOCS / entry.page
    assert page.is_file(), f"{key}: docs/{entry.page} does not exist"
    if entry.anchor:
        assert entry.anchor in _heading_ids(page.read_text()), f"{key}: no heading #{entry.anchor} in docs/{entry.page}"


def test_the_address_is_the_one_mkdocs_serves():
    assert help_url("report") == "/docs/statistics/"
    assert help_url("payments") == "/docs/participant-phases/#payment-decisions"


def test_an_unknown_key_fails_when_the_page_renders():
    with pytest.raises(TemplateSyntaxError, match="no help entry 'reprot'"):
        Template('{% load help %}{% help_link "reprot" %}').render(Context())


def test_the_header_links_the_docs_and_a_page_links_its_explanation(client_for, make_study, admin_user, researcher):
    study = make_study(researchers=[researcher])
    for user in (admin_user, researcher):
        home = client_for(user).get("/").content.decode()
        assert '<a href="/docs/"' in home, user
        report = client_for(user).get(f"/studies/{study.slug}/report/").content.decode()
        assert f'<a class="help-link" href="{help_url("report")}">' in report


def test_a_crowd_participant_is_not_offered_the_docs(client_for, make_study, admin_user):
    from annotation.models import CrowdParticipant
    from annotation.services.crowd import crowd_link_create
    from tests.conftest import make_user

    link = crowd_link_create(study=make_study(), user=admin_user, provider="prolific", completion_code="X",
                             items_per_participant=5, time_limit_minutes=30)
    user = make_user("prolific-abc")
    CrowdParticipant.objects.create(link=link, participant_id="abc", user=user)
    assert '<a href="/docs/"' not in client_for(user).get("/").content.decode()
