"""Trace and log files as item rows: OTLP JSON, Inspect AI eval logs (.eval or .json), Langfuse
trace downloads, Phoenix span exports, OpenAI chat-completions JSONL and Responses JSONL.

Pure: no Django. `FORMATS` names each; `detect` picks one from the file's name and first bytes;
`rows(data, fmt)` gives the item rows or raises TraceFormatError naming the line (or sample,
trace, span) and field it could not read. Every reader keeps the source's ids: the trace id (or
Inspect's sample uuid, OpenAI's response id) as the trajectory's trace_id and the item's
metadata, span and observation ids as each step's meta.span_id.
"""

from __future__ import annotations

import io
import json
import zipfile
from datetime import datetime
from typing import Iterator

from annotation.traces import mapping, otel
from annotation.traces.mapping import LlmCall, Span, ToolRun, TraceFormatError
from config.limits import LIMITS

FORMATS = {
    "otlp-json": "OTLP/JSON ExportTraceServiceRequest, one per line (the Collector's file exporter)",
    "inspect": "Inspect AI eval log (.eval or .json)",
    "langfuse": "Langfuse trace download (trace JSON with observations), one or a list or JSONL",
    "phoenix": "Phoenix spans (OpenInference attributes), a JSON list or JSONL",
    "openai-chat": "OpenAI chat-completions JSONL: {messages} or {request, response} per line",
    "openai-responses": "OpenAI Responses JSONL: a response object with its input per line",
}


def detect(filename: str, head: bytes) -> str | None:
    """The trace format of a file, or None for an ordinary items file."""
    name = filename.lower()
    if name.endswith(".eval") or head.startswith(b"PK"):
        return "inspect"
    text = head.lstrip().decode("utf-8", "replace")
    first = text.split("\n", 1)[0]
    if '"outputs"' in first or name.endswith(".csv"):  # an items file (docs/item-format.md)
        return None
    text = text[:8192]  # the markers below are near the start of each format
    if '"resourceSpans"' in text or '"resource_spans"' in text:
        return "otlp-json"
    if '"observations"' in text or '"parentObservationId"' in text:
        return "langfuse"
    if '"span_kind"' in text or '"openinference.span.kind"' in text:
        return "phoenix"
    if '"version"' in text[:100] and '"eval"' in text:  # Inspect's JSON log: version, status, eval, ...
        return "inspect"
    if '"object": "response"' in text or '"object":"response"' in text:
        return "openai-responses"
    if '"messages"' in text and '"outputs"' not in text:
        return "openai-chat"
    return None


def rows(data: bytes, fmt: str, *, max_spans: int | None = None) -> list[dict]:
    """`max_spans`: an OTLP/JSON file's bound on spans over all its lines (the limit traces.spans_per_file's
    value where not given; the caller passes the deployment's)."""
    if fmt not in FORMATS:
        raise TraceFormatError("format", f"unknown trace format {fmt!r}; one of {', '.join(FORMATS)}")
    if fmt == "otlp-json":
        return list(_otlp_json(data, LIMITS["traces.spans_per_file"].value if max_spans is None else max_spans))
    return list(_READERS[fmt](data))


def _text(data: bytes) -> str:
    try:
        return data.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as exc:
        raise TraceFormatError(f"byte {exc.start}", "the file is not UTF-8 text") from None


def _json_records(data: bytes) -> Iterator[tuple[str, object]]:
    """(where, value) of a JSON document (a list gives each element) or of each JSONL line."""
    text = _text(data)
    try:
        whole = json.loads(text)
    except ValueError:
        whole = None
    else:
        if isinstance(whole, list):
            for n, value in enumerate(whole):
                yield f"[{n}]", value
        else:
            yield "line 1", whole
        return
    for n, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            yield f"line {n}", json.loads(line)
        except ValueError as exc:
            raise TraceFormatError(f"line {n}", f"not valid JSON ({exc})") from None


def _require(obj, key: str, where: str, kind: type | tuple = dict):
    if not isinstance(obj, dict):
        raise TraceFormatError(where, "must be an object")
    value = obj.get(key)
    if not isinstance(value, kind):
        raise TraceFormatError(f"{where}.{key}", f"required: {getattr(kind, '__name__', 'a value')}")
    return value


