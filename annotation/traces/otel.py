"""OpenTelemetry traces: OTLP requests (JSON or protobuf) decoded into spans, and a trace's GenAI
spans made into one trajectory (OpenTelemetry GenAI semantic conventions: `chat`/`generate_content`
/`text_completion` spans with gen_ai.input.messages and gen_ai.output.messages, `execute_tool` spans,
gen_ai.evaluation.result events). Pure: no Django. The same reader takes Phoenix's span exports
(OpenInference attributes, `phoenix.py`).
"""

from __future__ import annotations

import base64
import binascii
import json

from annotation.traces import mapping
from annotation.traces.mapping import LlmCall, Span, ToolRun, TraceFormatError

MODEL_OPERATIONS = {"chat", "generate_content", "text_completion"}


# --- OTLP decoding ------------------------------------------------------------------------------


def _any_value(value, where: str):
    """OTLP JSON's AnyValue as a Python value."""
    if not isinstance(value, dict):
        raise TraceFormatError(where, "an attribute value must be an AnyValue object")
    for key in ("stringValue", "string_value"):
        if key in value:
            return value[key]
    for key in ("boolValue", "bool_value"):
        if key in value:
            return bool(value[key])
    for key in ("intValue", "int_value"):
        if key in value:
            return int(value[key])  # int64 arrives as a JSON string
    for key in ("doubleValue", "double_value"):
        if key in value:
            return float(value[key])
    for key in ("arrayValue", "array_value"):
        if key in value:
            return [_any_value(v, f"{where}[{n}]") for n, v in enumerate((value[key] or {}).get("values") or [])]
    for key in ("kvlistValue", "kvlist_value"):
        if key in value:
            return _attributes((value[key] or {}).get("values") or [], where)
    for key in ("bytesValue", "bytes_value"):
        if key in value:
            return value[key]
    return None


def _attributes(items, where: str) -> dict:
    if not isinstance(items, list):
        raise TraceFormatError(where, "attributes must be a list of {key, value}")
    out = {}
    for n, kv in enumerate(items):
        if not isinstance(kv, dict) or not isinstance(kv.get("key"), str):
            raise TraceFormatError(f"{where}[{n}]", "an attribute must be {key, value}")
        out[kv["key"]] = _any_value(kv.get("value") or {}, f"{where}[{n}].value")
    return out


def _get(obj: dict, camel: str, snake: str, default=None):
    return obj.get(camel, obj.get(snake, default))


def _hex_id(value, where: str, size: int, *, required: bool = True) -> str:
    """OTLP JSON ids are hex (the spec); base64 (protobuf's JSON mapping) is accepted too."""
    if not value:
        if required:
            raise TraceFormatError(where, "required")
        return ""
    if isinstance(value, str) and len(value) == size * 2:
        try:
            bytes.fromhex(value)
            return value.lower()
        except ValueError:
            pass
    try:
        raw = base64.b64decode(value, validate=True)
    except (binascii.Error, TypeError, ValueError):
        raw = b""
    if len(raw) != size:
        raise TraceFormatError(where, f"must be {size * 2} hex digits")
    return raw.hex()


def _error(status: dict | None) -> str | None:
    if not status:
        return None
    code = status.get("code")
    if code in (2, "2", "STATUS_CODE_ERROR"):
        return status.get("message") or "error"
    return None


def spans_from_json(body: bytes, *, max_spans: int) -> list[Span]:
    """The spans of an OTLP/JSON ExportTraceServiceRequest."""
    try:
        data = json.loads(body)
    except (ValueError, RecursionError) as exc:
        raise TraceFormatError("", f"the body is not JSON ({exc})") from None
    if not isinstance(data, dict) or not isinstance(_get(data, "resourceSpans", "resource_spans"), list):
        raise TraceFormatError("resourceSpans", "required: an ExportTraceServiceRequest has resourceSpans")
    spans: list[Span] = []
    for r, resource_spans in enumerate(_get(data, "resourceSpans", "resource_spans")):
        rwhere = f"resourceSpans[{r}]"
        with mapping.reading(rwhere):
            resource = _attributes(((resource_spans or {}).get("resource") or {}).get("attributes") or [],
                                   f"{rwhere}.resource.attributes")
            scopes = [((ss or {}).get("spans") or []) for ss in _get(resource_spans, "scopeSpans", "scope_spans", [])
                      or []]
        for s, scope in enumerate(scopes):
            for n, raw in enumerate(scope if isinstance(scope, list) else [scope]):
                where = f"{rwhere}.scopeSpans[{s}].spans[{n}]"
                if not isinstance(raw, dict):
                    raise TraceFormatError(where, "must be an object")
                with mapping.reading(where):
                    spans.append(_json_span(raw, where, resource))
                if len(spans) > max_spans:
                    raise TooManySpans(max_spans)
    return spans


