"""What a judge may reach and send (judges/egress.py), asked as an admin would set it up and as the
worker then sends: key variables only by the rule (never SECRET_KEY, DATABASE_URL, REDIS_URL), endpoints
never link-local, cloud metadata or Concord's own database/Redis/web ports, loopback and private ones only
in development or where a setting lists them, checked again when the connection opens (DNS rebinding),
and a run's errors echo no answer of a service that is not a model server."""

from __future__ import annotations

import asyncio
import json
import threading
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, HTTPServer
from urllib.parse import urlsplit

import httpx
import pytest
from django.conf import settings
from django.test import override_settings

from judges import egress
from judges.backends.base import JudgeRequest
from judges.backends.errors import PermanentBackendError
from judges.config import JudgeConfigError, validate_judge
from judges.fakeserver import running_fake_server
from judges.services.engine import build_backend

REQUEST = JudgeRequest(messages=({"role": "user", "content": "hi"},), max_tokens=8)
PRODUCTION = override_settings(JUDGE_LOCAL_ENDPOINTS=False, JUDGE_PRIVATE_ENDPOINTS=[])


def judge(**changes) -> dict:
    return {"name": "egress", "backend": "openai", "model": "fake-judge", "endpoint": "http://127.0.0.1:9/v1",
            **changes}


def refused_fields(data: dict) -> dict[str, str]:
    with pytest.raises(JudgeConfigError) as exc:
        validate_judge(data)
    return dict(exc.value.errors)


def send(config: dict) -> object:
    """One request through the worker's client, unvalidated (as a judge stored before the rules)."""
    (answer,) = asyncio.run(build_backend(config).score_many([REQUEST]))
    return answer


# ------------------------------------------------------------------------------------ key variables

@pytest.mark.parametrize("name", ["SECRET_KEY", "DATABASE_URL", "REDIS_URL", "DJANGO_SECRET_KEY",
                                  "AWS_SECRET_ACCESS_KEY", "HOME", "MY_TOKEN"])
def test_a_key_variable_outside_the_rule_is_refused_at_load(name):
    problems = refused_fields(judge(api_key_env=name, backend_options={"headers_env": {"X-Gateway-Key": name}}))
    assert set(problems) == {"api_key_env", "backend_options.headers_env.X-Gateway-Key"}
    assert name in problems["api_key_env"] and "_API_KEY" in problems["api_key_env"]


def test_key_variables_by_rule_or_listed_but_never_concords_own():
    for name in ("OPENAI_API_KEY", "MY_GATEWAY_API_KEY", "JUDGE_GATEWAY_TOKEN"):
        assert validate_judge(judge(api_key_env=name))["api_key_env"] == name
    with override_settings(JUDGE_KEY_VARIABLES=["LAB_TOKEN", "SECRET_KEY", "REDIS_URL"]):
        assert validate_judge(judge(api_key_env="LAB_TOKEN"))["api_key_env"] == "LAB_TOKEN"
        for own in ("SECRET_KEY", "REDIS_URL"):  # listed or not
            assert "Concord's own" in refused_fields(judge(api_key_env=own))["api_key_env"]


def test_the_api_refuses_secret_key_as_a_key(db, admin_user, api_for):
    answer = api_for(admin_user).post("/api/judges/configs/", judge(api_key_env="SECRET_KEY"), format="json")
    assert answer.status_code == 400
    assert [e["field"] for e in answer.json()["errors"]] == ["api_key_env"]
    assert settings.SECRET_KEY not in answer.content.decode()


def test_the_django_admin_form_refuses_secret_key_as_a_key():
    from django.core.exceptions import ValidationError

    from judges.admin import JudgeConfigForm

    form = JudgeConfigForm()
    for name, ok in (("SECRET_KEY", False), ("DATABASE_URL", False), ("OPENAI_API_KEY", True)):
        form.cleaned_data = {"api_key_env": name}
        if ok:
            assert form.clean_api_key_env() == name
        else:
            with pytest.raises(ValidationError, match="Concord's own"):
                form.clean_api_key_env()