def _ns(value, where: str) -> int:
    """An ISO 8601 time (or epoch seconds) as nanoseconds; 0 when absent."""
    if value in (None, ""):
        return 0
    if isinstance(value, (int, float)):
        return int(value * 1e9) if value < 1e11 else int(value)
    try:
        return int(datetime.fromisoformat(str(value).replace("Z", "+00:00")).timestamp() * 1e9)
    except ValueError:
        raise TraceFormatError(where, f"not an ISO 8601 time: {value!r}") from None


# --- OTLP JSON -----------------------------------------------------------------------------------


def _otlp_json(data: bytes, max_spans: int) -> Iterator[dict]:
    spans: list[Span] = []
    for n, line in enumerate(_text(data).split("\n"), start=1):
        if line.strip():
            try:
                spans.extend(otel.spans_from_json(line.encode(), max_spans=max_spans - len(spans)))
            except otel.TooManySpans:  # its message is a request's (send smaller batches)
                raise TraceFormatError(f"line {n}", f"more than {max_spans:,} spans in one file; split it") from None
            except TraceFormatError as exc:
                raise TraceFormatError(f"line {n}" + (f": {exc.where}" if exc.where else ""), exc.message) from None
    for trace_id, trace_spans in otel.group_by_trace(spans).items():
        if otel.is_genai_trace(trace_spans):
            yield otel.trace_row(trace_id, trace_spans)


# --- Inspect AI ----------------------------------------------------------------------------------


def _inspect(data: bytes) -> Iterator[dict]:
    if data.startswith(b"PK"):
        import zipfile_zstd  # noqa: F401  (Inspect compresses .eval members with Zstandard; this registers it)

        try:
            archive = zipfile.ZipFile(io.BytesIO(data))
            header = json.loads(archive.read("header.json"))
            samples = [(name, json.loads(archive.read(name))) for name in sorted(archive.namelist())
                       if name.startswith("samples/") and name.endswith(".json")]
        except (zipfile.BadZipFile, KeyError, ValueError, NotImplementedError) as exc:
            raise TraceFormatError("", f"not an Inspect .eval log ({exc})") from None
    else:
        try:
            header = json.loads(_text(data))
        except ValueError as exc:
            raise TraceFormatError("", f"not valid JSON ({exc})") from None
        if not isinstance(header, dict) or not isinstance(header.get("eval"), dict):
            raise TraceFormatError("eval", "required: an Inspect log has `eval` (and `samples`)")
        samples = [(f"samples[{n}]", s) for n, s in enumerate(header.get("samples") or [])]
    evaluation = _require(header, "eval", "log")
    if not samples:
        raise TraceFormatError("samples", "the log holds no samples (was it written with samples?)")
    for where, sample in samples:
        with mapping.reading(where):
            row = _inspect_sample(sample, evaluation, where)
        yield row


