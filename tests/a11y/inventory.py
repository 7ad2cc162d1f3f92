"""Every page of Concord, by URL name, with who opens it: the accessibility tests visit each one for
each of its roles at 390 and 1400 px. A new page is one line here; test_inventory fails until a URL
name of the URL confs is either here or in NOT_PAGES with the reason."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

ADMIN, RESEARCHER, ANNOTATOR, CROWD, SIGNED_OUT = "admin", "researcher", "annotator", "crowd", "signed_out"
ROLES = (ADMIN, RESEARCHER, ANNOTATOR, CROWD, SIGNED_OUT)
READERS = (ADMIN, RESEARCHER)
PRESETS = ("feedback-000", "rrgen-001", "codegen-002", "aqua-003", "fulltext-004",
           "compare-pairwise", "compare-ranking")
MAIN = "rrgen-001"


@dataclass(frozen=True)
class Page:
    name: str                          # the URL name
    roles: tuple[str, ...]
    kwargs: Callable[[dict], dict] = lambda site: {}
    label: str = ""                    # what the record calls it (default: the URL name)
    ready: str = "main"                # a selector that is there once the page is usable
    status: int = 200
    query: str = ""
    tags: tuple[str, ...] = field(default=())

    @property
    def title(self) -> str:
        return self.label or self.name


def study(preset: str = MAIN):
    return lambda site: {"slug": site["slugs"][preset]}


def item(preset: str = MAIN):
    return lambda site: {"slug": site["slugs"][preset], "pk": site["items"][preset]}


WORKSPACE_READY = "#ws-form[data-ready='1'], .ws-empty"

PAGES: list[Page] = [
    Page("login", (SIGNED_OUT,)),
    Page("home", (ADMIN, RESEARCHER, ANNOTATOR)),
    Page("study-create", (ADMIN,)),
    Page("study-manage", (ADMIN,), study()),
    Page("study-manage", (ADMIN,), study("compare-pairwise"), label="study-manage crowd"),
    Page("items-page", (ADMIN,), study()),
    Page("item-preview", (ADMIN,), item(), ready=WORKSPACE_READY),
    Page("item-replace", (ADMIN,), item()),
    Page("progress-page", READERS, study()),
    Page("report", READERS, study()),
    Page("report", READERS, study("compare-ranking"), label="report compare-ranking"),
    Page("plan", READERS, study()),
    Page("datasets", READERS, study()),
    Page("judges:list", (ADMIN,)),
    Page("judges:study", READERS, study()),
    Page("judges:gold", READERS, study("aqua-003")),
    Page("judges:doubt", READERS, study()),
    Page("study-manage", (ADMIN,), lambda site: {"slug": site["phases"]}, label="study-manage phases"),
    Page("participant-erase", (ADMIN,), lambda site: {"slug": site["slugs"][MAIN], "user_id": site["participant"]}),
    Page("audit-log", (ADMIN,)),
    Page("account-tokens", (ADMIN, RESEARCHER)),
    Page("invitation", (SIGNED_OUT, ANNOTATOR), lambda site: {"token": site["invitation"]}),
    *[Page("workspace", (ANNOTATOR,), study(p), label=f"workspace {p}", ready=WORKSPACE_READY) for p in PRESETS],
    Page("workspace-history", (ANNOTATOR,), study()),
    Page("crowd-entry", (CROWD,), lambda site: {"token": site["crowd"]}, label="crowd-entry (training item)",
         query="PROLIFIC_PID=a11y-p1&STUDY_ID=s&SESSION_ID=x", ready=WORKSPACE_READY),
    Page("crowd-entry", (SIGNED_OUT,), lambda site: {"token": "no-such-link"}, label="crowd-entry (bad link)",
         status=404),
    Page("report", (ANNOTATOR,), study(), label="404 page (a report the rater may not read)", status=404),
    Page("workspace", (SIGNED_OUT,), study(), label="workspace signed out (to login)"),
]

# URL names that are not pages a person opens: each with the reason.
NOT_PAGES = {
    "logout": "POST only",
    "docs": "the documentation site's files as MkDocs Material builds them (its theme's HTML, not Concord's "
            "templates; 404 until `make docs`); its build is checked by tests/docs/",
    "javascript-catalog": "the workspace script's translations (JavaScript)",
    "manage-upload": "POST only (answers with the Manage page's section)",
    "manage-members": "POST only", "manage-member-status": "POST only", "manage-status": "POST only",
    "manage-settings": "POST only", "manage-invitations": "POST only", "manage-invitation-revoke": "POST only",
    "manage-crowd": "POST only", "manage-crowd-revoke": "POST only",
    "manage-crowd-payments": "a CSV download",
    "manage-phases": "POST only (answers with the Manage page's phases section: `study-manage phases`)",
    "manage-phase-answers": "a CSV download", "participant-data": "a file download",
    "phase-consent": "POST only: the phases are states of the workspace page, checked in test_phase_pages.py",
    "phase-questionnaire": "POST only: the phases are states of the workspace page, checked in test_phase_pages.py",
    "phase-instructions": "POST only: the phases are states of the workspace page, checked in test_phase_pages.py",
    "crowd-return": "POST only (its answer page is checked in test_crowd_pages.py)",
    "item-delete": "POST only",
    "workspace-guidelines": "an htmx fragment inside the workspace's Guidelines dialog (checked opened there)",
    "workspace-assignment": "the workspace for one assignment: the same template as `workspace`",
    "workspace-draft": "POST only", "workspace-submit": "POST only",
    "training-feedback": "reached after a training submit: checked in test_crowd_pages.py",
    "training-retry": "POST only",
    "dataset-export": "a file download", "release-create": "POST only", "release-download": "a file download",
    "judges:load": "POST only", "judges:run-start": "POST only", "judges:jury": "POST only",
    "judges:routing": "POST only", "judges:run-progress": "an htmx fragment polled on the judges page",
    "judges:run-cancel": "POST only", "judges:run-resume": "POST only", "judges:run-file": "a file download",
    "judges:run-cap": "POST only", "judges:run-estimate": "an htmx fragment of the judges' study page",
    "report-paper": "a file download (zip)", "report-paper-file": "a file download (LaTeX, Markdown, SVG, PDF, PNG)",
}
