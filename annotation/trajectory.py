"""Agent trajectories: the `trajectory` content kind of items (docs/item-format.md "The trajectory kind").

Pure: no Django. The canonical form is OpenAI chat-completions messages (most trace formats map to it),
with two additions that the source formats carry and chat-completions lacks: a reasoning summary per
assistant message and a `meta` object per step (model, tokens, latency, error, span id).

    {"messages": [
       {"role": "system", "content": "You are a travel agent ..."},
       {"role": "user", "content": "Book me a train to Lyon on Friday."},
       {"role": "assistant", "content": null, "reasoning": "I need the timetable first.",
        "tool_calls": [{"id": "call_1", "type": "function",
                        "function": {"name": "search_trains", "arguments": "{\"to\": \"Lyon\"}"}}],
        "meta": {"model": "gpt-4o", "input_tokens": 812, "output_tokens": 40, "latency_ms": 930,
                 "span_id": "a1b2c3d4e5f60718"}},
       {"role": "tool", "tool_call_id": "call_1", "content": "{\"trains\": [...]}",
        "meta": {"latency_ms": 210, "error": "HTTP 503 from timetable service"}},
       {"role": "assistant", "content": "The 9:04 TGV is the first train ..."}],
     "trace_id": "4bf92f3577b34da6a3ce929d0e0e4736",
     "meta": {"agent": "travel-bot 0.3"}}

A bare JSON list of messages is accepted as {"messages": [...]}. `parse` validates and returns the
canonical dict (tool-call arguments as JSON text, as OpenAI sends them; an object given there is
encoded); every problem names the step and field, e.g. `messages[3].tool_calls[0].function.arguments`.

Steps are what per-step rubrics rate (`steps`): each message is a step of kind `system`, `user`,
`assistant` or `tool_result`, and each tool call one of kind `tool_call`. A step's key is positional
and short (it is part of a stored rating's criterion, `<criterion>@<step>`): `m<index>` for the
message at that index of `messages`, `m<index>.t<k>` for its k-th tool call. Exports add the tool
call id and the source's span id next to it.

Model names are analysis data, never raters' (blinding): `blind` drops `meta.model` (and the
provider and system name fields) from every step before content reaches an annotator.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

ROLES = ("system", "developer", "user", "assistant", "tool")
STEP_KINDS = ("system", "user", "assistant", "tool_call", "tool_result")
# meta keys with a known meaning (any other key is kept as given); typed so a report can sum them.
META_NUMBERS = ("input_tokens", "output_tokens", "latency_ms")
META_TEXTS = ("model", "provider", "error", "span_id", "parent_span_id", "started_at", "finish_reason")
# What identifies the system that produced a step: hidden from raters.
BLINDED_META = ("model", "provider", "system_fingerprint")
MAX_STEPS = 2000


class TrajectoryError(ValueError):
    """The content is not a trajectory; `field` is the path of the first problem (e.g. messages[2].role)."""

    def __init__(self, field: str, message: str):
        self.field, self.message = field, message
        super().__init__(f"{field}: {message}" if field else message)


@dataclass(frozen=True)
class Step:
    key: str          # m<index> or m<index>.t<k>
    kind: str         # one of STEP_KINDS
    index: int        # the message's position in `messages`
    message: dict
    call: dict | None = None  # the tool call, for kind tool_call
    span_id: str = ""


def parse(content: str | dict | list) -> dict:
    """Validated canonical trajectory from JSON text or an already-decoded value; raises TrajectoryError."""
    data = content
    if isinstance(content, str):
        try:
            data = json.loads(content)
        except (ValueError, RecursionError) as exc:
            raise TrajectoryError("", f"not valid JSON ({exc})") from None
    if isinstance(data, list):
        data = {"messages": data}
    if not isinstance(data, dict):
        raise TrajectoryError("", "must be an object with `messages` (or a list of messages)")
    unknown = set(data) - {"messages", "trace_id", "meta"}
    if unknown:
        raise TrajectoryError(sorted(unknown)[0], f"unknown field(s) {sorted(unknown)}; "
                                                  "a trajectory has messages, trace_id, meta")
    messages = data.get("messages")
    if not isinstance(messages, list) or not messages:
        raise TrajectoryError("messages", "required, a non-empty list of messages")
    if len(messages) > MAX_STEPS:
        raise TrajectoryError("messages", f"at most {MAX_STEPS} messages")
    out: dict = {"messages": []}
    if "trace_id" in data:
        out["trace_id"] = _text(data["trace_id"], "trace_id")
    if "meta" in data:
        if not isinstance(data["meta"], dict):
            raise TrajectoryError("meta", "must be an object")
        out["meta"] = data["meta"]
    calls_open: dict[str, str] = {}  # tool call id -> where it was made
    for n, message in enumerate(messages):
        out["messages"].append(_message(message, f"messages[{n}]", calls_open))
    return out


def _text(value, where: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise TrajectoryError(where, "must be a non-empty string")
    return value


def _content(value, where: str, *, required: bool) -> str | None:
    """A message's content: text, null, or OpenAI's list of text parts (joined into text)."""
    if value is None or value == "":
        if required:
            raise TrajectoryError(where, "required: text (or a list of text parts)")
        return None
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        texts = []
        for n, part in enumerate(value):
            if not isinstance(part, dict) or not isinstance(part.get("text"), str):
                raise TrajectoryError(f"{where}[{n}]", "a content part must be an object with `text` "
                                                       "(images and audio are not supported)")
            texts.append(part["text"])
        return "\n".join(texts)
    raise TrajectoryError(where, "must be text, null or a list of text parts")


def _meta(value, where: str) -> dict:
    if not isinstance(value, dict):
        raise TrajectoryError(where, "must be an object")
    for key in META_NUMBERS:
        if key in value and value[key] is not None and (
                isinstance(value[key], bool) or not isinstance(value[key], (int, float)) or value[key] < 0):
            raise TrajectoryError(f"{where}.{key}", "must be a number >= 0")
    for key in META_TEXTS:
        if key in value and value[key] is not None and not isinstance(value[key], str):
            raise TrajectoryError(f"{where}.{key}", "must be a string")
    return value


def _message(message, where: str, calls_open: dict[str, str]) -> dict:
    if not isinstance(message, dict):
        raise TrajectoryError(where, "must be an object with role and content")
    role = message.get("role")
    if role not in ROLES:
        raise TrajectoryError(f"{where}.role", f"must be one of {list(ROLES)}, not {role!r}")
    known = {"role", "content", "name", "meta"}
    if role == "assistant":
        known |= {"tool_calls", "reasoning", "refusal"}
    if role == "tool":
        known |= {"tool_call_id"}
    unknown = set(message) - known
    if unknown:
        raise TrajectoryError(f"{where}.{sorted(unknown)[0]}", f"not a field of a {role} message "
                                                               f"(allowed: {sorted(known)})")
    out: dict = {"role": role}
    if "name" in message:
        out["name"] = _text(message["name"], f"{where}.name")
    tool_calls = message.get("tool_calls") or []
    out["content"] = _content(message.get("content"), f"{where}.content",
                              required=role != "assistant" or not (tool_calls or message.get("refusal")))
    if role == "assistant":
        if "reasoning" in message and message["reasoning"] is not None:
            out["reasoning"] = _text(message["reasoning"], f"{where}.reasoning")
        if message.get("refusal") is not None:
            out["refusal"] = _text(message["refusal"], f"{where}.refusal")
        if not isinstance(tool_calls, list):
            raise TrajectoryError(f"{where}.tool_calls", "must be a list")
        if tool_calls:
            out["tool_calls"] = [_tool_call(c, f"{where}.tool_calls[{k}]", calls_open)
                                 for k, c in enumerate(tool_calls)]
    if role == "tool":
        call_id = message.get("tool_call_id")
        if not isinstance(call_id, str) or not call_id:
            raise TrajectoryError(f"{where}.tool_call_id", "required: the id of the tool call this answers")
        if call_id not in calls_open:
            raise TrajectoryError(f"{where}.tool_call_id", f"{call_id!r} answers no earlier tool call "
                                                           "(or one already answered)")
        del calls_open[call_id]
        out["tool_call_id"] = call_id
    if "meta" in message:
        out["meta"] = _meta(message["meta"], f"{where}.meta")
    return out


def _tool_call(call, where: str, calls_open: dict[str, str]) -> dict:
    if not isinstance(call, dict):
        raise TrajectoryError(where, "must be an object with id, type and function")
    call_id = _text(call.get("id"), f"{where}.id")
    if call_id in calls_open:
        raise TrajectoryError(f"{where}.id", f"duplicate tool call id {call_id!r} (also {calls_open[call_id]})")
    if call.get("type", "function") != "function":
        raise TrajectoryError(f"{where}.type", "must be \"function\"")
    function = call.get("function")
    if not isinstance(function, dict):
        raise TrajectoryError(f"{where}.function", "required: {\"name\", \"arguments\"}")
    name = _text(function.get("name"), f"{where}.function.name")
    arguments = function.get("arguments", "{}")
    if isinstance(arguments, (dict, list)):
        arguments = json.dumps(arguments, ensure_ascii=False)
    elif isinstance(arguments, str):
        try:
            json.loads(arguments or "{}")
        except ValueError as exc:
            raise TrajectoryError(f"{where}.function.arguments", f"must be JSON text ({exc})") from None
    else:
        raise TrajectoryError(f"{where}.function.arguments", "must be JSON text or an object")
    calls_open[call_id] = where
    out = {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}
    if "meta" in call:
        out["meta"] = _meta(call["meta"], f"{where}.meta")
    return out


def dumps(trajectory: dict) -> str:
    """The stored text of a canonical trajectory."""
    return json.dumps(trajectory, ensure_ascii=False, separators=(",", ":"))


def normalise(content: str | dict | list) -> str:
    """Stored text for imported content: validated, canonical; raises TrajectoryError."""
    return dumps(parse(content))


def steps(trajectory: dict) -> list[Step]:
    """The rateable steps in order: each message, and each tool call right after its message."""
    out: list[Step] = []
    for n, message in enumerate(trajectory["messages"]):
        role = message["role"]
        kind = {"tool": "tool_result", "developer": "system"}.get(role, role)
        meta = message.get("meta") or {}
        out.append(Step(f"m{n}", kind, n, message, span_id=str(meta.get("span_id") or "")))
        for k, call in enumerate(message.get("tool_calls") or ()):
            call_meta = call.get("meta") or {}
            out.append(Step(f"m{n}.t{k}", "tool_call", n, message, call,
                            span_id=str(call_meta.get("span_id") or meta.get("span_id") or "")))
    return out


def shown_text(text: str) -> tuple[str, bool]:
    """(text as raters see it, is_json): a JSON object or list indented by 2, anything else as it is."""
    try:
        value = json.loads(text)
    except (ValueError, TypeError, RecursionError):
        return text, False
    if not isinstance(value, (dict, list)):
        return text, False
    return json.dumps(value, indent=2, ensure_ascii=False), True


def step_text(step: Step) -> str:
    """The text of a step that highlights index: a tool call's arguments or a message's content, as
    shown (shown_text); "" for a step without text (an assistant turn that only calls tools)."""
    raw = step.call["function"]["arguments"] if step.call else (step.message.get("content") or "")
    return shown_text(raw)[0] if raw else ""


def step_keys(content: str, kinds: tuple[str, ...] | list[str] | None = None) -> list[str]:
    """Keys of the steps of stored content, optionally only those of the given kinds."""
    return [s.key for s in steps(parse(content)) if kinds is None or s.kind in kinds]


def results_by_call(trajectory: dict) -> dict[str, dict]:
    """tool call id -> the tool message answering it."""
    return {m["tool_call_id"]: m for m in trajectory["messages"] if m["role"] == "tool"}


def blind(content: str) -> str:
    """Stored trajectory text without what names the system (meta.model ...), for annotators' eyes.
    Content that does not parse is returned as it is (it was validated at import)."""
    try:
        data = parse(content)
    except TrajectoryError:
        return content
    for message in data["messages"]:
        if message["role"] == "assistant":
            message.pop("name", None)  # an assistant's `name` is often the agent's or model's
        for holder in [message, *(message.get("tool_calls") or ())]:
            if holder.get("meta"):
                holder["meta"] = {k: v for k, v in holder["meta"].items() if k not in BLINDED_META}
    # The trajectory's own meta is free-form (agent names, versions): raters get none of it.
    data = {"messages": data["messages"]}
    return dumps(data)


def rater_content(content: str, kind: str) -> str:
    """Content as an annotator's API response carries it: a trajectory blinded, anything else as stored."""
    return blind(content) if kind == "trajectory" else content


def rater_excerpt(content: str, kind: str) -> str:
    """A line to recognise content by: for a trajectory, its first user message (never its JSON)."""
    if kind != "trajectory":
        return content
    try:
        data = parse(content)
    except TrajectoryError:
        return ""
    return next((m["content"] for m in data["messages"] if m["role"] == "user" and m.get("content")), "")
