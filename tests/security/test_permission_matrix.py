"""The generated permission matrix: every URL pattern x every persona, by GET and by POST.

The routes come from the URL confs (config.routes.url_patterns); each route's rule comes from the
route inventory (config.routes.ROUTES), and the expected answer of each cell is that rule applied to
the persona's account and the study the URL names: `rule.allows(user, study)`, i.e. the access model
(annotation.access). Nothing here says per route who may reach it. Every URL names study A (its slug,
an assignment, a run, a release or a rubric of it); the personas stand in every relation to it:

- signed out; a deactivated account (a researcher of A whose account was then deactivated);
- a crowd participant of A (entered through a crowd link);
- annotators of A: active, paused, removed; an annotator of study B only;
- researchers of A: active, removed, removed then added again; a researcher of study B only;
- A's owner (its creator, not staff); a site admin.

A cell is right when:
- nobody ever gets a 5xx;
- refused: signed out (and deactivated, whose session is no user) are sent to a login page or get
  401/403; everyone else gets 403, 404 or 405, never a 2xx or a redirect elsewhere;
- allowed: a GET gets what the route answers (GET_OK: 200 unless said), a POST with an empty body
  anything but a 5xx.
The access model itself is checked against a hand-written table in test_access_model.py.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import pytest
from django.contrib.auth.models import AnonymousUser
from django.test import Client

from config.routes import ROUTES, Pattern, url_patterns
from tests.conftest import make_user

pytestmark = pytest.mark.django_db

PERSONAS = ("anonymous", "deactivated", "crowd", "annotator", "annotator-paused", "annotator-removed",
            "annotator-other", "researcher", "researcher-removed", "researcher-readded", "researcher-other",
            "owner", "admin")
NO_SESSION = {"anonymous", "deactivated"}  # a deactivated account's session is no user (Django's backend)
RATERS = {"crowd", "annotator", "annotator-paused", "annotator-removed"}  # each with an assignment of their own in A

# What an allowed GET answers when it is not 200: POST-only views answer 405.
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
    "page:training-feedback": {200, 302},  # the rater's assignment is no training item: back to the workspace
    "page:release-create": {405},
    "api:api-study-otlp-traces": {405},  # OTLP/HTTP: POST only
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
    "page:invitation": {404},  # the token is no invitation
    "page:manage-crowd": {405},
    "page:manage-crowd-revoke": {405},
    "page:crowd-entry": {404},  # the token is no link
    "page:crowd-return": {405},
    "page:item-delete": {405},
    "page:judges:jury": {405},
    "page:judges:routing": {405},
    "page:judges:run-file": {404},  # the run has written no files yet: found-but-missing, for readers only
    "api:api-workspace-next": {405},
    "api:api-phase-consent": {405},
    "api:api-phase-questionnaire": {405},
    "api:api-phase-instructions": {405},
    "api:api-training-retry": {405},
    "api:api-token-revoke": {405},  # DELETE only
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
    "page:judges:run-estimate": {200},  # no ?judge= (every judge disabled on the form): an empty estimate
    "api:api-study-export": {400},  # no ?file= given: the reader is told which files exist
}
# A paused rater reaches the study, but pausing gave their open assignment back (the pool's now).
PAUSED_GET_OK = {"page:workspace-assignment": {200, 302, 404}, "api:api-workspace-assignment": {200, 404},
                 "page:training-feedback": {200, 302, 404}}
# Django's admin site (129 patterns, one rule: site admins) is its own code, and no study's relation
# changes its answer: it is asked by one persona of each kind of account, not all thirteen.
ADMIN_SITE_PERSONAS = ("anonymous", "deactivated", "crowd", "researcher", "owner", "admin")


# ---------------------------------------------------------------- the world: two studies, thirteen personas


@dataclass
class World:
    study: object  # study A
    users: dict  # persona -> user (AnonymousUser for "anonymous")
    tokens: dict  # persona -> the token of an assignment of theirs in A (others: the annotator's)
    values: dict  # the other URL parameters


@pytest.fixture
def world(make_study, admin_user, settings, tmp_path) -> World:
    from annotation.services.assignments import assignment_next
    from annotation.services.crowd import crowd_enter, crowd_link_create
    from annotation.services.members import MemberRow, member_pause, member_remove, members_add

    u = {name: make_user(f"m-{name}") for name in PERSONAS if name not in ("anonymous", "admin", "crowd")}
    u["admin"] = admin_user
    study = make_study("rrgen-001", annotators=[u["annotator"], u["annotator-paused"], u["annotator-removed"]],
                       researchers=[u["researcher"], u["researcher-removed"], u["researcher-readded"],
                                    u["deactivated"]])
    other = make_study("codegen-002", annotators=[u["annotator-other"]], researchers=[u["researcher-other"]])
    study.created_by = u["owner"]
    study.save(update_fields=["created_by"])
    link = crowd_link_create(study=study, user=admin_user, provider="prolific", completion_code="C0DE")
    u["crowd"] = crowd_enter(token=link.token, params={"PROLIFIC_PID": "matrix-pid", "SESSION_ID": "s"}).user
    tokens = {name: str(assignment_next(study=study, rater=u[name]).token) for name in RATERS}
    assignment_next(study=other, rater=u["annotator-other"])
    member_pause(study=study, user_id=u["annotator-paused"].pk)
    for name in ("annotator-removed", "researcher-removed", "researcher-readded"):
        member_remove(study=study, user_id=u[name].pk)
    members_add(study=study, rows=[MemberRow(None, u["researcher-readded"].username)], role="researcher")
    u["deactivated"].is_active = False  # after force_login below: its session stays, the account does not
    values = {"slug": study.slug, "pk": "", "fmt": "csv", "user_id": str(u["annotator"].pk), "format": "json",
              "app_label": "annotation", "object_id": "1", "content_type_id": "1", "id": "1", "url": "nope/",
              "which": "pre", "lang": "de", "run": str(_judge_run(study).pk), "rubric": str(study.rubric_version_id),
              "release": str(_release(study, admin_user, settings, tmp_path)), "item": str(study.items.first().pk),
              "prefix": "nottoken"}
    _judge_run(other)
    from judges.models import JudgeConfig

    JudgeConfig.objects.create(name="matrix-judge", model="fake")
    u["anonymous"] = AnonymousUser()
    return World(study, u, tokens, values)


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


def build_path(pattern: str, values: dict[str, str]) -> str:
    """A concrete path from a route ("<slug:slug>") or regex ("(?P<pk>[^/.]+)") pattern."""
    path = pattern.replace("<drf_format_suffix:format>", ".json")  # the converter's match includes the dot
    path = re.sub(r"\(\?P<(\w+)>[^)]*\)", lambda m: values[m.group(1)], path)
    path = re.sub(r"<(?:\w+:)?(\w+)>", lambda m: values[m.group(1)], path)
    path = path.replace("^", "").replace("$", "").replace("\\.", ".").replace("/?", "/")
    return "/" + path


def path_for(p: Pattern, world: World, persona: str) -> str:
    key = p.key
    pk = (world.values["run"] if "run" in key else world.values["release"] if "release" in key
          else world.values["rubric"] if "rubric" in key else world.values["item"])
    name = "matrix-judge" if "judge-config" in key else "methods.md" if "paper" in key else "report.json"
    token = world.tokens.get(persona, world.tokens["annotator"])
    return build_path(p.pattern, {**world.values, "pk": pk, "name": name, "token": token})


def client_as(persona: str, world: World) -> Client:
    client = Client(raise_request_exception=False)
    if persona != "anonymous":
        client.force_login(world.users[persona])
    return client


# ---------------------------------------------------------------- the checks


def judge(key: str, persona: str, allowed: bool, method: str, response) -> str | None:
    """None when the response is right for the cell, else what is wrong."""
    status, location = response.status_code, response.get("Location", "")
    if status >= 500:
        return f"server error {status}"
    if not allowed and persona in NO_SESSION:
        to_login = status == 302 and location.startswith(("/login/", "/django-admin/login/"))
        return None if to_login or status in (401, 403) else f"got {status} {location}"
    if not allowed:
        if 200 <= status < 300:
            return f"got {status} where the rule refuses"
        if status in (301, 302, 303, 307, 308):
            staff_login = key.startswith("django-admin") and location.startswith("/django-admin/")
            return None if staff_login else f"redirected to {location} instead of being refused"
        return None if status in (403, 404, 405) else f"got {status}"
    if method == "GET":
        expected = (PAUSED_GET_OK.get(key) if persona == "annotator-paused" else None) or GET_OK.get(key, {200})
        return None if status in expected else f"allowed, got {status} (expected {sorted(expected)})"
    return None  # an allowed POST with an empty body: anything but a server error


def run_matrix(world: World, method: str) -> tuple[int, list[str]]:
    from django.contrib.auth import get_user_model

    clients = {persona: client_as(persona, world) for persona in PERSONAS}
    get_user_model().objects.filter(pk=world.users["deactivated"].pk).update(is_active=False)
    cells, problems = 0, []
    for p in url_patterns():
        if method == "POST" and p.key == "django-admin/":
            continue  # Django's own admin: its GET pages are checked; POSTs there are its own tested code
        rule = ROUTES[p.key].rule
        for persona in ADMIN_SITE_PERSONAS if p.key == "django-admin/" else PERSONAS:
            allowed = rule.allows(world.users[persona], world.study)
            client = clients[persona] if p.key != "page:logout" else client_as(persona, world)
            path = path_for(p, world, persona)
            response = client.get(path) if method == "GET" else client.post(path, {})
            if persona not in NO_SESSION and "_auth_user_id" not in client.session:
                client.force_login(world.users[persona])  # a POST ended the session (a crowd participant's return)
            cells += 1
            if (why := judge(p.key, persona, allowed, method, response)) is not None:
                problems.append(f"{method} {path} [{p.key}, {rule.name}] as {persona}: {why}")
    return cells, problems


@pytest.mark.parametrize("method", ["GET", "POST"])
def test_permission_matrix(world, method, capsys):
    cells, problems = run_matrix(world, method)
    with capsys.disabled():
        print(f"\npermission matrix {method}: {len(url_patterns())} URL patterns x {len(PERSONAS)} personas "
              f"({len(ADMIN_SITE_PERSONAS)} on Django's admin site), {cells} cells, {len(problems)} unexpected")
    assert not problems, f"{len(problems)} of {cells} cells wrong:\n" + "\n".join(problems)


def test_lists_show_only_what_the_user_may_see(world):
    """The list endpoints any signed-in user may call hold only what the access model lets them see."""
    a = world.study

    def ids(persona, url, field):
        data = client_as(persona, world).get(url).json()
        return {row[field] for row in data["results"]}

    assert a.slug in ids("admin", "/api/studies/", "slug")
    for persona in ("researcher", "researcher-readded", "owner"):
        assert ids(persona, "/api/studies/", "slug") == {a.slug}, persona
    for persona in ("researcher-removed", "researcher-other", "annotator", "crowd"):
        assert a.slug not in ids(persona, "/api/studies/", "slug"), persona
    assert ids("annotator", "/api/rubrics/", "id") == {a.rubric_version_id}
    assert ids("annotator-removed", "/api/rubrics/", "id") == set()
    assert ids("researcher-removed", "/api/rubrics/", "id") == set()
    run_a = int(world.values["run"])
    assert run_a in ids("admin", "/api/judges/runs/", "id")
    assert ids("researcher", "/api/judges/runs/", "id") == {run_a}
    assert ids("owner", "/api/judges/runs/", "id") == {run_a}
    for persona in ("researcher-removed", "annotator", "crowd"):
        assert ids(persona, "/api/judges/runs/", "id") == set(), persona
    assert run_a not in ids("researcher-other", "/api/judges/runs/", "id")
