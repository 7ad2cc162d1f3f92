"""Every URL pattern of the project x every role, by GET and by POST.

The URL resolver is walked, so a new URL without a rule in RULES fails the test. Study-scoped
URLs are requested twice: for a study the user belongs to ("member") and one they do not
("foreign"). Rules say who may reach a URL; the test then checks that:

- anonymous users are sent to a login page or get 401/403;
- nobody else gets a success (2xx) where the rule does not allow them, in particular never on
  admin-only pages and never on a study they are not a member of (admins excepted);
- those the rule allows get the page (GET_OK says which status that is when it is not 200);
- nobody ever gets a 5xx.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import pytest
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver

from tests.conftest import make_user

pytestmark = pytest.mark.django_db

ROLES = ("anonymous", "annotator", "researcher", "admin", "outsider")


# ---------------------------------------------------------------- who may reach what


def anyone(role, variant):
    return True


def signed_in(role, variant):
    return role != "anonymous"


def site_admin(role, variant):
    return role == "admin"


def study_reader(role, variant):
    """Admins, and researchers of the study."""
    return role == "admin" or (role == "researcher" and variant == "member")


def study_rater(role, variant):
    """Annotators of the study (admins rate only where they are members, which they are not here)."""
    return role == "annotator" and variant == "member"


def study_member(role, variant):
    """Admins, and any member of the study (a rubric is visible to the raters of studies using it)."""
    return role == "admin" or (role in ("annotator", "researcher") and variant == "member")


# Keyed by "page:<name>", "api:<name>" (names repeat between pages and the API), or the route
# prefix "django-admin/" for Django's admin site. A URL missing here fails the test.
RULES = {
    "page:login": anyone,
    "page:javascript-catalog": anyone,  # the interface's translated strings, nothing of a study
    "page:logout": anyone,
    "page:home": signed_in,
    "page:study-create": site_admin,
    "page:study-manage": site_admin,
    "page:manage-upload": site_admin,
    "page:manage-members": site_admin,
    "page:manage-member-status": site_admin,
    "page:manage-status": site_admin,
    "page:manage-settings": site_admin,
    "page:manage-invitations": site_admin,
    "page:manage-invitation-revoke": site_admin,
    "page:invitation": anyone,  # the link is the key; here the token is no invitation
    "page:manage-crowd": site_admin,
    "page:manage-crowd-revoke": site_admin,
    "page:manage-crowd-payments": site_admin,
    "page:manage-phases": site_admin,
    "page:manage-phase-answers": site_admin,
    "page:crowd-entry": anyone,  # the link and the participant id are the key; here the token is no link
    "page:crowd-return": study_rater,
    "page:items-page": site_admin,
    "page:item-preview": site_admin,
    "page:item-delete": site_admin,
    "page:item-replace": site_admin,
    "page:progress-page": study_reader,
    "page:participant-data": site_admin,
    "page:participant-erase": site_admin,
    "page:audit-log": site_admin,
    "page:workspace": study_rater,
    "page:workspace-guidelines": study_rater,
    "page:workspace-history": study_rater,
    "page:workspace-assignment": study_rater,
    "page:workspace-draft": study_rater,
    "page:workspace-submit": study_rater,
    "page:training-feedback": study_rater,
    "page:training-retry": study_rater,
    "page:phase-consent": study_rater,
    "page:phase-questionnaire": study_rater,
    "page:phase-instructions": study_rater,
    "page:report": study_reader,
    "page:report-paper": study_reader,
    "page:report-paper-file": study_reader,
    "page:plan": study_reader,
    "page:datasets": study_reader,
    "page:dataset-export": study_reader,
    "page:release-create": study_reader,
    "page:release-download": study_reader,
    "page:judges:list": site_admin,
    "page:judges:load": site_admin,
    "page:judges:study": study_reader,
    "page:judges:run-start": site_admin,
    "page:judges:run-estimate": site_admin,
    "page:judges:run-cap": site_admin,
    "page:judges:gold": study_reader,
    "page:judges:doubt": study_reader,
    "page:judges:run-progress": study_reader,
    "page:judges:run-cancel": site_admin,
    "page:judges:run-resume": site_admin,
    "page:judges:run-file": study_reader,
    "page:judges:jury": site_admin,
    "page:judges:routing": site_admin,
    "django-admin/": site_admin,
    "django-admin:login": anyone,
    "django-admin:logout": anyone,
    "api:api-root": signed_in,
    "api:schema": signed_in,
    "api:api-docs": signed_in,
    "api:rubric-list": signed_in,  # filtered: see test_lists_show_only_what_the_user_may_see
    "api:rubric-detail": study_member,
    "api:study-list": signed_in,  # filtered
    "api:study-detail": study_reader,
    "api:study-items": site_admin,
    "api:study-members": site_admin,
    "api:study-progress": study_reader,
    "api:study-status": site_admin,
    "api:api-participant-data": site_admin,
    "api:api-participant-data-csv": site_admin,
    "api:api-participant-erase": site_admin,
    "api:api-audit-log": site_admin,
    "api:api-workspace-next": study_rater,
    "api:api-phase-consent": study_rater,
    "api:api-phase-questionnaire": study_rater,
    "api:api-phase-instructions": study_rater,
    "api:api-training-retry": study_rater,
    "api:api-workspace-assignment": study_rater,
    "api:api-workspace-draft": study_rater,
    "api:api-workspace-submit": study_rater,
    "api:judge-config-list": site_admin,
    "api:judge-config-detail": site_admin,
    "api:judge-run-list": signed_in,  # filtered
    "api:judge-run-detail": study_reader,
    "api:judge-run-cancel": site_admin,
    "api:judge-run-resume": site_admin,
    "api:judge-run-scores": study_reader,
    "api:judge-run-cap": site_admin,
    "api:api-judge-scores": study_reader,
    "api:api-study-export": study_reader,
    "api:api-study-report": study_reader,
    "api:api-study-comparisons": study_reader,
    "api:api-study-releases": study_reader,
    "api:api-release-file": study_reader,
    "api:api-rubric-file": site_admin,
}

# What an allowed GET returns when it is not 200: POST-only views answer 405.
GET_OK = {
    "page:logout": {405},
    "page:docs": {200, 404},  # a file of the built documentation site: 404 for a name it lacks, or before `make docs`
    "django-admin:logout": {302, 405},  # non-staff are first sent to the admin's login
    "django-admin:login": {200, 302},  # staff already signed in are sent to the admin's index
    # Django's admin: staff without a model permission get 403; object 1 may not exist (302 to the index).
    "django-admin/": {200, 302, 403, 404},
    "page:workspace-draft": {405},
    "page:workspace-submit": {405},
    "page:training-retry": {405},
    "page:phase-consent": {405},
    "page:manage-phases": {405},
    "page:phase-questionnaire": {405},
    "page:phase-instructions": {405},
    "page:training-feedback": {200, 302},  # the member's assignment is no training item: back to the workspace
    "page:release-create": {405},
    "page:judges:load": {405},
    "page:judges:run-start": {405},
    "page:judges:run-cancel": {405},
    "page:judges:run-resume": {405},
    "page:manage-upload": {405},
    "page:manage-members": {405},
    "page:manage-member-status": {405},
    "page:manage-status": {405},
    "page:manage-settings": {405},
    "page:manage-invitations": {405},
    "page:manage-invitation-revoke": {405},
    "page:invitation": {404},
    "page:manage-crowd": {405},
    "page:manage-crowd-revoke": {405},
    "page:crowd-entry": {404},
    "page:crowd-return": {405},
    "page:item-delete": {405},
    "page:item-preview": {200, 404},  # item 1 belongs to the member study, not always to this one
    "page:item-replace": {200, 404},
    "page:judges:jury": {405},
    "page:judges:routing": {405},
    "page:judges:run-file": {404},  # the run has written no files yet; found-but-missing, for readers only
    "api:api-workspace-next": {405},
    "api:api-phase-consent": {405},
    "api:api-phase-questionnaire": {405},
    "api:api-phase-instructions": {405},
    "api:api-training-retry": {405},
    "api:api-workspace-draft": {405},
    "api:api-workspace-submit": {405},
    "api:study-items": {405},
    "api:study-members": {405},
    "api:study-status": {405},
    "api:api-participant-erase": {405},
    "api:judge-run-cancel": {405},
    "api:judge-run-resume": {405},
    "api:judge-run-cap": {405},
    "page:judges:run-cap": {405},
    "api:api-rubric-file": {405},
    "page:judges:run-estimate": {404},  # no ?judge= given: found-but-missing, for admins only
    "api:api-study-export": {400},  # no ?file= given: the reader is told which files exist
}


# ---------------------------------------------------------------- the URL patterns


@dataclass(frozen=True)
class Route:
    key: str  # the RULES key
    pattern: str  # the full pattern, as the resolver holds it
    params: tuple[str, ...]


def walk(patterns, prefix: str = "", namespace: str = ""):
    for p in patterns:
        if isinstance(p, URLResolver):
            ns = ":".join(filter(None, [namespace, p.namespace]))
            yield from walk(p.url_patterns, prefix + str(p.pattern), ns)
        elif isinstance(p, URLPattern):
            full = prefix + str(p.pattern)
            params = tuple(getattr(p.pattern, "converters", {}) or p.pattern.regex.groupindex)
            if full.startswith("django-admin/"):
                key = f"django-admin:{p.name}" if p.name in ("login", "logout") else "django-admin/"
            else:
                name = ":".join(filter(None, [namespace, p.name])) if p.name else full
                key = ("api:" if full.startswith("api/") else "page:") + name
            yield Route(key, full, params)


def all_routes() -> list[Route]:
    return list(walk(get_resolver().url_patterns))


def build_path(pattern: str, values: dict[str, str]) -> str:
    """A concrete path from a route ("<slug:slug>") or regex ("(?P<pk>[^/.]+)") pattern."""
    path = pattern.replace("<drf_format_suffix:format>", ".json")  # the converter's match includes the dot
    path = re.sub(r"\(\?P<(\w+)>[^)]*\)", lambda m: values[m.group(1)], path)
    path = re.sub(r"<(?:\w+:)?(\w+)>", lambda m: values[m.group(1)], path)
    path = path.replace("^", "").replace("$", "").replace("\\.", ".").replace("/?", "/")
    return "/" + path


STUDY_SCOPED = {"slug", "token"}


def variants(route: Route, world: dict) -> dict[str, str]:
    """variant -> concrete path; 'member'/'foreign' for study-scoped URLs, else 'global'."""
    scoped = bool(STUDY_SCOPED & set(route.params)) or (
        "pk" in route.params and any(k in route.key for k in ("run", "release", "rubric")))
    out = {}
    for variant in (("member", "foreign") if scoped else ("global",)):
        side = world["member" if variant != "foreign" else "foreign"]
        pk = (side["run"] if "run" in route.key else side["release"] if "release" in route.key
              else side["rubric"] if "rubric" in route.key else "1")
        name = ("matrix-judge" if "judge-config" in route.key else "methods.md" if "paper" in route.key
                else "report.json")
        values = {"slug": side["slug"], "token": side["token"], "pk": str(pk), "fmt": "csv", "name": name,
                  "user_id": str(side["rater_id"]),
                  "format": "json", "app_label": "annotation", "object_id": "1", "content_type_id": "1", "id": "1",
                  "url": "nope/", "which": "pre", "lang": "de"}
        out[variant] = build_path(route.pattern, values)
    return out


# ---------------------------------------------------------------- a small world


@pytest.fixture
def world(make_study, admin_user, annotator, researcher, outsider, settings, tmp_path):
    from annotation.services.assignments import assignment_next

    other_rater = make_user("foreign-rater")
    member = make_study("rrgen-001", annotators=[annotator], researchers=[researcher])
    foreign = make_study("codegen-002", annotators=[other_rater])
    sides = {}
    for name, study, rater in (("member", member, annotator), ("foreign", foreign, other_rater)):
        assignment = assignment_next(study=study, rater=rater)
        sides[name] = {"study": study, "slug": study.slug, "token": str(assignment.token), "rater_id": rater.pk,
                       "rubric": study.rubric_version_id, "run": _judge_run(study).pk,
                       "release": _release(study, admin_user, settings, tmp_path)}
    from judges.models import JudgeConfig

    JudgeConfig.objects.create(name="matrix-judge", model="fake")
    return {**sides, "users": {"annotator": annotator, "researcher": researcher, "admin": admin_user,
                               "outsider": outsider}}


def _judge_run(study):
    from judges.models import JudgeRun

    return JudgeRun.objects.create(study=study, config={}, criteria=[], status="done")


def _release(study, user, settings, tmp_path) -> int:
    """A ready dataset release with its file, so that readers can download it."""
    import hashlib

    from annotation.models import DatasetRelease

    settings.MEDIA_ROOT = str(tmp_path)
    content = b"item,rater,score\n"
    name = f"{study.slug}-1.0.0.csv"
    (tmp_path / "releases").mkdir(exist_ok=True)
    (tmp_path / "releases" / name).write_bytes(content)
    return DatasetRelease.objects.create(study=study, version="1.0.0", format="csv", created_by=user, status="ready",
                                         file_path=name, sha256=hashlib.sha256(content).hexdigest(),
                                         size=len(content)).pk


def client_as(role: str, world: dict) -> Client:
    client = Client(raise_request_exception=False)
    if role != "anonymous":
        client.force_login(world["users"][role])
    return client


# ---------------------------------------------------------------- the checks


def judge(route: Route, role: str, variant: str, method: str, response) -> str | None:
    """None when the response is right for (route, role, variant), else what is wrong."""
    status = response.status_code
    allowed = RULES[route.key](role, variant)
    location = response.get("Location", "")
    if status >= 500:
        return f"server error {status}"
    if variant == "foreign" and role != "admin" and 200 <= status < 300:
        return f"{role} got {status} on a study it is not a member of"  # whatever RULES says
    if role == "anonymous" and not allowed:
        to_login = status == 302 and (location.startswith("/login/") or location.startswith("/django-admin/login/"))
        return None if to_login or status in (401, 403) else f"anonymous got {status} {location}"
    if not allowed:
        if 200 <= status < 300:
            return f"{role} got {status} on a {variant} URL it may not reach"
        if status in (301, 302, 303, 307, 308):
            staff_login = route.key.startswith("django-admin") and location.startswith("/django-admin/")
            return None if staff_login else f"{role} redirected to {location} instead of being refused"
        return None if status in (403, 404, 405) else f"{role} got {status}"
    if method == "GET":
        expected = GET_OK.get(route.key, {200})
        return None if status in expected else f"{role} may reach it but got {status} (expected {sorted(expected)})"
    return None  # an allowed POST with an empty body: anything but a server error


def test_every_url_has_a_rule():
    missing = sorted({r.key for r in all_routes()} - set(RULES))
    assert not missing, f"URLs without a rule in RULES: {missing}"
    stale = sorted(set(RULES) - {r.key for r in all_routes()})
    assert not stale, f"rules for URLs that no longer exist: {stale}"


@pytest.mark.parametrize("method", ["GET", "POST"])
def test_permission_matrix(world, method):
    problems = []
    clients = {role: client_as(role, world) for role in ROLES}
    for route in all_routes():
        if route.key not in RULES:
            continue  # reported by test_every_url_has_a_rule
        if method == "POST" and route.key == "django-admin/" :
            continue  # Django's own admin: its GET pages are checked; POSTs there are its own tested code
        for variant, path in variants(route, world).items():
            for role in ROLES:
                client = clients[role] if route.key != "page:logout" else client_as(role, world)
                response = client.get(path) if method == "GET" else client.post(path, {})
                if (why := judge(route, role, variant, method, response)) is not None:
                    problems.append(f"{method} {path} [{route.key}] as {role}: {why}")
    assert not problems, f"{len(problems)} problems:\n" + "\n".join(problems)


def test_lists_show_only_what_the_user_may_see(world):
    """The list endpoints any signed-in user may call hold only the user's own studies' objects."""
    member, foreign = world["member"]["study"], world["foreign"]["study"]

    def slugs(role, url, field):
        data = client_as(role, world).get(url).json()
        return {row[field] for row in data["results"]}

    assert slugs("admin", "/api/studies/", "slug") >= {member.slug, foreign.slug}
    assert slugs("researcher", "/api/studies/", "slug") == {member.slug}
    assert slugs("annotator", "/api/studies/", "slug") == set()  # annotators use the workspace API only
    assert slugs("outsider", "/api/studies/", "slug") == set()
    assert slugs("annotator", "/api/rubrics/", "id") == {member.rubric_version_id}
    assert slugs("outsider", "/api/rubrics/", "id") == set()
    runs = {role: slugs(role, "/api/judges/runs/", "id") for role in ("admin", "researcher", "outsider")}
    assert runs["admin"] >= {world["member"]["run"], world["foreign"]["run"]}
    assert runs["researcher"] == {world["member"]["run"]}
    assert runs["outsider"] == set()