def _inspect_sample(sample: dict, evaluation: dict, where: str) -> dict:
    messages_in = _require(sample, "messages", where, list)
    model_events = {}  # assistant message id -> (usage, seconds)
    tool_events = {}  # tool call id -> event
    for event in sample.get("events") or ():
        if not isinstance(event, dict):
            continue
        if event.get("event") == "model":
            output = event.get("output") or {}
            for choice in output.get("choices") or ():
                message_id = (choice.get("message") or {}).get("id")
                if message_id:
                    model_events[message_id] = (output.get("usage") or {}, output.get("time"),
                                                event.get("timestamp"), event.get("error"))
        elif event.get("event") == "tool" and event.get("id"):
            tool_events[event["id"]] = event
    messages = []
    for n, message in enumerate(messages_in):
        here = f"{where}.messages[{n}]"
        if not isinstance(message, dict):
            raise TraceFormatError(here, "must be an object")
        role = message.get("role")
        if role not in ("system", "user", "assistant", "tool"):
            raise TraceFormatError(f"{here}.role", f"not a chat role: {role!r}")
        text, reasoning = _inspect_content(message.get("content"), f"{here}.content")
        out: dict = {"role": role, "content": text or None}
        meta: dict = {"span_id": message.get("id")}
        if role == "assistant":
            calls = []
            for k, call in enumerate(message.get("tool_calls") or ()):
                if not isinstance(call, dict) or not call.get("function"):
                    raise TraceFormatError(f"{here}.tool_calls[{k}].function", "required: the tool's name")
                calls.append({"id": str(call.get("id") or ""), "type": "function",
                              "function": {"name": call["function"],
                                           "arguments": mapping.arguments_text(call.get("arguments"))}})
            if calls:
                out["tool_calls"] = calls
            if reasoning:
                out["reasoning"] = reasoning
            usage, seconds, started, error = model_events.get(message.get("id"), ({}, None, None, None))
            meta.update({"model": message.get("model") or evaluation.get("model"),
                         "input_tokens": usage.get("input_tokens"), "output_tokens": usage.get("output_tokens"),
                         "latency_ms": round(seconds * 1000, 3) if isinstance(seconds, (int, float)) else None,
                         "started_at": started, "error": _error_text(error)})
        elif role == "tool":
            out["tool_call_id"] = str(message.get("tool_call_id") or "")
            event = tool_events.get(out["tool_call_id"]) or {}
            seconds = event.get("working_time")
            error = _error_text(message.get("error") or event.get("error"))
            out["content"] = out["content"] or (f"(the tool failed: {error})" if error else "(empty)")
            meta.update({"error": error,
                         "latency_ms": round(seconds * 1000, 3) if isinstance(seconds, (int, float)) else None,
                         "started_at": event.get("timestamp")})
        else:
            out["content"] = out["content"] or "(empty)"
        meta = mapping.clean_meta(meta)
        if meta:
            out["meta"] = meta
        messages.append(out)
    scores = {name: (s.get("value") if isinstance(s, dict) else s) for name, s in (sample.get("scores") or {}).items()}
    sample_id = f"{evaluation.get('task', 'task')}-{sample.get('id')}-e{sample.get('epoch', 1)}"
    return mapping.item_row(
        item_id=sample_id[:200], messages=messages, trace_id=str(sample.get("uuid") or ""), source="inspect",
        system=str(evaluation.get("model") or ""), where=where,
        meta=mapping.clean_meta({"task": evaluation.get("task"), "eval_id": evaluation.get("eval_id"),
                                 "run_id": evaluation.get("run_id")}),
        metadata=mapping.clean_meta({"task": evaluation.get("task"), "eval_id": evaluation.get("eval_id"),
                                     "sample_id": sample.get("id"), "epoch": sample.get("epoch"),
                                     "target": sample.get("target"), "scores": scores or None}))


def _inspect_content(value, where: str) -> tuple[str, str]:
    if value is None or isinstance(value, str):
        return value or "", ""
    if not isinstance(value, list):
        raise TraceFormatError(where, "must be text or a list of content parts")
    texts, reasoning = [], []
    for part in value:
        if not isinstance(part, dict):
            continue
        if part.get("type") == "text":
            texts.append(str(part.get("text") or ""))
        elif part.get("type") == "reasoning":
            reasoning.append(str(part.get("summary") or part.get("reasoning") or ""))
        else:
            texts.append(f"[{part.get('type', 'non-text')} part not imported]")
    return "\n".join(texts), "\n".join(r for r in reasoning if r)


def _error_text(error) -> str | None:
    if not error:
        return None
    if isinstance(error, dict):
        return ": ".join(str(error[k]) for k in ("type", "message") if error.get(k)) or "error"
    return str(error)


# --- Langfuse --------------------------------------------------------------------------------------


def _langfuse(data: bytes) -> Iterator[dict]:
    loose: dict[str, list[tuple[str, dict]]] = {}  # observations exported without their trace
    for where, record in _json_records(data):
        if isinstance(record, dict) and isinstance(record.get("traces"), list):  # a session download
            for n, trace in enumerate(record["traces"]):
                with mapping.reading(f"{where}.traces[{n}]"):
                    row = _langfuse_trace(trace, f"{where}.traces[{n}]")
                yield row
        elif isinstance(record, dict) and "observations" in record:
            with mapping.reading(where):
                row = _langfuse_trace(record, where)
            yield row
        elif isinstance(record, dict) and record.get("traceId") and record.get("type"):
            loose.setdefault(record["traceId"], []).append((where, record))
        else:
            raise TraceFormatError(where, "neither a Langfuse trace (with observations) nor an observation")
    for trace_id, observations in loose.items():
        with mapping.reading(observations[0][0]):
            row = _langfuse_trace({"id": str(trace_id), "observations": [o for _, o in observations]},
                                  observations[0][0])
        yield row


