"""Counting a prompt's input tokens for the run estimate. No Django.

With the model's own tokenizer where one is on this machine: `method_options.tokenizer` (a
tokenizer.json file, or a directory / model id that transformers finds locally), else the
model of a `backend: transformers` judge. Nothing is downloaded (local_files_only). Without
one, an approximation that says so: about four characters per token, the rule of thumb
OpenAI gives for English text (help.openai.com, "What are tokens and how to count them").
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

CHARS_PER_TOKEN = 4.0
MESSAGE_OVERHEAD = 4  # role markers and separators per chat message, when no chat template tells


def message_text(m: Mapping[str, Any]) -> str:
    """What a chat message asks the model to read: its text and, for a judged trajectory's
    assistant turn, the tool calls' names and arguments."""
    calls = " ".join(f"{c['function']['name']} {c['function']['arguments']}" for c in m.get("tool_calls") or ())
    return f"{m.get('content') or ''} {calls}" if calls else (m.get("content") or "")


@dataclass(frozen=True)
class TokenCounter:
    count: Callable[[Sequence[Mapping[str, str]] | None, str | None], int]
    exact: bool
    source: str  # what counted: the tokenizer's path/id, or the approximation's rule


def approximate(messages: Sequence[Mapping[str, str]] | None, prompt: str | None) -> int:
    if messages is None:
        return math.ceil(len(prompt or "") / CHARS_PER_TOKEN)
    return sum(math.ceil(len(message_text(m)) / CHARS_PER_TOKEN) + MESSAGE_OVERHEAD for m in messages)


APPROXIMATE = TokenCounter(approximate, False, f"approximation: ~{CHARS_PER_TOKEN:g} characters per token "
                                               f"(+{MESSAGE_OVERHEAD} per message); no local tokenizer")


def _from_tokenizer_json(path: str) -> TokenCounter:
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(path)

    def count(messages, prompt) -> int:
        if messages is None:
            return len(tok.encode(prompt or "").ids)
        return sum(len(tok.encode(message_text(m)).ids) + MESSAGE_OVERHEAD for m in messages)

    return TokenCounter(count, True, f"tokenizer {path}")


def _from_transformers(name: str) -> TokenCounter:
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(name, local_files_only=True)
    templated = bool(getattr(tok, "chat_template", None))

    def count(messages, prompt) -> int:
        if messages is None:
            return len(tok(prompt or "")["input_ids"])
        if templated:
            ids = tok.apply_chat_template([dict(m) for m in messages], tokenize=True, add_generation_prompt=True)
            return len(ids["input_ids"] if hasattr(ids, "keys") else ids)  # transformers 5 returns a BatchEncoding
        return sum(len(tok(message_text(m))["input_ids"]) + MESSAGE_OVERHEAD for m in messages)

    return TokenCounter(count, True, f"tokenizer {name}" + (" (its chat template)" if templated else ""))


def token_counter(config: Mapping[str, Any]) -> TokenCounter:
    """The most exact counter available here for this judge; never downloads."""
    name = (config.get("method_options") or {}).get("tokenizer")
    if not name and config.get("backend") == "transformers":
        name = config.get("model")
    if not name:
        return APPROXIMATE
    try:
        if str(name).endswith(".json") and Path(name).is_file():
            return _from_tokenizer_json(str(name))
        return _from_transformers(str(name))
    except (ImportError, OSError, ValueError) as exc:
        return TokenCounter(approximate, False, f"{APPROXIMATE.source} ({name} could not be loaded here: "
                                                f"{type(exc).__name__})")
