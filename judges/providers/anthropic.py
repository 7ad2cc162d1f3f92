"""Anthropic through its native Messages API (POST /v1/messages).

`x-api-key` and `anthropic-version` headers; the system prompt is the top-level `system`, never a
message; `max_tokens` is required; answers are content blocks; usage is `input_tokens` /
`output_tokens`; `stop_reason: max_tokens` is a cut-off answer. No logprobs, no seed, no `n`.
Extended thinking (`sampling.reasoning_tokens` >= 1024) becomes `thinking.budget_tokens`, added to
the cap, and rules out a temperature. Structured output is a forced tool call: the tool's
`input_schema` is the answer schema and the `tool_use` block's `input` is the answer.
"""
from __future__ import annotations

import json
from typing import Any, Mapping

from judges.backends.base import JudgeRequest, JudgeResponse
from judges.backends.errors import MalformedResponseError
from judges.providers.base import Problem, Provider, ProviderSettings
from judges.providers import anthropic_turns

API_VERSION = "2023-06-01"
TOOL_NAME = "record_judgement"
MIN_THINKING = 1024
STOP_REASONS = {"max_tokens": "length", "end_turn": "stop", "stop_sequence": "stop", "tool_use": "stop",
                "refusal": "refusal", "pause_turn": "length", "model_context_window_exceeded": "length"}


class Anthropic(Provider):
    name = "anthropic"
    title = "Anthropic"
    default_endpoint = "https://api.anthropic.com/v1"
    default_key_env = "ANTHROPIC_API_KEY"
    logprobs = False
    docs = {
        "Messages API (max_tokens required, top-level system, content blocks, usage, stop_reason)":
            "https://docs.anthropic.com/en/api/messages",
        "versions header": "https://docs.anthropic.com/en/api/versioning",
        "extended thinking (budget_tokens >= 1024, < max_tokens; no temperature)":
            "https://docs.anthropic.com/en/docs/build-with-claude/extended-thinking",
        "tool use (forced tool_choice, input_schema)": "https://docs.anthropic.com/en/docs/agents-and-tools/tool-use/overview",
        "errors (429, 529 overloaded)": "https://docs.anthropic.com/en/api/errors",
    }

    def check(self, judge: Mapping[str, Any], path: Any) -> list[Problem]:
        problems = super().check(judge, path)
        sampling = judge.get("sampling") or {}
        if "max_tokens" not in sampling:
            problems.append((path("sampling.max_tokens"), "the Messages API requires max_tokens: set "
                                                          "sampling.max_tokens (the visible answer's cap)"))
        if sampling.get("temperature", 0) > 1:
            problems.append((path("sampling.temperature"), "Anthropic takes a temperature from 0 to 1"))
        if "top_p" in sampling:
            problems.append((path("sampling.top_p"), "recent Claude models refuse temperature and top_p together, "
                                                     "and Concord always sends a temperature: remove sampling.top_p"))
        if sampling.get("seed") is not None:
            problems.append((path("sampling.seed"), "the Messages API has no seed; remove sampling.seed"))
        if "reasoning_effort" in sampling:
            problems.append((path("sampling.reasoning_effort"), "Anthropic sizes thinking by tokens: set "
                                                                "sampling.reasoning_tokens (>= 1024) instead"))
        thinking = sampling.get("reasoning_tokens")
        if thinking:
            if thinking < MIN_THINKING:
                problems.append((path("sampling.reasoning_tokens"), f"extended thinking needs a budget of at least "
                                                                    f"{MIN_THINKING} tokens (or 0 for none)"))
            if "temperature" in sampling:
                problems.append((path("sampling.temperature"), "extended thinking refuses a temperature; remove "
                                                               "sampling.temperature or sampling.reasoning_tokens"))
            if judge.get("structured_output"):
                problems.append((path("structured_output"), "structured output is a forced tool call, which "
                                                            "extended thinking refuses; drop one of the two"))
        mo = judge.get("method_options") or {}
        if judge.get("method") == "self_consistency" and not mo.get("separate_requests"):
            problems.append((path("method_options.separate_requests"), "the Messages API returns one answer per "
                                                                       "call (no n); set separate_requests: true"))
        return problems

    def url(self, settings: ProviderSettings, request: JudgeRequest) -> str:
        return self.models_url(settings).removesuffix("/models") + "/messages"

    def models_url(self, settings: ProviderSettings) -> str:
        root = settings.base_url.rstrip("/")
        return (root if root.endswith("/v1") else root + "/v1") + "/models"

    def headers(self, settings: ProviderSettings, api_key: str | None) -> dict[str, str]:
        headers = {"Content-Type": "application/json", "anthropic-version": API_VERSION, **settings.own_headers()}
        if api_key:
            headers["x-api-key"] = api_key
        return headers

    def body(self, settings: ProviderSettings, request: JudgeRequest) -> dict[str, Any]:
        messages = list(request.messages) if request.messages is not None else [{"role": "user", "content": request.prompt}]
        system = "\n\n".join(m["content"] for m in messages if m["role"] == "system")
        tools: list[dict] = []
        if any(m.get("tool_calls") or m["role"] == "tool" for m in messages):  # a trajectory being judged
            turns, tools = anthropic_turns.turns(messages)
        else:
            turns = [{"role": m["role"], "content": [{"type": "text", "text": m["content"]}]}
                     for m in messages if m["role"] != "system"]
        thinking = settings.reasoning_tokens or 0
        body: dict[str, Any] = {"model": settings.model, "max_tokens": request.max_tokens + thinking}
        if system:
            body["system"] = system
        body["messages"] = turns
        if thinking:
            body["thinking"] = {"type": "enabled", "budget_tokens": thinking}
        else:
            body["temperature"] = request.temperature
        if request.stop:
            body["stop_sequences"] = list(request.stop)
        if tools:  # the agent's tools, named so its tool_use blocks are valid; the judge calls none
            body["tools"] = tools
            body["tool_choice"] = {"type": "none"}
        if request.json_schema is not None:
            body["tools"] = [*tools, {"name": TOOL_NAME, "description": "Record the judgement in the required "
                                                                       "fields.", "input_schema": request.json_schema}]
            body["tool_choice"] = {"type": "tool", "name": TOOL_NAME}
        return body

    def read(self, data: Any, model: str) -> JudgeResponse:
        try:
            if data.get("type") != "message":
                raise ValueError(f"type {data.get('type')!r} is not 'message'")
            text = ""
            for block in data["content"]:
                if block["type"] == "text":
                    text += block["text"]
                elif block["type"] == "tool_use" and block.get("name") == TOOL_NAME:
                    text = json.dumps(block["input"], ensure_ascii=False)
            usage = data.get("usage") or {}
            stop = data.get("stop_reason") or ""
            return JudgeResponse(texts=[text], finish_reasons=[STOP_REASONS.get(stop, stop)],
                                 input_tokens=int(usage.get("input_tokens") or 0)
                                 + int(usage.get("cache_read_input_tokens") or 0)
                                 + int(usage.get("cache_creation_input_tokens") or 0),
                                 output_tokens=int(usage.get("output_tokens") or 0),
                                 model=data.get("model") or model, raw=data)
        except (KeyError, TypeError, AttributeError, ValueError) as exc:
            raise MalformedResponseError(f"unexpected Messages API response: {exc!r}") from exc

    def error(self, status: int, text: str, retry_after: float | None = None):
        if status == 529:  # overloaded_error: Anthropic's "try again later"
            status = 503
        return super().error(status, text, retry_after)
