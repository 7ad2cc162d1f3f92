"""A judge's secrets never leave the workers. A judge stored before literal credentials were refused
holds them everywhere one can hide (an Authorization header, a custom token header, a key in
extra_body, a password and a key in its endpoint, a second judge inside the run's snapshot, the key
variable's value echoed back in the run's error). Every GET route of the URL confs (with each
download's query strings, each run file, each export format), the run's POST actions, the Django
admin's judge pages and the judge_request command are requested as every kind of account, and no
response holds any of the secrets, decompressed where it is a zip or a Parquet file. Admins too:
masked for everyone. New judges are refused a literal credential and hold it by reference."""

from __future__ import annotations

import gzip
import io
import secrets
import zipfile

import pytest
import yaml
from django.core.management import call_command
from django.test import Client

from annotation.datasets import FORMATS
from config.routes import ROUTES, url_patterns
from judges.models import JudgeConfig, JudgeRun
from judges.services.files import RUN_FILES
from judges.services.runs import judge_config_snapshot
from tests.security.test_permission_matrix import build_path

SECRET = {name: f"{name}-{secrets.token_hex(12)}" for name in (
    "auth", "custom", "body", "urlpass", "urlkey", "env", "member", "access", "client", "apitoken", "sig", "code",
    "tenant")}
ENV = "CONCORD_TEST_JUDGE_API_KEY"
PERSONAS = ("anonymous", "crowd", "annotator", "researcher", "owner", "admin")
AQUA = ("aq-001", "aq-002", "aq-003", "aq-004", "aq-005", "aq-006")


def _old_judge(name: str, auth: str, **more) -> JudgeConfig:
    """Written as a judge stored before literal credentials were refused (no validation)."""
    return JudgeConfig.objects.create(
        name=name, model="fake-judge", method="label", api_key_env=ENV,
        endpoint=f"https://gateway-user:{SECRET['urlpass']}@127.0.0.1:9/v1?key={SECRET['urlkey']}"
                 f"&sig={SECRET['sig']}&CODE={SECRET['code']}&region=eu&api-version=2024-06-01",
        backend_options={"timeout_s": 10, "headers": {"Authorization": f"Bearer {auth}",
                                                      "X-Gateway-Token": SECRET["custom"],
                                                      "anthropic-version": "2023-06-01"},
                         # names no word list knows: shown masked because no schema marks them public
                         "extra_body": {"api_key": SECRET["body"], "top_k": 5, "accessToken": SECRET["access"],
                                        "clientSecret": SECRET["client"], "APITOKEN": SECRET["apitoken"],
                                        "tenant": SECRET["tenant"]}}, **more)


@pytest.fixture
def world(make_study, make_run, annotator, researcher, outsider, admin_user, monkeypatch):
    from annotation.services.assignments import assignment_next
    from annotation.services.crowd import crowd_enter, crowd_link_create

    monkeypatch.setenv(ENV, SECRET["env"])
    admin_user.is_superuser = True  # Django's admin shows the judge pages to those with model permissions
    admin_user.save(update_fields=["is_superuser"])
    study = make_study("aqua-003", annotators=[annotator], researchers=[researcher])
    study.created_by = outsider  # the owner: neither staff nor a member
    study.save(update_fields=["created_by"])
    link = crowd_link_create(study=study, user=admin_user, provider="prolific", completion_code="C0DE")
    crowd = crowd_enter(token=link.token, params={"PROLIFIC_PID": "secrets-pid", "SESSION_ID": "s"}).user
    token = str(assignment_next(study=study, rater=annotator).token)
    member = _old_judge("member-judge", SECRET["member"])
    judge = _old_judge("secret-judge", SECRET["auth"])
    run = make_run(study, judge, {(k, 0, "label"): "TP" for k in AQUA})
    run.config = {**run.config, "members": [judge_config_snapshot(member)]}  # a judge inside the snapshot
    run.error = f"PermanentBackendError: 401 invalid key {SECRET['env']} (Authorization: Bearer {SECRET['auth']})"
    run.save(update_fields=["config", "error"])
    users = {"anonymous": None, "crowd": crowd, "annotator": annotator, "researcher": researcher, "owner": outsider,
             "admin": admin_user}
    values = {"slug": study.slug, "user_id": str(crowd.pk), "format": "json", "id": "1", "url": "nope/",
              "which": "pre", "lang": "de", "run": str(run.pk), "rubric": str(study.rubric_version_id),
              "release": "1", "item": str(study.items.first().pk), "token": token, "fmt": "csv"}
    return study, run, users, values


