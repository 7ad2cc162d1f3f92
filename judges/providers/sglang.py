"""SGLang's OpenAI-compatible server: structured output through `response_format` json_schema."""
from __future__ import annotations

from typing import Any

from judges.providers.base import ProviderSettings
from judges.providers.openai_compat import OpenAICompatible


class SGLang(OpenAICompatible):
    name = "sglang"
    title = "SGLang"
    docs = {
        "structured outputs (response_format json_schema)":
            "https://docs.sglang.ai/advanced_features/structured_outputs.html",
        "OpenAI-compatible API": "https://docs.sglang.ai/basic_usage/openai_api_completions.html",
    }

    def schema_fields(self, settings: ProviderSettings, schema: dict) -> dict[str, Any]:
        return {"response_format": {"type": "json_schema", "json_schema": {"name": "judgement", "schema": schema}}}
