"""Chat-completions messages (assistant `tool_calls`, `tool` messages) as Anthropic Messages turns.

Anthropic takes tool calls as `tool_use` blocks of an assistant turn and their results as
`tool_result` blocks of the next user turn, every tool_use answered in that very next turn; turns
alternate and the first is the user's; a request holding tool blocks defines its tools. Ids and
names are kept where Anthropic's patterns allow them and made to fit otherwise (same input, same
id), so a trajectory from any source can be sent (docs.anthropic.com, "Tool use": "Handling tool
use and tool result content blocks").
"""
from __future__ import annotations

import json
import re
from typing import Any, Sequence

ID_RE = re.compile(r"[^a-zA-Z0-9_-]")
NAME_MAX = 64
ERROR_MARK = "[tool error]"  # judges.prompts.trajectory writes a failed call's error first


def _id(value: str) -> str:
    return ID_RE.sub("_", value) or "call"


def _name(value: str) -> str:
    return (ID_RE.sub("_", value) or "tool")[:NAME_MAX]


def _input(arguments: str) -> dict:
    try:
        value = json.loads(arguments or "{}")
    except ValueError:
        return {"arguments": arguments}
    return value if isinstance(value, dict) else {"value": value}


def _blocks(m: dict) -> list[dict]:
    role = m["role"]
    if role == "tool":
        text = m.get("content") or ""
        block = {"type": "tool_result", "tool_use_id": _id(m["tool_call_id"]), "content": text}
        if text.startswith(ERROR_MARK):
            block["is_error"] = True
        return [block]
    blocks = [{"type": "text", "text": m["content"]}] if m.get("content") else []
    for c in m.get("tool_calls") or ():
        blocks.append({"type": "tool_use", "id": _id(c["id"]), "name": _name(c["function"]["name"]),
                       "input": _input(c["function"]["arguments"])})
    return blocks


def turns(messages: Sequence[dict]) -> tuple[list[dict], list[dict]]:
    """(Anthropic turns of the non-system messages, the tools their tool_use blocks name)."""
    out: list[dict] = []
    tools: dict[str, dict] = {}
    for m in messages:
        if m["role"] == "system":
            continue
        role = "user" if m["role"] == "tool" else m["role"]
        blocks = _blocks(m)
        for b in blocks:
            if b["type"] == "tool_use" and b["name"] not in tools:
                tools[b["name"]] = {"name": b["name"], "description": "A tool the judged agent called.",
                                    "input_schema": {"type": "object"}}
        if not blocks:
            continue
        if out and out[-1]["role"] == role:
            # results first in a user turn: Anthropic wants tool_result blocks before any text there
            merged = out[-1]["content"] + blocks
            out[-1]["content"] = sorted(merged, key=lambda b: b["type"] != "tool_result") if role == "user" else merged
        else:
            out.append({"role": role, "content": blocks})
    return out, list(tools.values())