def readable(response) -> bytes:
    """The response's bytes as a reader would see them: zip members and Parquet cells unpacked."""
    body = b"".join(response.streaming_content) if response.streaming else response.content
    if body[:2] == b"\x1f\x8b":
        body = gzip.decompress(body)
    if body[:4] == b"PK\x03\x04":
        with zipfile.ZipFile(io.BytesIO(body)) as z:
            return b"\n".join(readable_bytes(z.read(n)) for n in z.namelist())
    return readable_bytes(body)


def readable_bytes(body: bytes) -> bytes:
    if body[:4] == b"PAR1":
        import pyarrow.parquet as pq

        return repr(pq.read_table(io.BytesIO(body)).to_pylist()).encode()
    return body


def leaks(body: bytes) -> list[str]:
    return [name for name, value in SECRET.items() if value.encode() in body]


def requests_for(world) -> list[tuple[str, str]]:
    """(route key, path) of every GET the URL confs answer, with each download's variants."""
    study, run, _, values = world
    out = []
    for p in url_patterns():
        if p.key.startswith("django-admin"):
            continue  # Django's admin site: its judge pages are asked below
        pk = values["run"] if "run" in p.key else values["rubric"] if "rubric" in p.key else values["item"]
        names = (list(RUN_FILES) if p.key == "page:judges:run-file" else ["secret-judge"] if "judge-config" in p.key
                 else ["methods.md", "report.json"] if "paper" in p.key else ["x"])
        fmts = list(FORMATS) if p.key == "page:dataset-export" else [values["fmt"]]
        for name in names:
            for fmt in fmts:
                path = build_path(p.pattern, {**values, "pk": pk, "name": name, "fmt": fmt, "prefix": "nottoken"})
                out += [(p.key, f"{path}?{q}" if q else path) for q in ROUTES[p.key].queries]
    out += [("api:api-study-export", f"/api/studies/{study.slug}/export/?file={f}") for f in ("csv", "jsonl")]
    out += [("page:judges:run-estimate", f"/judges/studies/{study.slug}/estimate/?judge={run.judge_id}")]
    admin = "/django-admin/judges"
    out += [("django-admin/", p) for p in (f"{admin}/judgeconfig/", f"{admin}/judgeconfig/{run.judge_id}/change/",
                                           f"{admin}/judgerun/", f"{admin}/judgerun/{run.pk}/change/")]
    return out


def test_no_response_to_anyone_holds_a_judge_secret(world, caplog):
    study, run, users, _ = world
    requests = requests_for(world)
    problems, served, asked, answers = [], 0, 0, []
    for persona in PERSONAS:
        client = Client(raise_request_exception=False)
        if users[persona] is not None:
            client.force_login(users[persona])
        for key, path in requests:
            if key in ("page:logout", "page:crowd-return"):
                continue  # they end the session the next requests need
            response = client.get(path)
            asked += 1
            if persona == "admin":
                answers.append((key, path, response.status_code))
            served += response.status_code == 200
            if found := leaks(readable(response)):
                problems.append(f"GET {path} [{key}] as {persona}: {response.status_code} holds {found}")
        for path in (f"/api/judges/runs/{run.pk}/cancel/", f"/judges/runs/{run.pk}/cancel/"):
            response = client.post(path, HTTP_HX_REQUEST="true")
            asked += 1
            if found := leaks(readable(response)):
                problems.append(f"POST {path} as {persona}: {response.status_code} holds {found}")
    assert not problems, "\n".join(problems)
    assert served > 150  # the pages and downloads were really served, not refused
    assert {path for key, path, status in answers if key == "django-admin/" and status == 200} == {
        path for key, path in requests if key == "django-admin/"}  # the admin's judge pages, rendered
    assert not [r.getMessage() for r in caplog.records if leaks(r.getMessage().encode())]  # nor logged
    print(f"\n{asked} requests ({len(requests)} paths x {len(PERSONAS)} accounts, {served} answered 200): "
          f"no judge secret in any")


