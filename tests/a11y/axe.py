"""axe-core (npm, pinned in tests/a11y/package-lock.json; `make browsers` installs it) run inside a
Playwright page, with the WCAG 2.0/2.1/2.2 A and AA rule tags."""

from __future__ import annotations

from pathlib import Path

import pytest

AXE_JS = Path(__file__).resolve().parent / "node_modules" / "axe-core" / "axe.min.js"
TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "wcag22aa"]
BLOCKING = ("serious", "critical")


def axe_source() -> str:
    if not AXE_JS.exists():
        pytest.fail(f"axe-core not installed at {AXE_JS}: run `make browsers` (scripts/ensure-axe.sh)")
    return AXE_JS.read_text()


def axe_run(page, rules: list[str] | None = None, within: str | None = None) -> list[dict]:
    """The page's violations as axe reports them: [{id, impact, help, nodes: [{target, summary}]}]. Every rule
    of the WCAG tags, or only the axe `rules` named (a second look at one rule costs no full run); the whole
    document, or only the element the CSS selector `within` names."""
    if not page.evaluate("typeof window.axe !== 'undefined'"):
        # Evaluated by the browser's tools, not added as an inline <script>, which the pages' CSP refuses.
        page.evaluate(axe_source() + "\n;undefined")
    only = {"type": "rule", "values": rules} if rules else {"type": "tag", "values": TAGS}
    return page.evaluate(
        """async ([only, within]) => {
             const context = within ? document.querySelector(within) : document;
             const r = await axe.run(context, {runOnly: only, resultTypes: ['violations']});
             return r.violations.map(v => ({id: v.id, impact: v.impact, help: v.help,
               nodes: v.nodes.map(n => ({target: n.target.join(' '), summary: n.failureSummary}))}));
           }""",
        [only, within],
    )


def counts(violations: list[dict]) -> dict[str, int]:
    """Nodes in violation by impact (axe's own four levels)."""
    out = {"critical": 0, "serious": 0, "moderate": 0, "minor": 0}
    for v in violations:
        out[v["impact"] or "minor"] += len(v["nodes"])
    return out


def describe(violations: list[dict], impacts=BLOCKING) -> list[str]:
    return [f"{v['impact']} {v['id']} ({v['help']}): {n['target']}" for v in violations if v["impact"] in impacts
            for n in v["nodes"][:5]]
