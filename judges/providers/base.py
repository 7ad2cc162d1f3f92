"""One base class for every judge provider: what a request may carry, how it is sent, how the answer is read.

A provider turns a `JudgeRequest` (what a method asks) into an `HttpRequest` (exactly what goes on
the wire) and reads the provider's answer back into a `JudgeResponse`, or into one of our own
`BackendError`s. `check` runs when a judge is loaded and lists every setting the provider would
refuse, so a run never learns it from failing calls.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any, Mapping
from urllib.parse import urlsplit

from judges.backends.base import JudgeRequest, JudgeResponse
from judges.backends.errors import (
    BackendError, MalformedResponseError, PermanentBackendError, RateLimited, RetryableBackendError,
)
from judges.egress import check_key_variable
from judges.masking import is_secret_header, mask_headers, mask_url, mask_value

RETRYABLE_STATUS = {408, 409, 425, 429, 500, 502, 503, 504}
Problem = tuple[str, str]  # (field path in the judge file, message naming the rule and the fix)


@dataclass(frozen=True)
class HttpRequest:
    """One HTTP request as it is sent: the batch APIs and `judge_request` reuse it as it is."""

    method: str
    url: str
    headers: dict[str, str]
    json: dict[str, Any]

    @property
    def path(self) -> str:
        """The URL's path, e.g. /v1/chat/completions (what an OpenAI Batch line's `url` holds)."""
        return urlsplit(self.url).path

    def masked(self) -> "HttpRequest":
        """The same request with its headers and URL masked by judges.masking, keeping at most the first
        3 characters; the body's extras are masked before it is built (judges.providers.build_request),
        since only the judge's settings tell them from the fields the provider adds."""
        return HttpRequest(self.method, mask_url(self.url), mask_headers(self.headers), self.json)

    def as_dict(self) -> dict[str, Any]:
        return {"method": self.method, "url": self.url, "headers": dict(self.headers), "json": self.json}


def mask_secret(name: str, value: str) -> str:
    return mask_value(value) if is_secret_header(name) else value


@dataclass
class ProviderSettings:
    """The judge's settings a provider needs (plain data; the key stays in the environment)."""

    base_url: str
    model: str
    provider: str = "openai-compatible"
    api_key_env: str | None = None
    reasoning_effort: str | None = None  # sampling.reasoning_effort
    reasoning_tokens: int | None = None  # sampling.reasoning_tokens: cap headroom for hidden reasoning
    reasoning_model: bool | None = None  # backend_options.reasoning_model: overrides the name rule
    supports_json_schema: bool = False  # generic provider: the server honours response_format json_schema
    supports_seed: bool = True
    extra_body: dict[str, Any] = field(default_factory=dict)
    headers: dict[str, str] = field(default_factory=dict)
    headers_env: dict[str, str] = field(default_factory=dict)  # header -> NAME of the variable holding its value

    def own_headers(self) -> dict[str, str]:
        """The judge's own headers, those held by reference read from the environment now."""
        return {**self.headers, **{name: env_value(env) for name, env in self.headers_env.items()}}