def test_what_readers_and_admins_see_is_the_mask(world, client_for, api_for):
    study, run, users, _ = world
    detail = api_for(users["admin"]).get(f"/api/judges/runs/{run.pk}/").json()
    headers = detail["config"]["backend_options"]["headers"]
    assert headers == {"Authorization": "Bearer aut...", "X-Gateway-Token": "cus...",
                       "anthropic-version": "2023-06-01"}  # public headers stay readable
    assert detail["config"]["backend_options"]["extra_body"] == {
        "api_key": "bod...", "top_k": 5, "accessToken": "acc...", "clientSecret": "cli...", "APITOKEN": "api...",
        "tenant": "ten..."}  # by allow-list: only the public sampling knob shows its value
    assert detail["config"]["endpoint"] == ("https://...@127.0.0.1:9/v1?key=...&sig=...&CODE=...&region=..."
                                            "&api-version=2024-06-01")  # user info and query but api-version
    assert detail["config"]["api_key_env"] == ENV  # the variable's name is no secret
    assert detail["config"]["members"][0]["backend_options"]["headers"]["Authorization"] == "Bearer mem..."
    assert detail["error"] == "PermanentBackendError: 401 invalid key env... (Authorization: Bearer aut...)"
    reader = api_for(users["researcher"]).get(f"/api/judges/runs/{run.pk}/").json()
    assert reader["config"] == detail["config"]
    stored = JudgeRun.objects.get(pk=run.pk).config  # masking is for showing: the run still sends its key
    assert stored["backend_options"]["headers"]["Authorization"] == f"Bearer {SECRET['auth']}"


def test_new_judges_hold_credentials_only_by_reference(world, api_for, monkeypatch):
    *_, users, _ = world
    api = api_for(users["admin"])
    judge = {"name": "new-judge", "backend": "openai", "model": "m", "endpoint": "http://127.0.0.1:9/v1",
             "backend_options": {"headers": {"X-Gateway-Token": SECRET["custom"], "User-Agent": "concord"},
                                 "extra_body": {"access_token": SECRET["body"], "accessToken": SECRET["access"],
                                                "clientSecret": SECRET["client"], "apiToken": SECRET["apitoken"]}}}
    refused = api.post("/api/judges/configs/", judge, format="json")
    assert refused.status_code == 400 and not leaks(refused.content)
    assert {e["field"] for e in refused.json()["errors"]} == {
        "backend_options.headers.X-Gateway-Token", "backend_options.extra_body.access_token",
        "backend_options.extra_body.accessToken", "backend_options.extra_body.clientSecret",
        "backend_options.extra_body.apiToken"}
    assert "headers_env" in refused.json()["errors"][0]["message"]
    # a credential in the URL (user info, a signature or code in the query) is refused alike
    for endpoint in (f"http://user:{SECRET['urlpass']}@127.0.0.1:9/v1", f"http://127.0.0.1:9/v1?sig={SECRET['sig']}",
                     f"http://127.0.0.1:9/v1?Code={SECRET['code']}"):
        refused = api.post("/api/judges/configs/", {**judge, "endpoint": endpoint, "backend_options": {}},
                           format="json")
        assert refused.status_code == 400 and not leaks(refused.content), endpoint
        assert [e["field"] for e in refused.json()["errors"]] == ["endpoint"], refused.json()
    assert not JudgeConfig.objects.filter(name="new-judge").exists()
    judge["backend_options"] = {"headers": {"User-Agent": "concord"},
                                "headers_env": {"X-Gateway-Token": "JUDGE_TEST_GATEWAY_TOKEN"}}
    saved = api.post("/api/judges/configs/", judge, format="json")
    assert saved.status_code == 201, saved.content
    assert saved.json()["backend_options"]["headers_env"] == {"X-Gateway-Token": "JUDGE_TEST_GATEWAY_TOKEN"}
    # the request the judge sends reads the variable when it is built
    from judges.providers import build_request, request_for_judge

    stored = JudgeConfig.objects.get(name="new-judge")
    config = judge_config_snapshot(stored)
    monkeypatch.setenv("JUDGE_TEST_GATEWAY_TOKEN", SECRET["custom"])
    sent = build_request(config, request_for_judge(config, [{"role": "user", "content": "hi"}]))
    assert sent.headers["X-Gateway-Token"] == SECRET["custom"] and sent.headers["User-Agent"] == "concord"


