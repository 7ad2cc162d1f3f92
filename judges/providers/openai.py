"""OpenAI's hosted API, with the rules of its reasoning models (o-series, gpt-5 family).

Reasoning models take `max_completion_tokens` (not `max_tokens`), only the default temperature
and top_p, no logprobs, and spend hidden reasoning tokens from the same cap: the cap sent is the
judge's visible `max_tokens` plus `reasoning_tokens` of headroom (by default sized from the
reasoning effort), and the effort is always sent so the cap is known.
"""
from __future__ import annotations

import re
from typing import Any, Mapping

from judges.backends.base import JudgeRequest
from judges.providers.base import Problem, ProviderSettings
from judges.providers.openai_compat import OpenAICompatible

REASONING_MODEL_RE = re.compile(r"^(o\d+|gpt-5)")
NON_REASONING_RE = re.compile(r"-chat")  # gpt-5-chat-latest is the non-reasoning chat model
EFFORTS = ("none", "minimal", "low", "medium", "high")
DEFAULT_EFFORT = "low"  # a judge's verdict needs little deliberation; the cheaper effort is the default
# Cap headroom for hidden reasoning, per effort (overridden by sampling.reasoning_tokens).
HEADROOM = {"none": 0, "minimal": 1024, "low": 4096, "medium": 16384, "high": 32768}


def is_reasoning_model(model: str, override: bool | None = None) -> bool:
    if override is not None:
        return override
    name = model.rsplit("/", 1)[-1].lower()
    return bool(REASONING_MODEL_RE.match(name)) and not NON_REASONING_RE.search(name)


def reasoning_cap(max_tokens: int, effort: str | None, headroom: int | None, default_effort: str) -> tuple[str, int]:
    effort = effort or default_effort
    return effort, max_tokens + (HEADROOM.get(effort, 0) if headroom is None else headroom)


def check_reasoning(judge: Mapping[str, Any], path: Any, reasoning: bool, title: str, what: str) -> list[Problem]:
    """The sampling rules shared by OpenAI's and Gemini's reasoning settings."""
    sampling = judge.get("sampling") or {}
    problems: list[Problem] = []
    if not reasoning:
        for key in ("reasoning_effort", "reasoning_tokens"):
            if key in sampling:
                problems.append((path(f"sampling.{key}"), f"{judge.get('model')} is not a {what}; remove "
                                                          f"sampling.{key} (or set backend_options.reasoning_model: "
                                                          f"true if it is one)"))
    return problems


class OpenAI(OpenAICompatible):
    name = "openai"
    title = "OpenAI"
    default_endpoint = "https://api.openai.com/v1"
    default_key_env = "OPENAI_API_KEY"
    chat_only = True  # reasoning models have no /completions
    docs = {
        "reasoning models: max_completion_tokens, reasoning_effort, no temperature/top_p/logprobs":
            "https://platform.openai.com/docs/guides/reasoning",
        "Chat Completions parameters": "https://platform.openai.com/docs/api-reference/chat/create",
        "Structured Outputs (response_format json_schema, strict)":
            "https://platform.openai.com/docs/guides/structured-outputs",
        "error codes": "https://platform.openai.com/docs/guides/error-codes",
    }

    def reasoning(self, settings: ProviderSettings) -> bool:
        return is_reasoning_model(settings.model, settings.reasoning_model)

    def check(self, judge: Mapping[str, Any], path: Any) -> list[Problem]:
        problems = super().check(judge, path)
        opts = judge.get("backend_options") or {}
        reasoning = is_reasoning_model(judge.get("model") or "", opts.get("reasoning_model"))
        problems += check_reasoning(judge, path, reasoning, self.title, "reasoning model")
        if not reasoning:
            return problems
        sampling = judge.get("sampling") or {}
        model = judge.get("model")
        if sampling.get("temperature", 1) != 1:
            problems.append((path("sampling.temperature"), f"OpenAI reasoning models ({model}) accept only the "
                                                           f"default temperature (1); remove sampling.temperature"))
        if sampling.get("top_p", 1) != 1:
            problems.append((path("sampling.top_p"), f"OpenAI reasoning models ({model}) accept only the default "
                                                     f"top_p (1); remove sampling.top_p"))
        if judge.get("mode") == "logprobs":
            problems.append((path("mode"), f"OpenAI reasoning models ({model}) return no logprobs, so G-Eval's "
                                           f"logprob mode cannot run; use mode: generate or a non-reasoning model"))
        mo = judge.get("method_options") or {}
        if judge.get("method") == "self_consistency" and mo.get("temperature", 1) != 1:
            problems.append((path("method_options.temperature"), f"OpenAI reasoning models ({model}) sample only "
                                                                 f"at temperature 1; remove the option"))
        return problems

    def cap(self, settings: ProviderSettings, request: JudgeRequest) -> dict[str, Any]:
        if not self.reasoning(settings):
            return {"max_completion_tokens": 1 if request.mode == "logprob" else request.max_tokens}
        effort, cap = reasoning_cap(request.max_tokens, settings.reasoning_effort, settings.reasoning_tokens,
                                    DEFAULT_EFFORT)
        return {"max_completion_tokens": cap, "reasoning_effort": effort}

    def sampling(self, settings: ProviderSettings, request: JudgeRequest) -> dict[str, Any]:
        return {} if self.reasoning(settings) else super().sampling(settings, request)

    def schema_fields(self, settings: ProviderSettings, schema: dict) -> dict[str, Any]:
        return {"response_format": {"type": "json_schema",
                                    "json_schema": {"name": "judgement", "schema": schema, "strict": True}}}

    def body(self, settings: ProviderSettings, request: JudgeRequest) -> dict[str, Any]:
        body = super().body(settings, request)
        if self.reasoning(settings):
            body.pop("logprobs", None)
            body.pop("top_logprobs", None)
        return body
