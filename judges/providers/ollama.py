"""Ollama through its OpenAI-compatible endpoint (/v1).

Its compatibility layer documents `response_format` (held to a JSON schema by the same grammar as
the native `format` field) and logprobs; a raw prompt goes to /v1/completions.
"""
from __future__ import annotations

from typing import Any

from judges.providers.base import ProviderSettings
from judges.providers.openai_compat import OpenAICompatible


class Ollama(OpenAICompatible):
    name = "ollama"
    title = "Ollama"
    default_endpoint = "http://127.0.0.1:11434/v1"
    docs = {
        "OpenAI compatibility (supported fields)": "https://docs.ollama.com/api/openai-compatibility",
        "structured outputs (format / response_format)": "https://docs.ollama.com/capabilities/structured-outputs",
    }

    def schema_fields(self, settings: ProviderSettings, schema: dict) -> dict[str, Any]:
        return {"response_format": {"type": "json_schema", "json_schema": {"name": "judgement", "schema": schema}}}