def test_judge_request_prints_credentials_masked(tmp_path, monkeypatch, capsys, db):
    from django.core.management.base import CommandError

    monkeypatch.setenv(ENV, SECRET["env"])
    monkeypatch.setenv("JUDGE_TEST_GATEWAY_TOKEN", SECRET["custom"])
    path = tmp_path / "judge.yaml"
    judge = {"name": "printed", "provider": "openai", "model": "gpt-4o-mini", "api_key_env": ENV,
             "endpoint": f"https://user:{SECRET['urlpass']}@api.example.org/v1?key={SECRET['urlkey']}",
             "backend_options": {"headers_env": {"X-Gateway-Token": "JUDGE_TEST_GATEWAY_TOKEN"},
                                 "extra_body": {"tenant": SECRET["tenant"], "top_k": 5}}}
    path.write_text(yaml.safe_dump(judge))
    with pytest.raises(CommandError) as refused:  # credentials in the URL: refused, not printed
        call_command("judge_request", str(path), "--rubric", "aqua-003")
    assert "user info" in str(refused.value) and not leaks(str(refused.value).encode())
    path.write_text(yaml.safe_dump({**judge, "endpoint": "https://api.example.org/v1?api-version=1"}))
    for args in ([], ["--json"]):
        call_command("judge_request", str(path), "--rubric", "aqua-003", *args)
        out = capsys.readouterr().out
        assert not leaks(out.encode()), out
        assert "Bearer env..." in out and "cus..." in out and "api.example.org" in out
        assert '"tenant": "ten..."' in out and '"top_k": 5' in out  # a body extra by allow-list


def test_a_header_held_by_reference_is_sent(monkeypatch, db):
    """The worker's client reads headers_env when it sends, as the key's variable; an unset variable
    fails the call without sending anything."""
    import asyncio

    from judges.backends.base import JudgeRequest
    from judges.backends.errors import PermanentBackendError
    from judges.config import validate_judge
    from judges.fakeserver import running_fake_server
    from judges.services.engine import build_backend

    request = JudgeRequest(messages=({"role": "user", "content": "hi"},), max_tokens=8)
    with running_fake_server() as server:
        config = validate_judge({"name": "by-reference", "backend": "openai", "model": "fake-judge",
                                 "endpoint": server.base_url, "backend_options": {
                                     "max_retries": 0, "headers_env": {"Authorization": "JUDGE_TEST_GATEWAY_AUTH"}}})
        monkeypatch.setenv("JUDGE_TEST_GATEWAY_AUTH", f"Bearer {SECRET['auth']}")
        (answer,) = asyncio.run(build_backend(config).score_many([request]))
        assert not isinstance(answer, Exception) and server.stats().authorization == f"Bearer {SECRET['auth']}"
        monkeypatch.delenv("JUDGE_TEST_GATEWAY_AUTH")
        sent = server.stats().completion_requests
        (unset,) = asyncio.run(build_backend(config).score_many([request]))
        assert isinstance(unset, PermanentBackendError) and "JUDGE_TEST_GATEWAY_AUTH" in str(unset)
        assert server.stats().completion_requests == sent


def test_the_schema_knows_every_field_a_judge_has():
    """A field added to the model is masked until the schema lists it (fail here, not silently '...')."""
    from judges.config import FIELDS
    from judges.masking import NESTED_JUDGES, PUBLIC_FIELDS

    shown_specially = {"id", "endpoint", "backend_options"}
    model = {f.name for f in JudgeConfig._meta.concrete_fields}
    assert model - PUBLIC_FIELDS - shown_specially == set()
    assert set(FIELDS) - PUBLIC_FIELDS == {"endpoint", "backend_options"}
    assert not NESTED_JUDGES & PUBLIC_FIELDS
