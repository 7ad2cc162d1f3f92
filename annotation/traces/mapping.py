"""The one mapping from what the sources record to the trajectory shape (annotation.trajectory).

Pure: no Django. Every source gives, per trace, model calls (`LlmCall`: the messages sent, the
messages returned, the step's metadata) and tool runs (`ToolRun`); `merge` turns them into one
conversation: each call's inputs repeat the conversation so far, so only the inputs not already
there are appended, then its outputs; a tool run's result becomes the tool message after the call
that asked for it (or adds its timing, error and span id to the tool message the next model call
already carried). OpenTelemetry's GenAI message form (`parts`) and the OpenInference and
Inspect AI forms are read into OpenAI messages here too, so adapting to a change of shape is one
edit in this module.
"""

from __future__ import annotations

import json
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timezone

from annotation import trajectory

# OpenTelemetry GenAI semantic conventions (gen-ai-spans, gen-ai-events), the attributes read.
INPUT_MESSAGES = "gen_ai.input.messages"
OUTPUT_MESSAGES = "gen_ai.output.messages"
SYSTEM_INSTRUCTIONS = "gen_ai.system_instructions"
OPERATION = "gen_ai.operation.name"
EVALUATION_EVENT = "gen_ai.evaluation.result"
EVALUATION_LABEL = "gen_ai.evaluation.score.label"
MAX_TEXT = 200_000  # characters of one message kept; longer ones are cut with a note


class TraceFormatError(ValueError):
    """A source record could not be read; `where` names it (line, span, field)."""

    def __init__(self, where: str, message: str):
        self.where, self.message = where, message
        super().__init__(f"{where}: {message}" if where else message)


@contextmanager
def reading(where: str):
    """Read one record: a value of a type no reader expects (a number where a message is due, ...)
    is refused naming the record, as every other problem is, instead of failing the request."""
    try:
        yield
    except TraceFormatError:
        raise
    except (TypeError, AttributeError, KeyError, IndexError, ValueError) as exc:
        raise TraceFormatError(where, f"a value of an unexpected type or shape ({type(exc).__name__}: {exc})") from None


@dataclass
class LlmCall:
    start: int  # for ordering: nanoseconds, or any increasing number
    inputs: list[dict]
    outputs: list[dict]
    meta: dict = field(default_factory=dict)


@dataclass
class ToolRun:
    start: int
    call_id: str
    name: str
    arguments: str = "{}"
    result: str | None = None
    meta: dict = field(default_factory=dict)


@dataclass
class Span:
    """One span as OTLP (JSON or protobuf) and the trace exports carry it, decoded."""

    trace_id: str
    span_id: str
    parent_id: str
    name: str
    start_ns: int
    end_ns: int
    attributes: dict
    error: str | None = None  # the status message (or "error") of a span whose status is ERROR
    events: list[tuple[str, dict]] = field(default_factory=list)
    resource: dict = field(default_factory=dict)
    where: str = ""


def iso(ns: int) -> str:
    return datetime.fromtimestamp(ns / 1e9, tz=timezone.utc).isoformat().replace("+00:00", "Z")


def clean_meta(meta: dict) -> dict:
    return {k: v for k, v in meta.items() if v is not None and v != ""}


def text_of(value) -> str:
    """Text of a result or content that may be any JSON value."""
    if value is None:
        return ""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    if len(text) > MAX_TEXT:
        return text[:MAX_TEXT] + f"\n[... {len(text) - MAX_TEXT} more characters not imported]"
    return text


def arguments_text(value) -> str:
    if value is None or value == "":
        return "{}"
    if isinstance(value, str):
        try:
            json.loads(value)
            return value
        except ValueError:
            return json.dumps({"input": value}, ensure_ascii=False)  # free text where JSON is due
    return json.dumps(value, ensure_ascii=False)


def json_value(value, where: str):
    """An attribute holding JSON: OTLP carries it as a string (the SDKs' form) or structured."""
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError as exc:
            raise TraceFormatError(where, f"not valid JSON ({exc})") from None
    return value


# --- OpenTelemetry GenAI messages (parts) -> OpenAI messages ---------------------------------------


def genai_messages(value, where: str) -> list[dict]:
    """gen_ai.input.messages / gen_ai.output.messages as OpenAI messages. Messages already in the
    OpenAI form (content, tool_calls) are taken as they are: some instrumentations write those."""
    data = json_value(value, where)
    if not isinstance(data, list):
        raise TraceFormatError(where, "must be a list of messages")
    out: list[dict] = []
    for n, message in enumerate(data):
        here = f"{where}[{n}]"
        if not isinstance(message, dict) or not isinstance(message.get("role"), str):
            raise TraceFormatError(here, "a message must be an object with a role")
        if "parts" not in message:
            out.extend(openai_message(message, here))
            continue
        parts = message["parts"]
        if not isinstance(parts, list):
            raise TraceFormatError(f"{here}.parts", "must be a list")
        out.extend(_from_parts(message, parts, here))
    return out