class Provider:
    """Subclasses set the class attributes and override what differs from an OpenAI-style server."""

    name = "base"
    title = ""
    default_endpoint = ""  # hosted providers: where `provider` alone reaches them
    default_key_env = ""
    logprobs = True  # returns token logprobs (G-Eval's logprob mode)
    structured = True  # can hold the answer to a JSON schema
    docs: dict[str, str] = {}  # rule -> provider documentation URL (docs/judges.md cites these)

    # ----------------------------------------------------------------------------- load time
    def check(self, judge: Mapping[str, Any], path: Any) -> list[Problem]:
        """Every setting of `judge` (a normalised judge dict) this provider would refuse."""
        problems: list[Problem] = []
        if judge.get("mode") == "logprobs" and not self.logprobs:
            problems.append((path("mode"), f"{self.title} returns no token logprobs, so G-Eval's logprob mode "
                                           f"cannot run; use mode: generate (method per_criterion) or a server "
                                           f"that returns logprobs (vllm, sglang, llamacpp, tgi)"))
        if judge.get("structured_output") and not self.structured:
            problems.append((path("structured_output"), f"{self.title} cannot hold an answer to a JSON schema; "
                                                        f"set structured_output: false"))
        if judge.get("structured_output") and judge.get("mode") == "logprobs":
            problems.append((path("structured_output"), "logprob mode reads one score token, not a JSON answer; "
                                                        "set structured_output: false"))
        return problems

    # ----------------------------------------------------------------------------- requests
    def url(self, settings: ProviderSettings, request: JudgeRequest) -> str:
        raise NotImplementedError

    def models_url(self, settings: ProviderSettings) -> str:
        """The provider's list of models: one cheap GET that needs the key (the run's preflight)."""
        raise NotImplementedError

    def headers(self, settings: ProviderSettings, api_key: str | None) -> dict[str, str]:
        headers = {"Content-Type": "application/json", **settings.own_headers()}
        if api_key:
            headers["Authorization"] = f"Bearer {api_key}"
        return headers

    def body(self, settings: ProviderSettings, request: JudgeRequest) -> dict[str, Any]:
        raise NotImplementedError

    def request_body(self, settings: ProviderSettings, request: JudgeRequest) -> dict[str, Any]:
        """The JSON body as sent: the provider's fields, then the judge's extra_body over them."""
        body = self.body(settings, request)
        body.update(settings.extra_body)
        return body

    def build(self, settings: ProviderSettings, request: JudgeRequest, *, api_key: str | None = None) -> HttpRequest:
        return HttpRequest("POST", self.url(settings, request), self.headers(settings, api_key),
                           self.request_body(settings, request))

    def output_limit(self, body: Mapping[str, Any]) -> int:
        """The most output tokens a request with this body lets the provider generate, and so bill:
        its cap as sent (hidden reasoning and thinking budgets come out of it) times the answers it
        asks for. The run estimate and the cost cap count this; ValueError for a body with no cap."""
        cap = body.get("max_completion_tokens") or body.get("max_tokens")
        if not cap:
            raise ValueError("the request carries no output-token cap (max_tokens), so its cost has no bound; "
                             "set sampling.max_tokens and leave it out of backend_options.extra_body")
        return int(cap) * int(body.get("n") or 1)

    # ----------------------------------------------------------------------------- answers
    def read(self, data: Any, model: str) -> JudgeResponse:
        """A 200 body (parsed JSON) -> JudgeResponse; MalformedResponseError when it is not one."""
        raise NotImplementedError

    def error(self, status: int, text: str, retry_after: float | None = None) -> BackendError:
        """A non-200 answer -> one of our errors, with the provider's own message when it gave one."""
        message = error_message(text)
        what = f"{self.title} refused the request ({status})" + (f": {message}" if message else "")
        if status == 429:
            return RateLimited(f"rate limited (429){': ' + message if message else ''}", status=429, body=text,
                               retry_after=retry_after)
        if status in RETRYABLE_STATUS or status >= 500:
            return RetryableBackendError(f"server error {status}{': ' + message if message else ''}", status=status,
                                         body=text, retry_after=retry_after)
        return PermanentBackendError(what, status=status, body=text)

    def decode(self, raw: bytes | str, model: str) -> JudgeResponse:
        try:
            data = json.loads(raw)
        except ValueError as exc:
            raise MalformedResponseError("response body is not JSON", status=200,
                                         body=(raw.decode(errors="replace") if isinstance(raw, bytes) else raw)[:2000]) from exc
        return self.read(data, model)


MESSAGE_MAX = 300  # a provider's message is a sentence; more is a body echoed back


def error_message(text: str) -> str:
    """The message of an error body: OpenAI, llama.cpp `{"error": {"message"}}`, Anthropic
    `{"type": "error", "error": {"type", "message"}}`, TGI `{"error": "...", "error_type"}`, vLLM's
    older `{"object": "error", "message"}`, FastAPI `{"detail"}`; '' when there is none."""
    try:
        data = json.loads(text)
    except (ValueError, TypeError):
        return ""
    if not isinstance(data, dict):
        return ""
    err = data.get("error")
    if isinstance(err, dict):
        found = err.get("message") or err.get("type")
    elif isinstance(err, str):
        found = err
    elif data.get("object") == "error" or "detail" in data:
        found = data.get("message") or data.get("detail")
    else:  # not a model server's error: what another service answers is not echoed to the run's readers
        return ""
    text = found if isinstance(found, str) else json.dumps(found) if found else ""
    return text[:MESSAGE_MAX] + ("…" if len(text) > MESSAGE_MAX else "")


def env_value(name: str) -> str:
    """A credential held by reference: the variable's value; PermanentBackendError when it is unset or is
    not a judge key variable (judges.egress: never SECRET_KEY, DATABASE_URL, ...), checked before it is read."""
    check_key_variable(name)
    value = os.environ.get(name)
    if not value:
        raise PermanentBackendError(f"environment variable {name} is not set")
    return value


def api_key(settings: ProviderSettings) -> str | None:
    """The key from the environment variable the judge names; PermanentBackendError when it is unset."""
    return env_value(settings.api_key_env) if settings.api_key_env else None