def _langfuse_trace(trace: dict, where: str) -> dict:
    trace_id = _require(trace, "id", where, str)
    observations = _require(trace, "observations", where, list)
    calls, tools = [], []
    for n, obs in enumerate(observations):
        here = f"{where}.observations[{n}]"
        if not isinstance(obs, dict):
            raise TraceFormatError(here, "must be an object")
        kind = str(obs.get("type") or "").upper()
        start = _ns(obs.get("startTime"), f"{here}.startTime")
        end = _ns(obs.get("endTime"), f"{here}.endTime")
        error = (obs.get("statusMessage") or "error") if obs.get("level") == "ERROR" else None
        meta = {"span_id": obs.get("id"), "parent_span_id": obs.get("parentObservationId"), "error": error,
                "latency_ms": round((end - start) / 1e6, 3) if end >= start > 0 else None,
                "started_at": obs.get("startTime")}
        if kind == "GENERATION":
            usage = obs.get("usageDetails") or obs.get("usage") or {}
            meta.update({"model": obs.get("model"),
                         "input_tokens": usage.get("input", obs.get("promptTokens")),
                         "output_tokens": usage.get("output", obs.get("completionTokens"))})
            inputs = _chat_messages(obs.get("input"), f"{here}.input", default_role="user")
            outputs = _chat_messages(obs.get("output"), f"{here}.output", default_role="assistant")
            if error and not outputs:
                outputs = [{"role": "assistant", "content": f"(the model call failed: {error})"}]
            calls.append(LlmCall(start, inputs, outputs, mapping.clean_meta(meta)))
        elif kind == "TOOL":
            args = obs.get("input")
            tools.append(ToolRun(start, call_id=str((obs.get("metadata") or {}).get("tool_call_id") or ""),
                                 name=str(obs.get("name") or "tool"), arguments=mapping.arguments_text(args),
                                 result=mapping.text_of(obs.get("output")) or None, meta=mapping.clean_meta(meta)))
    messages = mapping.merge(calls, tools, where=where)
    scores = {s.get("name"): s.get("stringValue", s.get("value")) for s in trace.get("scores") or ()
              if isinstance(s, dict) and s.get("name")}
    models = [m["meta"]["model"] for m in messages if (m.get("meta") or {}).get("model")]
    return mapping.item_row(item_id=trace_id, messages=messages, trace_id=trace_id, source="langfuse",
                            system=str(trace.get("name") or (models[0] if models else "")), where=where,
                            meta=mapping.clean_meta({"name": trace.get("name"), "session": trace.get("sessionId")}),
                            metadata=mapping.clean_meta({"scores": scores or None, "tags": trace.get("tags") or None}))


def _chat_messages(value, where: str, *, default_role: str) -> list[dict]:
    """A generation's input or output as OpenAI messages: a list of messages, {messages: [...]},
    one message, a chat completion ({choices}), or plain text."""
    if value is None:
        return []
    if isinstance(value, str):
        return [{"role": default_role, "content": mapping.text_of(value)}]
    if isinstance(value, dict) and isinstance(value.get("messages"), list):
        value = value["messages"]
    if isinstance(value, dict) and isinstance(value.get("choices"), list) and value["choices"]:
        value = value["choices"][0].get("message") or {}
    if isinstance(value, dict):
        value = [value if "role" in value else {"role": default_role, "content": mapping.text_of(value)}]
    if not isinstance(value, list):
        return [{"role": default_role, "content": mapping.text_of(value)}]
    out = []
    for n, message in enumerate(value):
        if not isinstance(message, dict):
            raise TraceFormatError(f"{where}[{n}]", "a message must be an object with a role")
        if "role" not in message:
            raise TraceFormatError(f"{where}[{n}].role", "required")
        out.extend(mapping.openai_message(message, f"{where}[{n}]"))
    return out


# --- Phoenix (OpenInference) ----------------------------------------------------------------------


