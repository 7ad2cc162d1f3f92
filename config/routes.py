"""The route inventory: every URL pattern of Concord with its access rule (annotation.access) and the
class of data it serves. tests/security/test_route_inventory.py fails while a route of the URL confs
is missing here; the permission matrix (tests/security/test_permission_matrix.py) derives every
expected answer from these rules; the audit test requests every PERSONAL route and expects one audit
entry; docs/security.md's table is `manage.py routes` (a test keeps them equal).

A new route is one line in ROUTES: its key is "page:<url name>", "api:<url name>" (names repeat
between pages and the API) or "django-admin/" for Django's admin site.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass
from typing import Callable

from django.urls import URLPattern, URLResolver, get_resolver

from annotation.access import Can, can, is_admin, is_signed_in, is_team_account, may_read_api_docs
from annotation.models import AuditEntry

Action = AuditEntry.Action


@dataclass(frozen=True)
class Rule:
    """Who may reach a route: `allows(user, study)`, `study` being the study the URL names (its slug,
    or the run, release or rubric of it), None for site-wide routes."""

    name: str
    who: str
    allows: Callable[..., bool]
    study_scoped: bool = False


ANYONE = Rule("anyone", "everyone: the page itself, or the link's token, is the key", lambda user, study: True)
SIGNED_IN = Rule("signed in", "any signed-in, active account; lists hold only what the study rule lets it see",
                 lambda user, study: is_signed_in(user))
API_DOCS = Rule("API docs", "site admins, study members and owners; not crowd participants",
                lambda user, study: may_read_api_docs(user))
TEAM = Rule("team", "signed-in accounts but crowd participants (the docs site, API tokens)",
            lambda user, study: is_team_account(user))
SITE_ADMIN = Rule("site admin", "site admins (is_staff, active)", lambda user, study: is_admin(user))
STUDY_READ = Rule("study: read", "site admins, the study's owner, its researchers (not removed)",
                  lambda user, study: can(user, study, Can.READ), study_scoped=True)
STUDY_RATE = Rule("study: rate", "the study's annotators, crowd participants included (not removed; "
                  "a paused one gets no new work)", lambda user, study: can(user, study, Can.RATE), study_scoped=True)
STUDY_MANAGE = Rule("study: manage", "site admins and the study's owner",
                    lambda user, study: can(user, study, Can.MANAGE), study_scoped=True)
STUDY_PARTICIPANTS = Rule("study: participants' data", "site admins only (not the owner)",
                          lambda user, study: can(user, study, Can.PARTICIPANTS), study_scoped=True)
STUDY_ADMIN = Rule("study: site admin", "site admins only (judge runs spend money; judges are site-wide)",
                   lambda user, study: is_admin(user), study_scoped=True)
STUDY_RUBRIC = Rule("rubric of a study", "site admins; those who read or rate a study that uses the rubric",
                    lambda user, study: can(user, study, Can.READ) or can(user, study, Can.RATE), study_scoped=True)

RULES = (ANYONE, SIGNED_IN, API_DOCS, TEAM, SITE_ADMIN, STUDY_READ, STUDY_RATE, STUDY_MANAGE, STUDY_PARTICIPANTS,
         STUDY_ADMIN, STUDY_RUBRIC)


class Data(enum.StrEnum):
    """What a route serves, from least to most sensitive."""

    NONE = "none"  # nothing of a study (sign-in, translations, a form)
    OWN = "own"  # the user's own work (a rater's assignments, answers, history)
    STUDY = "study"  # a study's content, settings and aggregates; judges' scores
    # members' usernames with counts, shown in the app to those who run the study; a crowd account by number,
    # never its panel id (annotation.selectors.member_shown_name; tests/security/test_personal_column.py)
    NAMES = "names"
    PERSONAL = "personal"  # participants' identities with their ratings, answers, times or payments: audited


@dataclass(frozen=True)
class Route:
    rule: Rule
    data: Data = Data.STUDY
    audit: str = ""  # the audit action each serving of personal data writes
    # the query strings under which the route serves personal data (each is audited once)
    queries: tuple[str, ...] = ("",)
    page_audit: str = ""  # the action of the page itself (no query), where it differs from its downloads'

    def __post_init__(self):
        if (self.data == Data.PERSONAL) != bool(self.audit):
            raise ValueError("a route serving personal data names its audit action, and only such a route")

    def audit_of(self, query: str) -> str:
        return self.page_audit if query == "" and self.page_audit else self.audit

    @property
    def audits(self) -> str:
        return "; ".join(filter(None, [self.page_audit, self.audit]))


def personal(rule: Rule, audit: str, *queries: str) -> Route:
    return Route(rule, Data.PERSONAL, audit, queries or ("",))


def personal_page(rule: Rule, download_audit: str, *downloads: str) -> Route:
    """A page that shows personal data itself (a page view) and offers it as downloads under `downloads`."""
    return Route(rule, Data.PERSONAL, download_audit, ("", *downloads), page_audit=Action.PAGE_VIEW)


ROUTES: dict[str, Route] = {
    # signing in, the interface
    "page:login": Route(ANYONE, Data.NONE),
    "page:logout": Route(ANYONE, Data.NONE),
    "page:javascript-catalog": Route(ANYONE, Data.NONE),
    "page:home": Route(SIGNED_IN, Data.OWN),
    "page:invitation": Route(ANYONE, Data.NONE),
    "page:crowd-entry": Route(ANYONE, Data.OWN),
    # managing a study
    "page:study-create": Route(SITE_ADMIN, Data.NONE),
    "page:study-manage": Route(STUDY_MANAGE, Data.NAMES),
    "page:manage-upload": Route(STUDY_MANAGE),
    "page:manage-members": Route(STUDY_MANAGE, Data.NAMES),
    "page:manage-member-status": Route(STUDY_MANAGE, Data.NAMES),
    "page:manage-status": Route(STUDY_MANAGE),
    "page:manage-settings": Route(STUDY_MANAGE),
    "page:manage-invitations": Route(STUDY_MANAGE),
    "page:manage-invitation-revoke": Route(STUDY_MANAGE),
    "page:manage-crowd": Route(STUDY_MANAGE),
    "page:manage-crowd-revoke": Route(STUDY_MANAGE),
    "page:manage-phases": Route(STUDY_MANAGE),
    "page:items-page": Route(STUDY_MANAGE),
    "page:item-preview": Route(STUDY_MANAGE),
    "page:item-delete": Route(STUDY_MANAGE),
    "page:item-replace": Route(STUDY_MANAGE),
    # participants' data
    "page:manage-crowd-payments": personal(STUDY_PARTICIPANTS, Action.PAYMENT_DOWNLOAD, "pay_per_item=0.15",
                                           "format=bulk_approve", "format=bulk_bonus&bonus_per_item=0.05"),
    "page:manage-phase-answers": personal(STUDY_PARTICIPANTS, Action.DATA_DOWNLOAD),
    "page:participant-data": personal(STUDY_PARTICIPANTS, Action.PARTICIPANT_DOWNLOAD),
    "page:participant-erase": Route(STUDY_PARTICIPANTS, Data.NAMES),
    "api:api-participant-data": personal(STUDY_PARTICIPANTS, Action.PARTICIPANT_DOWNLOAD),
    "api:api-participant-data-csv": personal(STUDY_PARTICIPANTS, Action.PARTICIPANT_DOWNLOAD),
    "api:api-participant-erase": Route(STUDY_PARTICIPANTS, Data.NAMES),
    "page:audit-log": Route(SITE_ADMIN, Data.NAMES),
    "api:api-audit-log": Route(SITE_ADMIN, Data.NAMES),
    # rating
    "page:workspace": Route(STUDY_RATE, Data.OWN),
    "page:workspace-guidelines": Route(STUDY_RATE, Data.OWN),
    "page:workspace-history": Route(STUDY_RATE, Data.OWN),
    "page:workspace-assignment": Route(STUDY_RATE, Data.OWN),
    "page:workspace-draft": Route(STUDY_RATE, Data.OWN),
    "page:workspace-submit": Route(STUDY_RATE, Data.OWN),
    "page:training-feedback": Route(STUDY_RATE, Data.OWN),
    "page:training-retry": Route(STUDY_RATE, Data.OWN),
    "page:phase-consent": Route(STUDY_RATE, Data.OWN),
    "page:phase-questionnaire": Route(STUDY_RATE, Data.OWN),
    "page:phase-instructions": Route(STUDY_RATE, Data.OWN),
    "page:crowd-return": Route(STUDY_RATE, Data.OWN),
    "api:api-workspace-next": Route(STUDY_RATE, Data.OWN),
    "api:api-workspace-assignment": Route(STUDY_RATE, Data.OWN),
    "api:api-workspace-draft": Route(STUDY_RATE, Data.OWN),
    "api:api-workspace-submit": Route(STUDY_RATE, Data.OWN),
    "api:api-phase-consent": Route(STUDY_RATE, Data.OWN),
    "api:api-phase-questionnaire": Route(STUDY_RATE, Data.OWN),
    "api:api-phase-instructions": Route(STUDY_RATE, Data.OWN),
    "api:api-training-retry": Route(STUDY_RATE, Data.OWN),
    # reading a study: reports, progress, plans, datasets
    "page:report": personal_page(STUDY_READ, Action.DATA_DOWNLOAD, "download=json", "download=csv", "download=html"),
    "page:report-paper": personal(STUDY_READ, Action.DATA_DOWNLOAD),
    "page:report-paper-file": personal(STUDY_READ, Action.DATA_DOWNLOAD),
    "page:progress-page": personal(STUDY_READ, Action.PAGE_VIEW),  # crowd panel ids with times and payments
    "page:plan": Route(STUDY_READ),
    "page:datasets": Route(STUDY_READ),
    "page:dataset-export": personal(STUDY_READ, Action.DATA_DOWNLOAD),
    "page:release-create": Route(STUDY_READ),
    "page:release-download": personal(STUDY_READ, Action.DATA_DOWNLOAD),
    # the API of a study
    "api:api-root": Route(SIGNED_IN, Data.NONE),
    "api:schema": Route(API_DOCS, Data.NONE),
    "api:api-docs": Route(API_DOCS, Data.NONE),
    "page:docs": Route(TEAM, Data.NONE),
    "page:account-tokens": Route(TEAM, Data.OWN),
    "api:api-tokens": Route(TEAM, Data.OWN),
    "api:api-token-revoke": Route(TEAM, Data.OWN),  # the built documentation site (config/docs_site.py)
    "api:rubric-list": Route(SIGNED_IN),
    "api:rubric-detail": Route(STUDY_RUBRIC),
    "api:api-rubric-file": Route(SITE_ADMIN),
    "api:study-list": Route(SIGNED_IN),
    "api:study-detail": Route(STUDY_READ),
    "api:study-progress": Route(STUDY_READ),
    "api:study-items": Route(STUDY_MANAGE),
    "api:api-study-otlp-traces": Route(STUDY_MANAGE),  # OTLP/HTTP traces in, by API token
    "api:study-members": Route(STUDY_MANAGE, Data.NAMES),
    "api:study-status": Route(STUDY_MANAGE),
    "api:api-study-export": personal(STUDY_READ, Action.DATA_DOWNLOAD, "file=csv"),
    "api:api-study-report": personal(STUDY_READ, Action.DATA_DOWNLOAD),
    "api:api-study-comparisons": personal(STUDY_READ, Action.DATA_DOWNLOAD),
    "api:api-study-releases": Route(STUDY_READ),
    "api:api-release-file": personal(STUDY_READ, Action.DATA_DOWNLOAD),
    # judges
    "page:judges:list": Route(SITE_ADMIN),
    "page:judges:load": Route(SITE_ADMIN),
    "page:judges:study": Route(STUDY_READ),
    "page:judges:run-start": Route(STUDY_ADMIN),
    "page:judges:run-estimate": Route(STUDY_ADMIN),
    "page:judges:jury": Route(STUDY_ADMIN),
    "page:judges:routing": Route(STUDY_ADMIN),
    "page:judges:gold": Route(STUDY_READ),
    "page:judges:doubt": Route(STUDY_READ),
    "page:judges:run-progress": Route(STUDY_READ),
    "page:judges:run-cancel": Route(STUDY_ADMIN),
    "page:judges:run-resume": Route(STUDY_ADMIN),
    "page:judges:run-cap": Route(STUDY_ADMIN),
    "page:judges:run-file": Route(STUDY_READ),
    "api:judge-config-list": Route(SITE_ADMIN),
    "api:judge-config-detail": Route(SITE_ADMIN),
    "api:judge-run-list": Route(SIGNED_IN),
    "api:judge-run-detail": Route(STUDY_READ),
    "api:judge-run-scores": Route(STUDY_READ),
    "api:judge-run-cancel": Route(STUDY_ADMIN),
    "api:judge-run-resume": Route(STUDY_ADMIN),
    "api:judge-run-cap": Route(STUDY_ADMIN),
    "api:api-judge-scores": Route(STUDY_READ),
    # Django's admin site: its own check (is_staff, active) and model permissions
    "django-admin/": Route(SITE_ADMIN, Data.NAMES),
    "django-admin:login": Route(ANYONE, Data.NONE),
    "django-admin:logout": Route(ANYONE, Data.NONE),
}


# ---------------------------------------------------------------- the URL confs


@dataclass(frozen=True)
class Pattern:
    key: str  # the ROUTES key
    pattern: str  # the full pattern, as the resolver holds it
    params: tuple[str, ...]


def _walk(patterns, prefix: str = "", namespace: str = ""):
    for p in patterns:
        if isinstance(p, URLResolver):
            ns = ":".join(filter(None, [namespace, p.namespace]))
            yield from _walk(p.url_patterns, prefix + str(p.pattern), ns)
        elif isinstance(p, URLPattern):
            full = prefix + str(p.pattern)
            params = tuple(getattr(p.pattern, "converters", {}) or p.pattern.regex.groupindex)
            if full.startswith("django-admin/"):
                key = f"django-admin:{p.name}" if p.name in ("login", "logout") else "django-admin/"
            else:
                name = ":".join(filter(None, [namespace, p.name])) if p.name else full
                key = ("api:" if full.startswith("api/") else "page:") + name
            yield Pattern(key, full, params)


def url_patterns() -> list[Pattern]:
    """Every pattern of the URL confs (DRF's format-suffix variants included), in resolver order."""
    return list(_walk(get_resolver().url_patterns))


def unlisted() -> list[str]:
    return sorted({p.key for p in url_patterns()} - set(ROUTES))


def counts() -> dict[str, int]:
    keys = {p.key for p in url_patterns()}
    return {"routes": len(keys), "url patterns": len(url_patterns()),
            "rules": len({ROUTES[k].rule.name for k in keys if k in ROUTES}),
            "personal-data routes": sum(ROUTES[k].data == Data.PERSONAL for k in keys if k in ROUTES)}


def markdown_table() -> str:
    """The inventory for docs/security.md: one row per route, with its paths."""
    paths: dict[str, list[str]] = {}
    for p in url_patterns():
        shown = re.sub(r"\(\?P<(\w+)>[^)]*\)", r"<\1>", p.pattern).replace("^", "").replace("$", "")
        if "format" not in p.params and shown not in paths.setdefault(p.key, []):
            paths[p.key].append(shown)
    lines = ["| Route | Path | Rule | Data | Audited as |", "|---|---|---|---|---|"]
    for key, route in ROUTES.items():
        shown = "django-admin/…" if key == "django-admin/" else "<br>".join(f"`/{p}`" for p in paths.get(key, []))
        lines.append(f"| `{key}` | {shown} | {route.rule.name} | {route.data} | {route.audits} |")
    return "\n".join(lines)

