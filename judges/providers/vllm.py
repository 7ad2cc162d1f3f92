"""vLLM's OpenAI-compatible server.

Structured output through vLLM's own `structured_outputs: {"json": schema}` extra parameter (the
`guided_json` field it replaces was removed in vLLM 0.12). Logprobs in chat and completions.
"""
from __future__ import annotations

from typing import Any

from judges.providers.base import ProviderSettings
from judges.providers.openai_compat import OpenAICompatible


class VLLM(OpenAICompatible):
    name = "vllm"
    title = "vLLM"
    docs = {
        "structured outputs (structured_outputs.json)": "https://docs.vllm.ai/en/latest/features/structured_outputs/",
        "OpenAI-compatible server, extra parameters":
            "https://docs.vllm.ai/en/latest/serving/openai_compatible_server/",
    }

    def schema_fields(self, settings: ProviderSettings, schema: dict) -> dict[str, Any]:
        return {"structured_outputs": {"json": schema}}