def _unflatten(attributes: dict) -> dict:
    """OpenInference's flat keys (llm.input_messages.0.message.role) as nested values."""
    nested: dict = {}
    for key, value in attributes.items():
        node = nested
        parts = key.split(".")
        for part in parts[:-1]:
            node = node.setdefault(part, {}) if isinstance(node.get(part, {}), dict) else node[part]
        node[parts[-1]] = value
    return _lists(nested)


def _lists(node):
    if isinstance(node, dict):
        node = {k: _lists(v) for k, v in node.items()}
        if node and all(k.isdigit() for k in node):
            return [node[k] for k in sorted(node, key=int)]
    elif isinstance(node, list):  # list elements may hold flat keys again (message.role)
        return [_unflatten(v) if isinstance(v, dict) else _lists(v) for v in node]
    return node


def _oi(attrs: dict, path: str):
    """A value at a dotted path of nested OpenInference attributes."""
    node = attrs
    for part in path.split("."):
        if not isinstance(node, dict) or part not in node:
            return None
        node = node[part]
    return node


def _oi_messages(value, where: str) -> list[dict]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise TraceFormatError(where, "must be a list of messages")
    out = []
    for n, entry in enumerate(value):
        here = f"{where}[{n}]"
        message = entry.get("message") if isinstance(entry, dict) and isinstance(entry.get("message"), dict) else entry
        if not isinstance(message, dict) or not message.get("role"):
            raise TraceFormatError(f"{here}.message.role", "required")
        content = message.get("content")
        if content is None and isinstance(message.get("contents"), list):
            content = "\n".join(str(_oi(c, "message_content.text") or "") for c in message["contents"]
                                if isinstance(c, dict))
        calls = []
        for k, call in enumerate(message.get("tool_calls") or ()):
            name = _oi(call, "tool_call.function.name")
            if not name:
                raise TraceFormatError(f"{here}.message.tool_calls[{k}].tool_call.function.name", "required")
            calls.append({"id": str(_oi(call, "tool_call.id") or ""), "type": "function",
                          "function": {"name": name, "arguments": _oi(call, "tool_call.function.arguments")}})
        out.extend(mapping.openai_message({"role": message["role"], "content": content, "tool_calls": calls,
                                           "tool_call_id": message.get("tool_call_id"),
                                           "name": message.get("name")}, here))
    return out


def _phoenix(data: bytes) -> Iterator[dict]:
    traces: dict[str, list[tuple[str, dict]]] = {}
    for where, record in _json_records(data):
        records = record.get("data") if isinstance(record, dict) and isinstance(record.get("data"), list) else [record]
        for n, span in enumerate(records):
            here = where if len(records) == 1 else f"{where}.data[{n}]"
            context = _require(span, "context", here)
            trace_id = _require(context, "trace_id", f"{here}.context", str)
            traces.setdefault(trace_id, []).append((here, span))
    for trace_id, spans in traces.items():
        with mapping.reading(spans[0][0]):
            row = _phoenix_trace(trace_id, spans)
        if row is not None:
            yield row