@pytest.mark.parametrize("where", ["api_key_env", "headers_env"])
def test_the_worker_sends_no_concord_variable_of_a_judge_stored_before_the_rule(where, monkeypatch):
    monkeypatch.setenv("SECRET_KEY", "the-django-secret-key-0123456789")
    with running_fake_server() as server:
        config = validate_judge(judge(endpoint=server.base_url, backend_options={"max_retries": 0}))
        if where == "api_key_env":
            config["api_key_env"] = "SECRET_KEY"
        else:
            config["backend_options"] = {**config["backend_options"], "headers_env": {"Authorization": "SECRET_KEY"}}
        answer = send(config)
        assert isinstance(answer, PermanentBackendError) and "SECRET_KEY" in str(answer)
        assert "the-django-secret" not in str(answer)
        assert server.stats().requests == 0  # refused before anything was sent


# ---------------------------------------------------------------------------------------- endpoints

def own_ports() -> list[int]:
    db = int(settings.DATABASES["default"].get("PORT") or 5432)
    return [db, urlsplit(settings.REDIS_URL).port or 6379]


@pytest.mark.parametrize("endpoint", [
    "http://169.254.169.254/latest/meta-data/", "http://169.254.170.2/v2/credentials", "http://[fd00:ec2::254]/v1",
    "http://metadata.google.internal/computeMetadata/v1", "http://METADATA.google.internal./v1",
    "http://2852039166/v1",  # 169.254.169.254 as one number
    "http://[::ffff:169.254.169.254]/v1", "http://[64:ff9b::a9fe:a9fe]/v1", "http://[2002:a9fe:a9fe::]/v1",
    "http://0x7f000001:6379/v1", "http://127.1:5432/v1", "http://0.0.0.0:8011/v1", "http://127.0.0.1:8000/v1",  # Concord's web
    "http://127.0.0.1:5432/v1", "http://127.0.0.1:6379/v1"])
def test_metadata_link_local_and_own_ports_are_always_refused(endpoint):
    for local in (True, False):
        with override_settings(JUDGE_LOCAL_ENDPOINTS=local, JUDGE_PRIVATE_ENDPOINTS=["0.0.0.0/0", "::/0"]):
            assert "never a judge's endpoint" in refused_fields(judge(endpoint=endpoint))["endpoint"], endpoint


def test_concords_own_database_and_redis_are_refused_where_they_run():
    for port in own_ports():
        for host in ("127.0.0.1", "localhost"):
            problem = refused_fields(judge(endpoint=f"http://{host}:{port}/v1"))["endpoint"]
            assert "Concord's own database, Redis or web server" in problem


def test_loopback_and_private_endpoints_only_in_development_or_where_listed():
    endpoints = ("http://127.0.0.1:9/v1", "http://10.20.1.5:8000/v1", "http://192.168.7.7/v1", "http://[::1]:9/v1")
    for endpoint in endpoints:  # development and the tests
        assert validate_judge(judge(endpoint=endpoint))["endpoint"] == endpoint
    with PRODUCTION:
        for endpoint in endpoints:
            assert "CONCORD_JUDGE_PRIVATE_ENDPOINTS" in refused_fields(judge(endpoint=endpoint))["endpoint"]
        assert validate_judge(judge(endpoint="https://api.openai.com/v1"))  # public: no listing needed
    with override_settings(JUDGE_LOCAL_ENDPOINTS=False, JUDGE_PRIVATE_ENDPOINTS=["10.20.0.0/16", "127.0.0.1"]):
        assert validate_judge(judge(endpoint="http://10.20.1.5:8000/v1"))
        assert validate_judge(judge(endpoint="http://127.0.0.1:9/v1"))
        assert "endpoint" in refused_fields(judge(endpoint="http://10.21.1.5/v1"))


@contextmanager
def resolving(monkeypatch, name: str, answers: list[list[str]]):
    """`name` resolves to each of `answers` in turn (the last one from then on); other names as usual."""
    real, calls = egress._addresses, []

    def fake(host: str, port: int, *, quiet: bool = False) -> list[str]:
        if host.lower() != name:
            return real(host, port, quiet=quiet)
        calls.append(host)
        return answers[min(len(calls), len(answers)) - 1]

    monkeypatch.setattr(egress, "_addresses", fake)
    yield calls