def _from_parts(message: dict, parts: list, where: str) -> list[dict]:
    role = message["role"]
    texts, reasoning, calls, results = [], [], [], []
    for k, part in enumerate(parts):
        here = f"{where}.parts[{k}]"
        if not isinstance(part, dict) or not isinstance(part.get("type"), str):
            raise TraceFormatError(here, "a part must be an object with a type")
        kind = part["type"]
        if kind == "text":
            texts.append(text_of(part.get("content")))
        elif kind == "reasoning":
            reasoning.append(text_of(part.get("content")))
        elif kind == "tool_call":
            if not isinstance(part.get("name"), str) or not part["name"]:
                raise TraceFormatError(f"{here}.name", "a tool call needs the tool's name")
            calls.append({"id": str(part.get("id") or ""), "type": "function",
                          "function": {"name": part["name"], "arguments": arguments_text(part.get("arguments"))}})
        elif kind == "tool_call_response":
            results.append({"role": "tool", "tool_call_id": str(part.get("id") or ""),
                            "content": text_of(part.get("response")) or "(empty)"})
        else:  # blob, file, uri: media are not shown to raters; say that something was there
            texts.append(f"[{kind} part not imported]")
    if results:
        return results
    out: dict = {"role": role if role in trajectory.ROLES else "user", "content": "\n".join(texts) or None}
    if role == "assistant":
        if calls:
            out["tool_calls"] = calls
        if reasoning:
            out["reasoning"] = "\n".join(reasoning)
        if message.get("finish_reason"):
            out["meta"] = {"finish_reason": str(message["finish_reason"])}
    elif out["content"] is None:
        out["content"] = "(empty)"
    return [out]


def openai_message(message: dict, where: str) -> list[dict]:
    """An OpenAI chat message as the trajectory keeps it (only its known fields)."""
    role = message.get("role")
    if role not in trajectory.ROLES:
        raise TraceFormatError(f"{where}.role", f"must be one of {list(trajectory.ROLES)}, not {role!r}")
    out: dict = {"role": role, "content": _content(message.get("content"))}
    if role == "assistant":
        calls = []
        for k, call in enumerate(message.get("tool_calls") or ()):
            function = call.get("function") if isinstance(call, dict) else None
            if not isinstance(function, dict) or not function.get("name"):
                raise TraceFormatError(f"{where}.tool_calls[{k}].function.name", "required")
            calls.append({"id": str(call.get("id") or ""), "type": "function",
                          "function": {"name": function["name"],
                                       "arguments": arguments_text(function.get("arguments"))}})
        if calls:
            out["tool_calls"] = calls
        for key in ("reasoning", "reasoning_content"):
            if message.get(key):
                out["reasoning"] = text_of(message[key])
        if message.get("refusal"):
            out["refusal"] = text_of(message["refusal"])
    elif role == "tool":
        out["tool_call_id"] = str(message.get("tool_call_id") or "")
        out["content"] = out["content"] or "(empty)"
    elif out["content"] is None:
        out["content"] = "(empty)"
    if message.get("name") and isinstance(message["name"], str):
        out["name"] = message["name"]
    return [out]


def _content(value) -> str | None:
    if value is None or value == "":
        return None
    if isinstance(value, list):  # content parts: keep the text ones, name the others
        texts = []
        for part in value:
            if isinstance(part, dict) and isinstance(part.get("text"), str):
                texts.append(part["text"])
            elif isinstance(part, str):
                texts.append(part)
            elif isinstance(part, dict):
                texts.append(f"[{part.get('type', 'non-text')} part not imported]")
        return text_of("\n".join(texts)) or None
    return text_of(value)


def system_instructions(value, where: str) -> dict | None:
    data = json_value(value, where)
    if isinstance(data, str):
        return {"role": "system", "content": data}
    if not isinstance(data, list):
        raise TraceFormatError(where, "must be a list of parts")
    texts = [text_of(p.get("content")) for p in data if isinstance(p, dict) and p.get("type") == "text"]
    return {"role": "system", "content": "\n".join(texts)} if texts else None


# --- merging calls and tool runs into one conversation ----------------------------------------------


def _key(message: dict) -> tuple:
    calls = tuple((c["id"], c["function"]["name"]) for c in message.get("tool_calls") or ())
    return (message["role"], (message.get("content") or "").strip(), calls, message.get("tool_call_id", ""))