def _phoenix_trace(trace_id: str, spans: list[tuple[str, dict]]) -> dict | None:
    calls, tools = [], []
    for here, span in spans:
        attrs = _unflatten(span.get("attributes") or {})
        kind = str(_oi(attrs, "openinference.span.kind") or span.get("span_kind") or "").upper()
        start, end = _ns(span.get("start_time"), f"{here}.start_time"), _ns(span.get("end_time"), f"{here}.end_time")
        error = (span.get("status_message") or "error") if span.get("status_code") == "ERROR" else None
        meta = {"span_id": span["context"].get("span_id"), "parent_span_id": span.get("parent_id"),
                "error": error, "latency_ms": round((end - start) / 1e6, 3) if end >= start > 0 else None,
                "started_at": span.get("start_time")}
        if kind == "LLM":
            meta.update({"model": _oi(attrs, "llm.model_name"), "provider": _oi(attrs, "llm.provider"),
                         "input_tokens": _oi(attrs, "llm.token_count.prompt"),
                         "output_tokens": _oi(attrs, "llm.token_count.completion")})
            inputs = _oi_messages(_oi(attrs, "llm.input_messages"), f"{here}.attributes.llm.input_messages")
            outputs = _oi_messages(_oi(attrs, "llm.output_messages"), f"{here}.attributes.llm.output_messages")
            if error and not outputs:
                outputs = [{"role": "assistant", "content": f"(the model call failed: {error})"}]
            calls.append(LlmCall(start, inputs, outputs, mapping.clean_meta(meta)))
        elif kind == "TOOL":
            tools.append(ToolRun(start, call_id=str(_oi(attrs, "tool_call.id") or ""),
                                 name=str(_oi(attrs, "tool.name") or span.get("name") or "tool"),
                                 arguments=mapping.arguments_text(_oi(attrs, "tool.parameters")
                                                                  or _oi(attrs, "input.value")),
                                 result=mapping.text_of(_oi(attrs, "output.value")) or None,
                                 meta=mapping.clean_meta(meta)))
    if not calls and not tools:
        return None
    where = spans[0][0]
    messages = mapping.merge(calls, tools, where=f"trace {trace_id}")
    models = [m["meta"]["model"] for m in messages if (m.get("meta") or {}).get("model")]
    root = next((s for _, s in spans if not s.get("parent_id")), None)
    return mapping.item_row(item_id=trace_id, messages=messages, trace_id=trace_id, source="phoenix",
                            system=(models[0] if models else "") or (root or {}).get("name", ""), where=where,
                            meta=mapping.clean_meta({"root_span": (root or {}).get("name")}))


# --- OpenAI chat-completions and Responses JSONL ------------------------------------------------------


def _each_record(data: bytes, read) -> Iterator[dict]:
    """One item per record (JSONL line or element of a JSON list), read by `read(record, where)`."""
    for where, record in _json_records(data):
        with mapping.reading(where):
            row = read(record, where)
        yield row


def _openai_chat_record(record, where: str) -> dict:
    if not isinstance(record, dict):
        raise TraceFormatError(where, "must be an object with messages, or with request and response")
    meta: dict = {}
    if isinstance(record.get("request"), dict):
        request = record["request"]
        messages = _chat_messages(_require(request, "messages", f"{where}.request", list),
                                  f"{where}.request.messages", default_role="user")
        response = record.get("response") or {}
        response = response.get("body", response) if isinstance(response, dict) else {}
        outputs = _chat_messages(response, f"{where}.response", default_role="assistant")
        usage = response.get("usage") or {}
        meta = mapping.clean_meta({"model": response.get("model") or request.get("model"),
                                   "input_tokens": usage.get("prompt_tokens"),
                                   "output_tokens": usage.get("completion_tokens"),
                                   "span_id": response.get("id"),
                                   "finish_reason": ((response.get("choices") or [{}])[0] or {}).get("finish_reason")})
        if outputs and meta:
            outputs[0]["meta"] = meta
        messages += outputs[:1]
        trace_id = str(record.get("id") or response.get("id") or "")
    else:
        messages = _chat_messages(_require(record, "messages", where, list), f"{where}.messages",
                                  default_role="user")
        trace_id = str(record.get("id") or "")
    mapping.name_calls(messages)
    item_id = str(record.get("custom_id") or record.get("id") or where.replace(" ", "-"))
    return mapping.item_row(item_id=item_id, messages=messages, trace_id=trace_id, source="openai-chat",
                            system=str(record.get("system") or meta.get("model") or record.get("model") or ""),
                            where=where, metadata=record.get("metadata") if isinstance(record.get("metadata"), dict)
                            else None)


