"""The Content-Security-Policy's one widening: the pages that may show a study's HTML outputs (sandboxed srcdoc
frames, which inherit the page's policy) let inline scripts run; every other page, and those pages of a study
without HTML, allow scripts from Concord's own files only."""

from __future__ import annotations

import json

import pytest

pytestmark = pytest.mark.django_db


def script_src(response) -> str:
    policy = dict(d.strip().split(" ", 1) for d in response["Content-Security-Policy"].split(";"))
    return policy["script-src"]


def test_only_pages_of_studies_with_html_outputs_allow_inline_scripts(make_study, annotator, admin_user, client_for):
    html_item = json.dumps({"id": "viz-1", "context": "Draw a chart.", "outputs": [
        {"system": "m1", "kind": "html", "content": "<script>document.title = 'chart'</script><p>chart</p>"},
        {"system": "m2", "content": "a chart, in words"}]}) + "\n"
    with_html = make_study("codegen-002", annotators=[annotator], items_text=html_item, slug="with-html")
    plain = make_study("rrgen-001", annotators=[annotator])
    rater, admin = client_for(annotator), client_for(admin_user)
    assert script_src(rater.get(f"/studies/{with_html.slug}/rate/")) == "'self' 'unsafe-inline'"
    item = with_html.items.get()
    assert script_src(admin.get(f"/studies/{with_html.slug}/items/{item.pk}/preview/")) == "'self' 'unsafe-inline'"
    assert script_src(rater.get(f"/studies/{plain.slug}/rate/")) == "'self'"
    for path in ("/", f"/studies/{with_html.slug}/rate/history/", "/login/"):
        assert script_src(rater.get(path)) == "'self'", path
    assert script_src(admin.get(f"/studies/{with_html.slug}/report/")) == "'self'"