def merge(calls: list[LlmCall], tools: list[ToolRun], *, where: str = "") -> list[dict]:
    """One conversation from a trace's model calls and tool runs (see the module's docstring)."""
    messages: list[dict] = []
    for call in sorted(calls, key=lambda c: c.start):
        position = 0  # inputs match the conversation so far in order; what does not match is new
        for message in call.inputs:
            key = _key(message)
            found = next((i for i in range(position, len(messages)) if _key(messages[i]) == key), None)
            if found is None:
                messages.append(message)
                position = len(messages)
            else:
                position = found + 1
        outputs = [m for m in call.outputs if m["role"] == "assistant"][:1]  # the first choice
        for message in outputs:
            meta = clean_meta({**call.meta, **(message.get("meta") or {})})
            messages.append({**message, **({"meta": meta} if meta else {})})
    name_calls(messages)
    _place_tool_runs(messages, sorted(tools, key=lambda t: t.start))
    if not messages:
        raise TraceFormatError(where, "holds no model call or tool call to make a trajectory of")
    return messages


def name_calls(messages: list[dict]) -> None:
    """Tool calls without an id (some sources omit it) get one, and their results follow them."""
    n = 0
    for message in messages:
        for call in message.get("tool_calls") or ():
            if not call["id"]:
                n += 1
                call["id"] = f"call_{n}"


def _place_tool_runs(messages: list[dict], tools: list[ToolRun]) -> None:
    runs_by_id = {t.call_id: t for t in tools if t.call_id}
    unmatched = [t for t in tools if not t.call_id or t.call_id not in _call_ids(messages)]
    # A tool message without a known call id answers the oldest open call of the same tool name.
    for message in messages:
        if message["role"] == "tool" and not message["tool_call_id"]:
            message["tool_call_id"] = _oldest_open(messages, message) or "call_unknown"
    answered = {m["tool_call_id"]: m for m in messages if m["role"] == "tool"}
    i = 0
    while i < len(messages):
        message = messages[i]
        insert_at = i + 1
        while insert_at < len(messages) and messages[insert_at]["role"] == "tool":
            insert_at += 1
        for call in message.get("tool_calls") or ():
            run = runs_by_id.get(call["id"])
            if run is None:
                run = next((t for t in unmatched if t.name == call["function"]["name"]), None)
                if run is not None:
                    unmatched.remove(run)
            if call["id"] in answered:
                if run is not None:
                    answered[call["id"]]["meta"] = clean_meta({**run.meta, **answered[call["id"]].get("meta", {})})
                continue
            if run is None:
                continue
            result = {"role": "tool", "tool_call_id": call["id"],
                      "content": run.result or (f"(the tool failed: {run.meta['error']})" if run.meta.get("error")
                                                else "(empty)")}
            meta = clean_meta(run.meta)
            if meta:
                result["meta"] = meta
            messages.insert(insert_at, result)
            answered[call["id"]] = result
            insert_at += 1
        i += 1
    # Tool runs that no model call asked for (an agent framework calling tools itself): each
    # becomes a call and its result at the end, in time order, so nothing recorded is dropped.
    for run in unmatched:
        call_id = run.call_id or f"call_{run.meta.get('span_id') or len(messages)}"
        messages.append({"role": "assistant", "content": None, "tool_calls": [
            {"id": call_id, "type": "function", "function": {"name": run.name, "arguments": run.arguments}}]})
        result = {"role": "tool", "tool_call_id": call_id, "content": run.result or "(empty)"}
        if clean_meta(run.meta):
            result["meta"] = clean_meta(run.meta)
        messages.append(result)


def _call_ids(messages: list[dict]) -> set[str]:
    return {c["id"] for m in messages for c in m.get("tool_calls") or ()}


def _oldest_open(messages: list[dict], tool_message: dict) -> str | None:
    done = {m["tool_call_id"] for m in messages if m["role"] == "tool" and m["tool_call_id"]}
    for message in messages:
        if message is tool_message:
            break
        for call in message.get("tool_calls") or ():
            if call["id"] not in done:
                return call["id"]
    return None


# --- items ----------------------------------------------------------------------------------------


def item_row(*, item_id: str, messages: list[dict], system: str, trace_id: str = "", source: str,
             meta: dict | None = None, metadata: dict | None = None, where: str = "") -> dict:
    """A row of the JSONL item format holding one trajectory, validated by annotation.trajectory."""
    content = {"messages": messages}
    if trace_id:
        content["trace_id"] = trace_id
    if meta:
        content["meta"] = meta
    try:
        content = trajectory.parse(content)
    except trajectory.TrajectoryError as exc:
        field = f"trajectory.{exc.field}" if exc.field else "trajectory"
        raise TraceFormatError(f"{where}: {field}" if where else field, exc.message) from None
    first_user = next((m["content"] for m in content["messages"] if m["role"] == "user" and m.get("content")), "")
    item_metadata = {"source": source, **({"trace_id": trace_id} if trace_id else {}), **(metadata or {})}
    return {"id": item_id, "context": first_user[:2000] or "(agent run)",
            "outputs": [{"system": (system or source)[:200], "kind": "trajectory", "content": content}],
            "metadata": item_metadata}
