"""Where each page's question is answered in the documentation site (/docs/), in one table, so that a
renamed docs page or heading fails a test (tests/docs/test_help_links.py) rather than a reader's click."""

from __future__ import annotations

from typing import NamedTuple


class Help(NamedTuple):
    page: str  # a Markdown file under docs/
    anchor: str  # a heading's id in it ("" for the top)
    label: str


HELP = {
    "studies": Help("tutorials/first-study.md", "", "Your first study"),
    "study-create": Help("tutorials/first-study.md", "create-the-study", "Creating a study"),
    "manage": Help("study-management.md", "", "Managing a study"),
    "phases": Help("participant-phases.md", "", "The phases format"),
    "crowd": Help("tutorials/crowd-study.md", "phases-training-and-the-link-on-the-manage-page", "Crowd studies"),
    "payments": Help("participant-phases.md", "payment-decisions", "How payment decisions are made"),
    "items": Help("item-format.md", "", "The item format"),
    "item-errors": Help("item-format.md", "errors", "The item format's errors"),
    "rubric": Help("rubric-format.md", "", "The rubric format"),
    "rubric-errors": Help("rubric-format.md", "validation", "The rubric format's rules"),
    "report": Help("statistics.md", "", "What the figures are"),
    "progress": Help("tutorials/crowd-study.md", "progress-and-the-payment-sheet", "Reading progress"),
    "plan": Help("statistics.md", "", "How the plan is computed"),
    "datasets": Help("how-to/open-release.md", "", "Releasing a dataset"),
    "exports": Help("reference/reports-and-exports.md", "", "Reports and exports"),
    "judges": Help("how-to/judge-providers.md", "", "Judges on each provider"),
    "judge-config": Help("judges.md", "", "Judge configuration"),
    "budget": Help("how-to/budget-and-batches.md", "estimate-before-a-run", "Estimates and caps"),
    "gold": Help("judges.md", "", "Judges against gold"),
    "doubt": Help("explanation/trusting-judges.md", "", "When to trust a judge"),
}


def help_url(key: str) -> str:
    """The /docs/ address of HELP[key] (MkDocs serves page.md as page/; index.md as the folder)."""
    entry = HELP[key]
    path = entry.page.removesuffix(".md")
    path = "" if path == "index" else path.removesuffix("/index") + "/"
    return f"/docs/{path}" + (f"#{entry.anchor}" if entry.anchor else "")