def _json_span(raw: dict, where: str, resource: dict) -> Span:
    return Span(
        trace_id=_hex_id(_get(raw, "traceId", "trace_id"), f"{where}.traceId", 16),
        span_id=_hex_id(_get(raw, "spanId", "span_id"), f"{where}.spanId", 8),
        parent_id=_hex_id(_get(raw, "parentSpanId", "parent_span_id"), f"{where}.parentSpanId", 8,
                          required=False),
        name=str(raw.get("name") or ""),
        start_ns=_nanos(_get(raw, "startTimeUnixNano", "start_time_unix_nano"), f"{where}.startTimeUnixNano"),
        end_ns=_nanos(_get(raw, "endTimeUnixNano", "end_time_unix_nano"), f"{where}.endTimeUnixNano"),
        attributes=_attributes(raw.get("attributes") or [], f"{where}.attributes"),
        error=_error(raw.get("status")),
        events=[(str(e.get("name") or ""), _attributes(e.get("attributes") or [], f"{where}.events[{k}]"))
                for k, e in enumerate(raw.get("events") or []) if isinstance(e, dict)],
        resource=resource, where=where)


def _nanos(value, where: str) -> int:
    try:
        return int(value or 0)
    except (TypeError, ValueError):
        raise TraceFormatError(where, "must be nanoseconds since the epoch") from None


class TooManySpans(TraceFormatError):
    def __init__(self, limit: int):
        super().__init__("", f"more than {limit} spans in one request; send smaller batches "
                             "(BatchSpanProcessor's max_export_batch_size)")


def _proto_value(value):
    kind = value.WhichOneof("value")
    if kind is None:
        return None
    if kind == "array_value":
        return [_proto_value(v) for v in value.array_value.values]
    if kind == "kvlist_value":
        return {kv.key: _proto_value(kv.value) for kv in value.kvlist_value.values}
    if kind == "bytes_value":
        return base64.b64encode(value.bytes_value).decode()
    return getattr(value, kind)


def spans_from_protobuf(body: bytes, *, max_spans: int) -> list[Span]:
    """The spans of an OTLP/protobuf ExportTraceServiceRequest."""
    from google.protobuf.message import DecodeError
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    request = ExportTraceServiceRequest()
    try:
        request.ParseFromString(body)
    except DecodeError as exc:
        raise TraceFormatError("", f"the body is not an ExportTraceServiceRequest ({exc})") from None
    count = sum(len(ss.spans) for rs in request.resource_spans for ss in rs.scope_spans)
    if count > max_spans:
        raise TooManySpans(max_spans)
    spans: list[Span] = []
    for r, rs in enumerate(request.resource_spans):
        resource = {kv.key: _proto_value(kv.value) for kv in rs.resource.attributes}
        for s, ss in enumerate(rs.scope_spans):
            for n, raw in enumerate(ss.spans):
                where = f"resourceSpans[{r}].scopeSpans[{s}].spans[{n}]"
                if len(raw.trace_id) != 16 or len(raw.span_id) != 8:
                    raise TraceFormatError(f"{where}.traceId", "a span needs a 16-byte trace id and 8-byte span id")
                error = (raw.status.message or "error") if raw.status.code == 2 else None
                spans.append(Span(
                    trace_id=raw.trace_id.hex(), span_id=raw.span_id.hex(), parent_id=raw.parent_span_id.hex(),
                    name=raw.name, start_ns=raw.start_time_unix_nano, end_ns=raw.end_time_unix_nano,
                    attributes={kv.key: _proto_value(kv.value) for kv in raw.attributes}, error=error,
                    events=[(e.name, {kv.key: _proto_value(kv.value) for kv in e.attributes}) for e in raw.events],
                    resource=resource, where=where))
    return spans


def response_body(rejected: int, message: str, *, protobuf: bool) -> bytes:
    """An ExportTraceServiceResponse (partial success when spans were rejected)."""
    if protobuf:
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

        response = ExportTraceServiceResponse()
        if rejected or message:
            response.partial_success.rejected_spans = rejected
            response.partial_success.error_message = message
        return response.SerializeToString()
    if not (rejected or message):
        return b"{}"
    return json.dumps({"partialSuccess": {"rejectedSpans": str(rejected), "errorMessage": message}}).encode()


# --- a trace's spans -> a trajectory ---------------------------------------------------------------


def group_by_trace(spans: list[Span]) -> dict[str, list[Span]]:
    traces: dict[str, list[Span]] = {}
    for span in spans:
        traces.setdefault(span.trace_id, []).append(span)
    return traces


def is_model_span(span: Span) -> bool:
    return (str(span.attributes.get(mapping.OPERATION)) in MODEL_OPERATIONS
            or mapping.INPUT_MESSAGES in span.attributes or mapping.OUTPUT_MESSAGES in span.attributes)


def is_tool_span(span: Span) -> bool:
    return span.attributes.get(mapping.OPERATION) == "execute_tool"


