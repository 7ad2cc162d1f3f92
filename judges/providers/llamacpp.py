"""llama.cpp's server (llama-server) and llama-cpp-python's server.

Structured output as `response_format: {"type": "json_object", "schema": ...}`, which both turn
into a grammar (llama-server also takes the json_schema shape; llama-cpp-python only this one).
llama-cpp-python's schema-to-grammar converter (llama_cpp/llama_grammar.py, 0.3.36) ignores an
integer's minimum and maximum (a "TODO" there), so a 1-5 score came back as 4343434343: an integer
on a scale is sent as the enum of its values, which both converters hold.
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
        return {"response_format": {"type": "json_object", "schema": scales_as_enums(schema)}}


MAX_ENUM = 101  # a scale wider than this keeps its bounds (and the converter's gap)


def scales_as_enums(schema: Any) -> Any:
    """`schema` with every bounded integer {minimum: lo, maximum: hi} as {enum: [lo, ..., hi]}."""
    if isinstance(schema, list):
        return [scales_as_enums(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: scales_as_enums(v) for k, v in schema.items()}
    lo, hi = out.get("minimum"), out.get("maximum")
    if out.get("type") == "integer" and isinstance(lo, int) and isinstance(hi, int) and 0 <= hi - lo < MAX_ENUM:
        out.pop("minimum")
        out.pop("maximum")
        out["enum"] = list(range(lo, hi + 1))
    return out
