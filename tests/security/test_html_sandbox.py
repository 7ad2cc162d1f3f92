"""HTML outputs run in a sandboxed frame: a hostile output cannot reach the rater's page, cookies,
session or the network. Each output below runs a probe that tries every escape and posts what it
managed to the parent page; the test, on the parent, checks that every attempt failed, that the
parent's globals and address are untouched, and that nothing was loaded from the server.

Headless Chromium (Debian's package) through Playwright, against the live server."""

from __future__ import annotations

import json

import pytest

from tests.conftest import log_in, make_user

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# Runs inside the output. Every attempt reports "blocked" when the browser refuses it.
PROBE = """
<script>
(function () {
  var report = {label: "%(label)s"};
  function attempt(name, fn) { try { report[name] = String(fn()); } catch (e) { report[name] = "blocked"; } }
  attempt("parent_document", function () { return window.parent.document.body.innerHTML.length; });
  attempt("parent_global", function () { window.parent.__sandbox_escape = "%(label)s"; return "set"; });
  attempt("top_document", function () { return top.document.cookie; });
  attempt("cookie", function () { return document.cookie; });
  attempt("storage", function () { return localStorage.length; });
  attempt("top_navigation", function () { top.location.href = "/?escaped=%(label)s"; return "assigned"; });
  var pending = 2;
  function done() { if (--pending === 0) { parent.postMessage({sandbox_probe: report}, "*"); } }
  try {
    fetch("/api/studies/", {credentials: "include"})
      .then(function (r) { return r.text(); })
      .then(function (t) { report.fetch = "read " + t.slice(0, 40); done(); },
            function () { report.fetch = "blocked"; done(); });
  } catch (e) { report.fetch = "blocked"; done(); }
  var s = document.createElement("script");
  s.src = "/static/vendor/htmx.min.js?from=%(label)s";
  s.onload = function () { report.external_script = "loaded"; done(); };
  s.onerror = function () { report.external_script = "blocked"; done(); };
  (document.head || document.documentElement).appendChild(s);
})();
</script>
"""

# Collects the probes' messages on the rater's page (the top frame only).
COLLECT = """
if (window === window.top) {
  window.__probes = [];
  window.addEventListener("message", function (e) {
    if (e.data && e.data.sandbox_probe) { window.__probes.push(e.data.sandbox_probe); }
  });
}
"""


def probe(label: str) -> str:
    return PROBE % {"label": label}


WELL_FORMED = {
    "full-page": f"<!DOCTYPE html><html><head><title>A</title></head><body><p>chart</p>{probe('full-page')}</body></html>",
    "fragment": f"<div>no html, head or body tags</div>{probe('fragment')}",
}
# Pages whose first script comes before their <head> tag (or whose "<head>" sits in a comment).
SCRIPT_BEFORE_HEAD = {
    "script-first": f"{probe('script-first')}<html><head><title>B</title></head><body>chart</body></html>",
    "head-in-comment": f"<!-- <head> -->{probe('head-in-comment')}<p>chart</p>",
}


def item_line(outputs: dict[str, str]) -> str:
    return json.dumps({"id": "sandbox-probe", "context": "Draw a chart.", "context_kind": "text",
                       "outputs": [{"system": f"model-{name}", "content": html, "kind": "html"}
                                   for name, html in outputs.items()]}) + "\n"


def probes_from_workspace(page, live_server, make_study, outputs: dict[str, str]) -> list[dict]:
    rater = make_user("sandbox-rater")
    study = make_study("codegen-002", annotators=[rater], items_text=item_line(outputs), presentation="side_by_side")
    page.add_init_script(COLLECT)
    log_in(page, live_server, rater)
    workspace = f"{live_server.url}/studies/{study.slug}/rate/"
    page.goto(workspace)
    page.wait_for_selector("#ws-form[data-ready='1']")
    assert page.locator("iframe[sandbox]").count() == len(outputs)
    page.wait_for_function(f"() => window.__probes.length >= {len(outputs)}", timeout=15_000)
    page.wait_for_timeout(300)  # a navigation attempt, had it worked, would have started by now
    assert page.url == workspace, "an output navigated the rater's page"
    assert page.evaluate("typeof window.__sandbox_escape") == "undefined", "an output set a global on the page"
    return page.evaluate("window.__probes")


ATTEMPTS = {"parent_document", "parent_global", "top_document", "cookie", "storage", "top_navigation", "fetch",
            "external_script"}


def escapes(report: dict) -> dict:
    """The attempts that were not refused (an empty cookie string counts as refused: nothing to read)."""
    assert set(report) == ATTEMPTS | {"label"}, report  # every attempt ran and reported
    return {k: v for k, v in report.items() if k != "label" and v != "blocked" and not (k == "cookie" and v == "")}


def test_well_formed_html_outputs_cannot_escape_the_sandbox(page, live_server, make_study):
    reports = probes_from_workspace(page, live_server, make_study, WELL_FORMED)
    assert sorted(r["label"] for r in reports) == sorted(WELL_FORMED)
    assert {r["label"]: escapes(r) for r in reports} == {label: {} for label in WELL_FORMED}


def test_a_script_before_the_head_tag_cannot_reach_the_network(page, live_server, make_study):
    # annotation/rendering.py sandboxed_srcdoc puts its CSP <meta> right after the first "<head"
    # it finds; a meta CSP governs only what follows it, so a script placed before that tag (or a
    # "<head>" inside a comment) runs without the CSP and loads from any server.
    reports = probes_from_workspace(page, live_server, make_study, SCRIPT_BEFORE_HEAD)
    assert sorted(r["label"] for r in reports) == sorted(SCRIPT_BEFORE_HEAD)
    assert {r["label"]: escapes(r) for r in reports} == {label: {} for label in SCRIPT_BEFORE_HEAD}
