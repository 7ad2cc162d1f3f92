"""Google Gemini through its OpenAI-compatible endpoint.

Chosen over native generateContent because it takes the same Chat Completions body and answer as
the OpenAI-style servers (one reader, one structured-output shape: response_format json_schema),
and maps `reasoning_effort` onto Gemini's thinking budgets. It documents no logprobs, so G-Eval's
logprob mode is refused. Thinking models (2.5 and later) spend thinking tokens from the same
output cap, so the cap carries the same headroom as OpenAI's reasoning models.
"""
from __future__ import annotations

import re
from typing import Any, Mapping

from judges.backends.base import JudgeRequest
from judges.providers.base import Problem, ProviderSettings
from judges.providers.openai import check_reasoning, reasoning_cap
from judges.providers.openai_compat import OpenAICompatible

THINKING_RE = re.compile(r"^gemini-(2\.5|[3-9])")


class Google(OpenAICompatible):
    name = "google"
    title = "Google Gemini"
    default_endpoint = "https://generativelanguage.googleapis.com/v1beta/openai"
    default_key_env = "GEMINI_API_KEY"
    logprobs = False
    chat_only = True
    docs = {
        "OpenAI compatibility (endpoint, reasoning_effort, response_format)": "https://ai.google.dev/gemini-api/docs/openai",
        "thinking (budgets, tokens billed as output)": "https://ai.google.dev/gemini-api/docs/thinking",
        "structured output": "https://ai.google.dev/gemini-api/docs/structured-output",
    }

    def thinking(self, settings: ProviderSettings) -> bool:
        if settings.reasoning_model is not None:
            return settings.reasoning_model
        return bool(THINKING_RE.match(settings.model.rsplit("/", 1)[-1]))

    def root(self, settings: ProviderSettings) -> str:
        return settings.base_url.rstrip("/")  # .../v1beta/openai: no /v1 to add

    def check(self, judge: Mapping[str, Any], path: Any) -> list[Problem]:
        opts = judge.get("backend_options") or {}
        settings = ProviderSettings("", judge.get("model") or "", "google", reasoning_model=opts.get("reasoning_model"))
        return super().check(judge, path) + check_reasoning(judge, path, self.thinking(settings), self.title,
                                                             "thinking model")

    def cap(self, settings: ProviderSettings, request: JudgeRequest) -> dict[str, Any]:
        if not self.thinking(settings):
            return {"max_tokens": request.max_tokens}
        effort, cap = reasoning_cap(request.max_tokens, settings.reasoning_effort, settings.reasoning_tokens, "low")
        return {"max_tokens": cap, "reasoning_effort": effort}

    def schema_fields(self, settings: ProviderSettings, schema: dict) -> dict[str, Any]:
        return {"response_format": {"type": "json_schema", "json_schema": {"name": "judgement", "schema": schema}}}
