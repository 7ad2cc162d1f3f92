"""OpenAI-compatible HTTP backend: vLLM, SGLang, TGI, Ollama, llama.cpp server, hosted APIs.

Bounded concurrency (one semaphore per event loop), retries with exponential backoff and
full jitter on 429/5xx/timeouts/connection errors (honouring Retry-After), no retry on
other 4xx. The API key is read from the environment variable whose NAME is configured.
"""
from __future__ import annotations

import asyncio
import email.utils
import json
import os
import random
import time
import weakref
from dataclasses import dataclass, field
from typing import Any, Sequence

from judges.backends.base import Backend, JudgeRequest, JudgeResponse, Result
from judges.backends.errors import (
    BackendError,
    BackendNotAvailable,
    BackendTimeout,
    MalformedResponseError,
    PermanentBackendError,
    RateLimited,
    RetryableBackendError,
)

RETRYABLE_STATUS = {408, 409, 425, 429, 500, 502, 503, 504}


@dataclass
class OpenAICompatConfig:
    base_url: str  # e.g. http://127.0.0.1:8000/v1 (a trailing /v1 is added when missing)
    model: str
    api_key_env: str | None = None  # NAME of the environment variable holding the key
    max_concurrency: int = 8
    timeout_s: float = 60.0
    connect_timeout_s: float = 10.0
    max_retries: int = 5
    backoff_base_s: float = 0.5
    backoff_max_s: float = 30.0
    retry_after_max_s: float = 120.0
    supports_json_schema: bool = False  # send response_format json_schema when asked
    supports_seed: bool = True
    # Completions endpoint for requests with a raw prompt; chat otherwise.
    extra_body: dict[str, Any] = field(default_factory=dict)
    headers: dict[str, str] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "OpenAICompatConfig":
        known = {f for f in cls.__dataclass_fields__}
        unknown = set(data) - known
        if "api_key" in data:
            raise ValueError("put the API key in an environment variable and set api_key_env")
        if unknown:
            raise ValueError(f"unknown backend settings: {sorted(unknown)}")
        return cls(**data)


def _api_root(base_url: str) -> str:
    url = base_url.rstrip("/")
    return url if url.endswith("/v1") else url + "/v1"