def test_the_client_connects_to_the_address_it_checked(monkeypatch):
    """A name no real DNS knows is answered only by the check's own resolution: the request reaching the
    server proves the connection went to the checked address, with the name kept in the URL."""
    # 127.0.0.2 has nothing listening: the next checked address is tried, as a resolver's answers are
    with running_fake_server() as server, resolving(monkeypatch, "judge.invalid", [["127.0.0.2", "127.0.0.1"]]):
        port = urlsplit(server.base_url).port
        answer = send(validate_judge(judge(endpoint=f"http://judge.invalid:{port}/v1",
                                           backend_options={"max_retries": 0})))
        assert not isinstance(answer, Exception), answer
        assert server.stats().completion_requests == 1


def test_dns_rebinding_is_refused_when_the_connection_opens(monkeypatch):
    """Public when loaded and when the run starts, loopback when the client connects: refused, nothing sent."""
    with running_fake_server() as server, PRODUCTION, \
            resolving(monkeypatch, "rebind.invalid", [["93.184.216.34"], ["93.184.216.34"], ["127.0.0.1"]]) as calls:
        port = urlsplit(server.base_url).port
        config = validate_judge(judge(endpoint=f"http://rebind.invalid:{port}/v1", backend_options={"max_retries": 0}))
        answer = send(config)
        assert isinstance(answer, PermanentBackendError) and "endpoint refused" in str(answer), answer
        assert len(calls) == 3 and server.stats().requests == 0
    with PRODUCTION:  # the guard alone, for any client that uses it
        async def get() -> None:
            async with httpx.AsyncClient(transport=egress.guard_transport(httpx.AsyncHTTPTransport())) as client:
                await client.get("http://169.254.169.254/latest/meta-data/")
        with pytest.raises(egress.EndpointRefused):
            asyncio.run(get())


def test_a_stored_judge_pointing_at_metadata_sends_nothing(monkeypatch):
    with running_fake_server() as server:
        config = validate_judge(judge(endpoint=server.base_url, backend_options={"max_retries": 0}))
        config["endpoint"] = "http://169.254.169.254/latest"  # stored before the rule
        answer = send(config)
        assert isinstance(answer, PermanentBackendError)
        assert str(answer).startswith("endpoint refused: 169.254.169.254 is a link-local")


# ------------------------------------------------------------------------- what a run's errors echo

class _Service(BaseHTTPRequestHandler):
    """Not a model server: an internal service answering with its own data."""

    answers = {"/json/v1/chat/completions": (403, "application/json", json.dumps(
                   {"message": "admin console: users alice, bob; db=10.0.0.9:5432"})),
               "/html/v1/chat/completions": (404, "text/html", "<html><title>Jenkins</title>alice</html>"),
               "/model/v1/chat/completions": (400, "application/json", json.dumps(
                   {"error": {"message": "model 'x' not found " + "z" * 1000}}))}

    def do_POST(self):  # noqa: N802 - http.server's name
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        status, kind, body = self.answers.get(self.path) or (401, "application/json", json.dumps(
            {"error": {"message": f"Incorrect API key provided: {self.headers.get('Authorization')}"}}))
        data = body.encode()
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


def test_a_run_error_echoes_no_answer_of_a_service_that_is_not_a_model_server(monkeypatch):
    monkeypatch.setenv("JUDGE_TEST_ECHO", "sk-echoed-key-0123456789")
    server = HTTPServer(("127.0.0.1", 0), _Service)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    try:
        base = f"http://127.0.0.1:{server.server_address[1]}"
        errors = {path: str(send(validate_judge(judge(endpoint=f"{base}/{path}/v1", api_key_env="JUDGE_TEST_ECHO",
                                                      backend_options={"max_retries": 0}))))
                  for path in ("json", "html", "model", "echo")}
    finally:
        server.shutdown()
        server.server_close()
    assert errors["json"] == "an OpenAI-compatible server refused the request (403)", errors
    assert errors["html"] == "an OpenAI-compatible server refused the request (404)", errors
    assert "alice" not in "".join(errors.values()) and "Jenkins" not in errors["html"]
    # a model server's own error is still shown, as a sentence, not a body
    assert "model 'x' not found" in errors["model"] and len(errors["model"]) < 400
    # a key the server echoes back is masked before the error is kept anywhere (scores, run files, API)
    assert errors["echo"].endswith("Incorrect API key provided: Bearer sk-...") and "0123456789" not in errors["echo"]
