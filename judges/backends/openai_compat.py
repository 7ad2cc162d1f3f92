"""The HTTP backend of every provider (judges/providers): hosted APIs, vLLM, SGLang, TGI, Ollama, llama.cpp.

The provider builds each request and reads each answer; this client sends them. Bounded concurrency (one semaphore per event loop), retries with exponential backoff and
full jitter on 429/5xx/timeouts/connection errors (honouring Retry-After), no retry on
other 4xx. The API key is read from the environment variable whose NAME is configured.
"""
from __future__ import annotations

import asyncio
import email.utils
import random
import time
import weakref
from dataclasses import dataclass
from typing import Any, Sequence

from judges.backends.base import Backend, JudgeRequest, JudgeResponse, Result
from judges.providers import GENERIC, HttpRequest, ProviderSettings, get_provider
from judges.providers.base import api_key
from judges.providers.openai_compat import api_root
from judges.backends.tls import tls_context
from judges.egress import check_endpoint, guard_transport
from judges.masking import scrub_text, secret_values
from judges.backends.errors import (
    BackendError, BackendNotAvailable, BackendTimeout, PermanentBackendError, RateLimited, RetryableBackendError,
)


@dataclass
class OpenAICompatConfig(ProviderSettings):
    """The provider's settings (judges/providers) plus how this client sends: concurrency, retries."""

    max_concurrency: int = 8
    timeout_s: float = 60.0
    connect_timeout_s: float = 10.0
    max_retries: int = 5
    backoff_base_s: float = 0.5
    backoff_max_s: float = 30.0
    retry_after_max_s: float = 120.0

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "OpenAICompatConfig":
        known = {f for f in cls.__dataclass_fields__}
        unknown = set(data) - known
        if "api_key" in data:
            raise ValueError("put the API key in an environment variable and set api_key_env")
        if unknown:
            raise ValueError(f"unknown backend settings: {sorted(unknown)}")
        return cls(**data)


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


def build_body(request: JudgeRequest, config: ProviderSettings) -> tuple[str, dict[str, Any]]:
    """(path under the API root, JSON body) for one request, as the config's provider builds it."""
    provider = get_provider(config.provider)
    body = provider.request_body(config, request)
    return provider.url(config, request).removeprefix(api_root(config.base_url)), body


def request_tokens(body: dict[str, Any], provider: str | None = None) -> int:
    """What a provider's tokens-per-minute limit counts for a body: its input (approximated) and the
    most it may generate (the same bound the run estimate counts)."""
    from judges.tokens import approximate

    try:
        out = get_provider(provider).output_limit(body)
    except ValueError:
        out = 0
    return approximate(body.get("messages"), body.get("prompt")) + out


def parse_body(data: Any, model: str) -> JudgeResponse:
    """An OpenAI-style completion body -> JudgeResponse; MalformedResponseError if it is not one."""
    return get_provider(GENERIC).read(data, model)


class OpenAICompatBackend(Backend):
    name = "openai_compat"

    def __init__(self, config: OpenAICompatConfig | dict[str, Any], *, rng: random.Random | None = None):
        self.config = config if isinstance(config, OpenAICompatConfig) else OpenAICompatConfig.from_dict(config)
        self.provider = get_provider(self.config.provider)
        self._rng = rng or random.Random()
        self._semaphores: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
        self.limiter: Any = None  # judges.ratelimit.SharedRateLimiter when the judge sets rpm/tpm
        self._sent_secrets: set[str] = set()  # the credentials this client sends, masked in error texts

    def identity(self) -> dict[str, Any]:
        """Who answers (the response cache's key): another server or another key's account may answer
        otherwise, so the API root and the key's variable are part of it."""
        ident = {"backend": self.name, "model": self.config.model, "provider": self.provider.name,
                 "endpoint": self.provider.models_url(self.config).removesuffix("/models"),
                 "key_env": self.config.api_key_env or ""}
        if self.config.extra_body:
            ident["extra_body"] = self.config.extra_body
        return ident

    def _headers(self) -> dict[str, str]:
        return self.provider.headers(self.config, api_key(self.config))

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
        limits = httpx.Limits(max_connections=n, max_keepalive_connections=n)
        return httpx.AsyncClient(
            headers=headers,  # set once per client: merging per request costs more than the parsing
            # connects only to addresses judges.egress allows, checked when each connection opens
            transport=guard_transport(httpx.AsyncHTTPTransport(verify=tls_context(), limits=limits)),
            timeout=httpx.Timeout(self.config.timeout_s, connect=self.config.connect_timeout_s),
        )

    async def _attempt(self, client: Any, sem: asyncio.Semaphore, req: HttpRequest) -> JudgeResponse:
        import httpx

        if self.limiter is not None:
            await self.limiter.acquire(request_tokens(req.json, self.provider.name))
        async with sem:
            start = time.perf_counter()
            try:
                resp = await client.post(req.url, json=req.json)
            except httpx.TimeoutException as exc:
                raise BackendTimeout(f"timeout after {self.config.timeout_s}s: {exc!r}") from exc
            except httpx.TransportError as exc:
                raise RetryableBackendError(f"connection error: {exc!r}") from exc
            latency = time.perf_counter() - start
        if resp.status_code != 200:  # a key the server echoes back is masked before anything keeps the text
            raise self.provider.error(resp.status_code, scrub_text(resp.text[:2000], self._sent_secrets),
                                      parse_retry_after(resp.headers.get("retry-after")))
        out = self.provider.decode(resp.content, self.config.model)
        out.latency_s = latency
        return out

    async def _one(self, client: Any, sem: asyncio.Semaphore, request: JudgeRequest) -> Result:
        try:
            # headers are the client's (set once); the provider builds the rest
            req = self.provider.build(self.config, request, api_key=None)
        except Exception as exc:  # a request we cannot even encode is a caller bug; report it per row
            return PermanentBackendError(f"cannot build request: {exc!r}")
        attempt = 0
        while True:
            try:
                return await self._attempt(client, sem, req)
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
            check_endpoint(self.config.base_url)  # the URL's own host, even when a proxy carries the call
            headers = self._headers()
        except BackendError as exc:  # e.g. the API key variable is not set: every request fails alike
            return [exc] * len(requests)
        self._sent_secrets = secret_values({"backend_options": {"headers": headers,
                                                                "extra_body": self.config.extra_body}})
        # httpx clients are bound to their event loop; one per call keeps callers that use
        # asyncio.run (Celery tasks, tests) free of leaked connections.
        async with self._new_client(headers) as client:
            return list(await asyncio.gather(*(self._one(client, sem, r) for r in requests)))