def _responses_items(items, where: str, *, default_role: str) -> list[dict]:
    """Responses API input or output items as OpenAI chat messages: function calls join the
    assistant message before them, reasoning summaries become its reasoning."""
    if isinstance(items, str):
        return [{"role": default_role, "content": items}]
    if not isinstance(items, list):
        raise TraceFormatError(where, "must be text or a list of items")
    out: list[dict] = []
    pending_reasoning: list[str] = []

    def assistant() -> dict:
        if not out or out[-1]["role"] != "assistant" or out[-1].get("_closed"):
            out.append({"role": "assistant", "content": None})
        return out[-1]

    for n, item in enumerate(items):
        here = f"{where}[{n}]"
        if not isinstance(item, dict):
            raise TraceFormatError(here, "must be an object")
        kind = item.get("type", "message")
        if kind == "message":
            role = item.get("role")
            if role not in ("system", "developer", "user", "assistant"):
                raise TraceFormatError(f"{here}.role", f"not a message role: {role!r}")
            text = _responses_text(item.get("content"), f"{here}.content")
            if role == "assistant":
                message = assistant()
                message["content"] = "\n".join(t for t in (message.get("content"), text) if t) or None
                if item.get("id"):
                    message.setdefault("meta", {})["span_id"] = item["id"]
            else:
                out.append({"role": role, "content": text or "(empty)"})
        elif kind == "reasoning":
            summary = "\n".join(str(s.get("text") or "") for s in item.get("summary") or () if isinstance(s, dict))
            if summary:
                pending_reasoning.append(summary)
                assistant()["reasoning"] = "\n".join(pending_reasoning)
        elif kind == "function_call":
            if not item.get("name") or not item.get("call_id"):
                raise TraceFormatError(here, "a function_call needs name and call_id")
            message = assistant()
            message.setdefault("tool_calls", []).append(
                {"id": item["call_id"], "type": "function",
                 "function": {"name": item["name"], "arguments": mapping.arguments_text(item.get("arguments"))}})
        elif kind == "function_call_output":
            if not item.get("call_id"):
                raise TraceFormatError(f"{here}.call_id", "required")
            if out and out[-1]["role"] == "assistant":
                out[-1]["_closed"] = True
            out.append({"role": "tool", "tool_call_id": item["call_id"],
                        "content": mapping.text_of(item.get("output")) or "(empty)"})
        else:
            raise TraceFormatError(f"{here}.type", f"item type {kind!r} is not read (message, reasoning, "
                                                   "function_call, function_call_output are)")
    for message in out:
        message.pop("_closed", None)
        if message["role"] == "assistant":
            pending_reasoning.clear()
    return out


def _responses_text(content, where: str) -> str:
    if content is None or isinstance(content, str):
        return content or ""
    if not isinstance(content, list):
        raise TraceFormatError(where, "must be text or a list of parts")
    texts = []
    for part in content:
        if isinstance(part, dict) and part.get("type") in ("input_text", "output_text", "text"):
            texts.append(str(part.get("text") or ""))
        elif isinstance(part, dict) and part.get("type") == "refusal":
            texts.append(str(part.get("refusal") or ""))
        elif isinstance(part, dict):
            texts.append(f"[{part.get('type', 'non-text')} part not imported]")
    return "\n".join(texts)


def _openai_response(record, where: str) -> dict:
    if not isinstance(record, dict):
        raise TraceFormatError(where, "must be a response object")
    if "input" not in record:
        raise TraceFormatError(f"{where}.input", "required: the response's input items (the Responses API "
                                                 "returns them from GET /responses/{id}/input_items)")
    output = _require(record, "output", where, list)
    messages = []
    if record.get("instructions"):
        messages.append({"role": "system", "content": mapping.text_of(record["instructions"])})
    messages += _responses_items(record["input"], f"{where}.input", default_role="user")
    produced = _responses_items(output, f"{where}.output", default_role="assistant")
    usage = record.get("usage") or {}
    meta = mapping.clean_meta({"model": record.get("model"), "input_tokens": usage.get("input_tokens"),
                               "output_tokens": usage.get("output_tokens"), "span_id": record.get("id"),
                               "error": _error_text(record.get("error"))})
    for message in produced:
        if message["role"] == "assistant":
            message["meta"] = {**meta, **(message.get("meta") or {})}
    messages += produced
    trace_id = str(record.get("id") or "")
    return mapping.item_row(item_id=trace_id or where.replace(" ", "-"), messages=messages, trace_id=trace_id,
                            source="openai-responses", system=str(record.get("model") or ""), where=where,
                            metadata=record.get("metadata") if isinstance(record.get("metadata"), dict) else None)


_READERS = {"otlp-json": _otlp_json, "inspect": _inspect, "langfuse": _langfuse, "phoenix": _phoenix,
            "openai-chat": lambda data: _each_record(data, _openai_chat_record),
            "openai-responses": lambda data: _each_record(data, _openai_response)}