def parse_retry_after(value: str | None) -> float | None:
    """Seconds from a Retry-After header: delta-seconds or an HTTP date."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def backoff_delay(attempt: int, base: float, cap: float, rng: random.Random) -> float:
    """Full jitter (AWS architecture blog): uniform(0, min(cap, base * 2**attempt))."""
    return rng.uniform(0.0, min(cap, base * (2 ** attempt)))


def build_body(request: JudgeRequest, config: OpenAICompatConfig) -> tuple[str, dict[str, Any]]:
    """(path, JSON body) for one request."""
    body: dict[str, Any] = {
        "model": config.model,
        "temperature": request.temperature,
        "max_tokens": 1 if request.mode == "logprob" else request.max_tokens,
    }
    # defaults are left out: some servers (Ollama, TGI) reject or ignore fields they lack
    if request.top_p != 1.0:
        body["top_p"] = request.top_p
    if request.n != 1:
        body["n"] = request.n
    if request.seed is not None and config.supports_seed:
        body["seed"] = request.seed
    if request.stop:
        body["stop"] = list(request.stop)
    want_logprobs = request.logprobs or request.mode == "logprob"
    top_k = request.top_logprobs or (20 if request.mode == "logprob" else 0)
    if request.messages is not None:
        path = "/chat/completions"
        body["messages"] = [dict(m) for m in request.messages]
        if want_logprobs:
            body["logprobs"] = True
            if top_k:
                body["top_logprobs"] = top_k
        if request.json_schema is not None and config.supports_json_schema:
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "judgement", "schema": request.json_schema, "strict": True},
            }
    else:
        path = "/completions"
        body["prompt"] = request.prompt
        if want_logprobs:
            body["logprobs"] = max(1, top_k)
    body.update(config.extra_body)
    return path, body


def request_tokens(body: dict[str, Any]) -> int:
    """What a provider's tokens-per-minute limit counts for a body: its input (approximated) and the
    most it may generate."""
    from judges.tokens import approximate

    out = int(body.get("max_completion_tokens") or body.get("max_tokens") or 0) * int(body.get("n") or 1)
    return approximate(body.get("messages"), body.get("prompt")) + out


def _chat_logprobs(choice: dict) -> tuple[list[dict[str, float]], list[str]] | None:
    content = (choice.get("logprobs") or {}).get("content")
    if not content:
        return None
    positions, chosen = [], []
    for pos in content:
        top = {t["token"]: float(t["logprob"]) for t in pos.get("top_logprobs") or []}
        top.setdefault(pos["token"], float(pos["logprob"]))
        positions.append(top)
        chosen.append(pos["token"])
    return positions, chosen


def _completion_logprobs(choice: dict) -> tuple[list[dict[str, float]], list[str]] | None:
    lp = choice.get("logprobs")
    if not lp or not lp.get("tokens"):
        return None
    positions = []
    tops = lp.get("top_logprobs") or [None] * len(lp["tokens"])
    for tok, tok_lp, top in zip(lp["tokens"], lp.get("token_logprobs") or [], tops):
        d = {k: float(v) for k, v in (top or {}).items()}
        if tok_lp is not None:
            d.setdefault(tok, float(tok_lp))
        positions.append(d)
    return positions, list(lp["tokens"])


def parse_body(data: Any, model: str) -> JudgeResponse:
    """An OpenAI-style completion body -> JudgeResponse; MalformedResponseError if it is not one."""
    try:
        choices = sorted(data["choices"], key=lambda c: c.get("index", 0))
        texts, reasons, logprobs, chosen = [], [], [], []
        for c in choices:
            if "message" in c:
                texts.append(c["message"].get("content") or "")
                lp = _chat_logprobs(c)
            else:
                texts.append(c["text"])
                lp = _completion_logprobs(c)
            reasons.append(c.get("finish_reason") or "")
            if lp is not None:
                logprobs.append(lp[0])
                chosen.append(lp[1])
        usage = data.get("usage") or {}
        return JudgeResponse(
            texts=texts,
            finish_reasons=reasons,
            input_tokens=int(usage.get("prompt_tokens") or 0),
            output_tokens=int(usage.get("completion_tokens") or 0),
            logprobs=logprobs if len(logprobs) == len(texts) and logprobs else None,
            chosen_tokens=chosen if len(chosen) == len(texts) and chosen else None,
            model=data.get("model") or model,
            raw=data,
        )
    except (KeyError, TypeError, AttributeError, ValueError) as exc:
        raise MalformedResponseError(f"unexpected response shape: {exc!r}") from exc


class OpenAICompatBackend(Backend):
    name = "openai_compat"

    def __init__(self, config: OpenAICompatConfig | dict[str, Any], *, rng: random.Random | None = None):
        self.config = config if isinstance(config, OpenAICompatConfig) else OpenAICompatConfig.from_dict(config)
        self.api_root = _api_root(self.config.base_url)
        self._rng = rng or random.Random()
        self._semaphores: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
        self.limiter: Any = None  # judges.ratelimit.SharedRateLimiter when the judge sets rpm/tpm

    def identity(self) -> dict[str, Any]:
        return {"backend": self.name, "model": self.config.model}

    def _headers(self) -> dict[str, str]:
        headers = {"Content-Type": "application/json", **self.config.headers}
        if self.config.api_key_env:
            key = os.environ.get(self.config.api_key_env)
            if not key:
                raise PermanentBackendError(f"environment variable {self.config.api_key_env} is not set")
            headers["Authorization"] = f"Bearer {key}"
        return headers

    def _semaphore(self) -> asyncio.Semaphore:
        """One semaphore per event loop, so concurrent score_many calls share the bound."""
        loop = asyncio.get_running_loop()
        sem = self._semaphores.get(loop)
        if sem is None:
            sem = self._semaphores[loop] = asyncio.Semaphore(self.config.max_concurrency)
        return sem

    def _new_client(self, headers: dict[str, str]) -> Any:
        try:
            import httpx
        except ImportError as exc:  # pragma: no cover - httpx is a dependency
            raise BackendNotAvailable("httpx is not installed") from exc
        n = self.config.max_concurrency
        return httpx.AsyncClient(
            headers=headers,  # set once per client: merging per request costs more than the parsing
            timeout=httpx.Timeout(self.config.timeout_s, connect=self.config.connect_timeout_s),
            limits=httpx.Limits(max_connections=n, max_keepalive_connections=n),
        )

    async def _attempt(self, client: Any, sem: asyncio.Semaphore, path: str, body: dict) -> JudgeResponse:
        import httpx

        if self.limiter is not None:
            await self.limiter.acquire(request_tokens(body))
        async with sem:
            start = time.perf_counter()
            try:
                resp = await client.post(self.api_root + path, json=body)
            except httpx.TimeoutException as exc:
                raise BackendTimeout(f"timeout after {self.config.timeout_s}s: {exc!r}") from exc
            except httpx.TransportError as exc:
                raise RetryableBackendError(f"connection error: {exc!r}") from exc
            latency = time.perf_counter() - start
        if resp.status_code != 200:
            text = resp.text[:2000]
            retry_after = parse_retry_after(resp.headers.get("retry-after"))
            if resp.status_code == 429:
                raise RateLimited("rate limited (429)", status=429, body=text, retry_after=retry_after)
            if resp.status_code in RETRYABLE_STATUS or resp.status_code >= 500:
                raise RetryableBackendError(f"server error {resp.status_code}", status=resp.status_code,
                                            body=text, retry_after=retry_after)
            raise PermanentBackendError(f"request rejected ({resp.status_code})", status=resp.status_code,
                                        body=text)
        try:
            data = json.loads(resp.content)
        except ValueError as exc:
            raise MalformedResponseError("response body is not JSON", status=200,
                                         body=resp.text[:2000]) from exc
        out = parse_body(data, self.config.model)
        out.latency_s = latency
        return out

    async def _one(self, client: Any, sem: asyncio.Semaphore, request: JudgeRequest) -> Result:
        try:
            path, body = build_body(request, self.config)
        except Exception as exc:  # a request we cannot even encode is a caller bug; report it per row
            return PermanentBackendError(f"cannot build request: {exc!r}")
        attempt = 0
        while True:
            try:
                return await self._attempt(client, sem, path, body)
            except RetryableBackendError as exc:
                if isinstance(exc, RateLimited) and self.limiter is not None:
                    self.limiter.throttled(exc.retry_after)
                if attempt >= self.config.max_retries:
                    return exc
                delay = backoff_delay(attempt, self.config.backoff_base_s, self.config.backoff_max_s, self._rng)
                if exc.retry_after is not None:
                    delay = max(delay, min(exc.retry_after, self.config.retry_after_max_s))
                attempt += 1
                await asyncio.sleep(delay)  # outside the semaphore: a waiting retry holds no slot
            except BackendError as exc:
                return exc

    async def score_many(self, requests: Sequence[JudgeRequest]) -> list[Result]:
        if not requests:
            return []
        sem = self._semaphore()
        try:
            headers = self._headers()
        except BackendError as exc:  # e.g. the API key variable is not set: every request fails alike
            return [exc] * len(requests)
        # httpx clients are bound to their event loop; one per call keeps callers that use
        # asyncio.run (Celery tasks, tests) free of leaked connections.
        async with self._new_client(headers) as client:
            return list(await asyncio.gather(*(self._one(client, sem, r) for r in requests)))
