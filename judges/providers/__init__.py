"""Provider profiles: one module per provider behind `Provider` (judges/providers/base.py).

The one entry point other code uses:

    req = build_request(judge, judge_request)          # HttpRequest: method, url, headers, json
    req = build_request(judge, judge_request, mask_key=True)   # for printing (judge_request command)
    resp = read_response(judge, 200, body_bytes)       # JudgeResponse, or raises a BackendError

`judge` is a normalised judge dict (judges.config.validate_judge); `judge_request` a
`judges.backends.base.JudgeRequest`, e.g. from `request_for_judge(judge, messages)`.
"""
from __future__ import annotations

import json
import os
from typing import Any, Mapping, Sequence

from judges.backends.base import JudgeRequest, JudgeResponse
from judges.egress import check_key_variable
from judges.masking import mask_body_extras
from judges.providers.anthropic import Anthropic
from judges.providers.base import HttpRequest, Problem, Provider, ProviderSettings, api_key, mask_secret
from judges.providers.google import Google
from judges.providers.llamacpp import LlamaCpp
from judges.providers.ollama import Ollama
from judges.providers.openai import OpenAI, is_reasoning_model
from judges.providers.openai_compat import OpenAICompatible
from judges.providers.sglang import SGLang
from judges.providers.tgi import TGI
from judges.providers.vllm import VLLM

GENERIC = "openai-compatible"
PROVIDERS: dict[str, Provider] = {p.name: p for p in (OpenAI(), Anthropic(), Google(), VLLM(), SGLang(), LlamaCpp(),
                                                        Ollama(), TGI(), OpenAICompatible())}
ALIASES = {"generic": GENERIC, "openai_compatible": GENERIC, "llama.cpp": "llamacpp", "llama-cpp": "llamacpp",
           "gemini": "google"}
NAMES = tuple(PROVIDERS)


def canonical(name: str | None) -> str:
    name = (name or GENERIC).strip().lower()
    return ALIASES.get(name, name)


def get_provider(name: str | None) -> Provider:
    key = canonical(name)
    if key not in PROVIDERS:
        raise ValueError(f"unknown provider {name!r}; expected one of {', '.join(NAMES)}")
    return PROVIDERS[key]


def settings_from_judge(judge: Mapping[str, Any]) -> ProviderSettings:
    sampling = judge.get("sampling") or {}
    opts = judge.get("backend_options") or {}
    provider = get_provider(judge.get("provider"))
    return ProviderSettings(
        provider=provider.name, base_url=judge.get("endpoint") or provider.default_endpoint, model=judge["model"],
        api_key_env=judge.get("api_key_env") or None, reasoning_effort=sampling.get("reasoning_effort"),
        reasoning_tokens=sampling.get("reasoning_tokens"), reasoning_model=opts.get("reasoning_model"),
        supports_json_schema=bool(opts.get("supports_json_schema") or judge.get("structured_output")),
        supports_seed=opts.get("supports_seed", True), extra_body=dict(opts.get("extra_body") or {}),
        headers=dict(opts.get("headers") or {}), headers_env=dict(opts.get("headers_env") or {}),
    )


def request_for_judge(judge: Mapping[str, Any], messages: Sequence[Mapping[str, str]] | None = None, *,
                      prompt: str | None = None, json_schema: dict | None = None, **changes: Any) -> JudgeRequest:
    """The JudgeRequest a judge's sampling settings make for these messages (or raw prompt)."""
    sampling = judge.get("sampling") or {}
    args: dict[str, Any] = dict(
        messages=tuple(dict(m) for m in messages) if messages is not None else None, prompt=prompt,
        temperature=float(sampling.get("temperature", 0.0)), top_p=float(sampling.get("top_p", 1.0)),
        max_tokens=int(sampling.get("max_tokens", 512)), seed=sampling.get("seed"), json_schema=json_schema,
        mode="logprob" if judge.get("mode") == "logprobs" else "generate")
    args.update(changes)
    return JudgeRequest(**args)


def build_request(judge: Mapping[str, Any], request: JudgeRequest, *, mask_key: bool = False,
                  key: str | None = None) -> HttpRequest:
    """Exactly the HTTP request `judge` sends for `request`. The key comes from the environment
    variable the judge names (PermanentBackendError when unset) unless `key` is given; with
    `mask_key` an unset variable shows as `$NAME` and a set one is masked."""
    settings = settings_from_judge(judge)
    if mask_key:  # the variables' values (masked below), or `$NAME` for an unset one
        for env in [settings.api_key_env or "", *settings.headers_env.values()]:
            if env:
                check_key_variable(env)
        settings.headers.update({h: os.environ.get(env) or f"${env}" for h, env in settings.headers_env.items()})
        settings.headers_env = {}
        settings.extra_body = mask_body_extras(settings.extra_body)
    if key is None:
        key = ((os.environ.get(settings.api_key_env or "") or (f"${settings.api_key_env}" if settings.api_key_env
                                                                 else None))
               if mask_key else api_key(settings))
    out = get_provider(settings.provider).build(settings, request, api_key=key)
    return out.masked() if mask_key else out


def output_limit(judge: Mapping[str, Any], request: JudgeRequest) -> int:
    """The most output tokens `judge` may be billed for `request`: read from the body it sends
    (Provider.output_limit), so the estimate and the cap count exactly what the request allows. A
    local model generates at most max_tokens per answer (one scored token in logprob mode)."""
    if judge.get("backend") != "openai":
        return (1 if request.mode == "logprob" else request.max_tokens) * request.n
    settings = settings_from_judge(judge)
    provider = get_provider(settings.provider)
    return provider.output_limit(provider.request_body(settings, request))


def read_response(judge: Mapping[str, Any], status: int, raw: bytes | str | Mapping[str, Any],
                  retry_after: float | None = None) -> JudgeResponse:
    """The provider's answer read back; raises the BackendError a non-200 status maps to."""
    settings = settings_from_judge(judge)
    provider = get_provider(settings.provider)
    if status != 200:
        text = raw.decode(errors="replace") if isinstance(raw, bytes) else raw if isinstance(raw, str) else json.dumps(raw)
        raise provider.error(status, text[:2000], retry_after)
    if isinstance(raw, Mapping):
        return provider.read(raw, settings.model)
    return provider.decode(raw, settings.model)


def check_judge(judge: Mapping[str, Any], path: Any) -> list[Problem]:
    """Load-time refusals: what the judge's provider would refuse, each naming the rule and the fix."""
    return get_provider(judge.get("provider")).check(judge, path)


__all__ = ["HttpRequest", "Provider", "ProviderSettings", "PROVIDERS", "NAMES", "GENERIC", "build_request",
           "read_response", "output_limit", "request_for_judge", "settings_from_judge", "get_provider", "check_judge", "canonical",
           "is_reasoning_model", "mask_secret"]
