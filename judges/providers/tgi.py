"""Hugging Face Text Generation Inference (Messages API, /v1/chat/completions).

Structured output in TGI's own `response_format: {"type": "json_object", "value": schema}` (its
grammar, compiled by outlines); at most 5 top logprobs unless the server raises
--max-top-n-tokens.
"""
from __future__ import annotations

from typing import Any, Mapping

from judges.providers.base import Problem, ProviderSettings
from judges.providers.openai_compat import OpenAICompatible


class TGI(OpenAICompatible):
    name = "tgi"
    title = "TGI"
    max_top_logprobs = 5
    docs = {
        "guidance (response_format json with value)":
            "https://huggingface.co/docs/text-generation-inference/basic_tutorials/using_guidance",
        "Messages API": "https://huggingface.co/docs/text-generation-inference/messages_api",
        "launcher: --max-top-n-tokens (default 5)":
            "https://huggingface.co/docs/text-generation-inference/reference/launcher",
    }

    def check(self, judge: Mapping[str, Any], path: Any) -> list[Problem]:
        problems = super().check(judge, path)
        k = (judge.get("method_options") or {}).get("top_logprobs")
        if isinstance(k, int) and k > self.max_top_logprobs:
            problems.append((path("method_options.top_logprobs"), f"TGI returns at most {self.max_top_logprobs} top "
                                                                  f"logprobs by default; set top_logprobs <= "
                                                                  f"{self.max_top_logprobs}"))
        return problems

    def schema_fields(self, settings: ProviderSettings, schema: dict) -> dict[str, Any]:
        return {"response_format": {"type": "json_object", "value": schema}}