def is_genai_trace(spans: list[Span]) -> bool:
    return any(is_model_span(s) or is_tool_span(s) for s in spans)


def span_meta(span: Span) -> dict:
    a = span.attributes
    finish = a.get("gen_ai.response.finish_reasons")
    return mapping.clean_meta({
        "model": _text(a.get("gen_ai.response.model") or a.get("gen_ai.request.model")),
        "provider": _text(a.get("gen_ai.provider.name") or a.get("gen_ai.system")),
        "input_tokens": _number(a.get("gen_ai.usage.input_tokens")),
        "output_tokens": _number(a.get("gen_ai.usage.output_tokens")),
        "latency_ms": round((span.end_ns - span.start_ns) / 1e6, 3) if span.end_ns >= span.start_ns > 0 else None,
        "error": span.error or _text(a.get("error.type")),
        "finish_reason": _text(finish[0] if isinstance(finish, list) and finish else finish),
        "span_id": span.span_id, "parent_span_id": span.parent_id or None,
        "started_at": mapping.iso(span.start_ns) if span.start_ns else None,
    })


def _text(value) -> str | None:
    return None if value is None or value == "" else str(value)


def _number(value) -> int | float | None:
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0 else None


def flag_labels(spans: list[Span]) -> set[str]:
    """Evaluation labels recorded on the trace (gen_ai.evaluation.result events, or the label
    attribute on a span), lower-cased: what a sampling rule's "flagged" looks at."""
    labels = set()
    for span in spans:
        for attributes in [span.attributes, *(a for name, a in span.events if name == mapping.EVALUATION_EVENT)]:
            label = attributes.get(mapping.EVALUATION_LABEL)
            if isinstance(label, str) and label:
                labels.add(label.strip().lower())
    return labels


def trace_row(trace_id: str, spans: list[Span]) -> dict:
    """The item row of one trace: its model spans' messages and its tool spans, merged."""
    with mapping.reading(f"trace {trace_id}"):
        return _trace_row(trace_id, spans)


def _trace_row(trace_id: str, spans: list[Span]) -> dict:
    calls, tools = [], []
    system_message = None
    for span in sorted(spans, key=lambda s: (s.start_ns, s.end_ns)):
        a = span.attributes
        if is_model_span(span):
            inputs = (mapping.genai_messages(a[mapping.INPUT_MESSAGES], f"{span.where}.attributes.{mapping.INPUT_MESSAGES}")
                      if mapping.INPUT_MESSAGES in a else [])
            outputs = (mapping.genai_messages(a[mapping.OUTPUT_MESSAGES], f"{span.where}.attributes.{mapping.OUTPUT_MESSAGES}")
                       if mapping.OUTPUT_MESSAGES in a else [])
            if mapping.SYSTEM_INSTRUCTIONS in a and system_message is None:
                system_message = mapping.system_instructions(
                    a[mapping.SYSTEM_INSTRUCTIONS], f"{span.where}.attributes.{mapping.SYSTEM_INSTRUCTIONS}")
            if span.error and not outputs:  # a failed model call: an assistant step that says so
                outputs = [{"role": "assistant", "content": f"(the model call failed: {span.error})"}]
            calls.append(LlmCall(span.start_ns, inputs, outputs, span_meta(span)))
        elif is_tool_span(span):
            meta = span_meta(span)
            meta.pop("finish_reason", None)
            tools.append(ToolRun(span.start_ns, call_id=_text(a.get("gen_ai.tool.call.id")) or "",
                                 name=_text(a.get("gen_ai.tool.name")) or span.name.removeprefix("execute_tool ").strip()
                                 or "tool",
                                 arguments=mapping.arguments_text(a.get("gen_ai.tool.call.arguments")),
                                 result=mapping.text_of(a.get("gen_ai.tool.call.result")) or None, meta=meta))
    messages = mapping.merge(calls, tools, where=f"trace {trace_id}")
    if system_message and not any(m["role"] == "system" for m in messages):
        messages.insert(0, system_message)
    root = next((s for s in spans if not s.parent_id), None)
    agent = next((s.attributes.get("gen_ai.agent.name") for s in spans if s.attributes.get("gen_ai.agent.name")), None)
    service = next((s.resource.get("service.name") for s in spans if s.resource.get("service.name")), None)
    models = [m["meta"]["model"] for m in messages if (m.get("meta") or {}).get("model")]
    run_meta = mapping.clean_meta({"agent": _text(agent), "service": _text(service),
                                   "root_span": root.name if root else None})
    return mapping.item_row(item_id=trace_id, messages=messages, trace_id=trace_id, source="opentelemetry",
                            system=_text(agent) or (models[0] if models else "") or _text(service) or "",
                            meta=run_meta, where=f"trace {trace_id}",
                            metadata={"spans": len(spans), **({"service": service} if service else {})})
