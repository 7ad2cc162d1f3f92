"""llama.cpp's server (llama-server) and llama-cpp-python's server.

Structured output as `response_format: {"type": "json_object", "schema": ...}`, which both turn
into a grammar (llama-server also takes the json_schema shape; llama-cpp-python only this one).
"""
from __future__ import annotations

from typing import Any

from judges.providers.base import ProviderSettings
from judges.providers.openai_compat import OpenAICompatible


class LlamaCpp(OpenAICompatible):
    name = "llamacpp"
    title = "llama.cpp server"
    docs = {
        "server API (response_format with schema, logprobs, n_probs)":
            "https://github.com/ggml-org/llama.cpp/blob/master/tools/server/README.md",
        "llama-cpp-python server (JSON schema mode)":
            "https://llama-cpp-python.readthedocs.io/en/latest/server/",
    }

    def schema_fields(self, settings: ProviderSettings, schema: dict) -> dict[str, Any]:
        return {"response_format": {"type": "json_object", "schema": schema}}
