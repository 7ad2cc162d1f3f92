"""The simulated agent's runs as the OpenTelemetry spans an instrumented agent framework sends (GenAI
semantic conventions: an `invoke_agent` root span, a `chat` span per model call with
gen_ai.input/output.messages, an `execute_tool` span per tool run, the evaluator's verdict as a
`gen_ai.evaluation.result` event), so that the demo's traffic reaches a study through the OTLP intake's
own path (annotation.traces.ingest) and its sampling rule. Pure: no Django.

    traffic_spans(seed, n) -> [Span]   # n runs, one trace each, of annotation.simulation.agent's tasks

A run whose final answer the tool results do not support carries the evaluation label "unacceptable"
(an evaluator caught it); the others "acceptable".
"""

from __future__ import annotations

import json

from annotation.simulation.agent import SYSTEMS, agent_item, hex_id
from annotation.traces import mapping
from annotation.traces.mapping import Span

_STEP_NS = 40_000_000  # 40 ms between one span's end and the next one's start
_T0 = 1_796_000_000_000_000_000  # 2026-11-28, a fixed clock: the same seed gives the same spans


def _text(role: str, text: str) -> dict:
    return {"role": role, "parts": [{"type": "text", "content": text}]}


def _calls(message: dict) -> list[dict]:
    return [{"type": "tool_call", "id": c["id"], "name": c["function"]["name"],
             "arguments": json.loads(c["function"]["arguments"])} for c in message.get("tool_calls") or ()]


def _run_spans(trajectory: dict, *, trace_id: str, agent: str, label: str) -> list[Span]:
    system, user, ask, *rest = trajectory["messages"]
    results, final = rest[:-1], rest[-1]
    clock = [_T0 + int(trace_id[:8], 16) * 1_000_000]

    def span(name: str, n: int, attributes: dict, *, parent: str, ms: float, error: str | None = None,
             events: list | None = None) -> Span:
        start = clock[0]
        clock[0] = start + int(ms * 1e6) + _STEP_NS
        return Span(trace_id=trace_id, span_id=hex_id(trace_id, n)[:16], parent_id=parent, name=name,
                    start_ns=start, end_ns=start + int(ms * 1e6), attributes=attributes, error=error,
                    events=events or [], resource={"service.name": agent})

    root_id = hex_id(trace_id, 0)[:16]
    model = (ask.get("meta") or {}).get("model", "")
    calls = _calls(ask)
    first_out = [{"type": "reasoning", "content": ask["reasoning"]}] if ask.get("reasoning") else []
    spans = [span(f"chat {model}", 1, {
        mapping.OPERATION: "chat", "gen_ai.request.model": model,
        "gen_ai.usage.input_tokens": ask["meta"]["input_tokens"], "gen_ai.usage.output_tokens": ask["meta"]["output_tokens"],
        mapping.SYSTEM_INSTRUCTIONS: json.dumps([{"type": "text", "content": system["content"]}]),
        mapping.INPUT_MESSAGES: json.dumps([_text("user", user["content"])]),
        mapping.OUTPUT_MESSAGES: json.dumps([{"role": "assistant", "parts": first_out + calls,
                                              "finish_reason": "tool_call"}])},
        parent=root_id, ms=ask["meta"]["latency_ms"])]
    for k, (call, result) in enumerate(zip(calls, results)):
        meta = result.get("meta") or {}
        attributes = {mapping.OPERATION: "execute_tool", "gen_ai.tool.name": call["name"],
                      "gen_ai.tool.call.id": call["id"], "gen_ai.tool.call.arguments": json.dumps(call["arguments"])}
        if not meta.get("error"):
            attributes["gen_ai.tool.call.result"] = result["content"]
        spans.append(span(f"execute_tool {call['name']}", 2 + k, attributes, parent=root_id,
                          ms=meta.get("latency_ms", 100), error=meta.get("error")))
    history = [_text("user", user["content"]), {"role": "assistant", "parts": calls},
               *({"role": "tool", "parts": [{"type": "tool_call_response", "id": r["tool_call_id"],
                                             "response": r["content"]}]} for r in results)]
    spans.append(span(f"chat {model}", 9, {
        mapping.OPERATION: "chat", "gen_ai.request.model": model,
        mapping.INPUT_MESSAGES: json.dumps(history),
        mapping.OUTPUT_MESSAGES: json.dumps([_text("assistant", final["content"])])},
        parent=root_id, ms=final["meta"]["latency_ms"]))
    verdict = [(mapping.EVALUATION_EVENT, {"gen_ai.evaluation.name": "answer_supported",
                                           mapping.EVALUATION_LABEL: label})]
    root = Span(trace_id=trace_id, span_id=root_id, parent_id="", name=f"invoke_agent {agent}",
                start_ns=spans[0].start_ns - _STEP_NS, end_ns=clock[0],
                attributes={mapping.OPERATION: "invoke_agent", "gen_ai.agent.name": agent},
                events=verdict, resource={"service.name": agent})
    return [*spans, root]  # the root ends last, as the SDK exports it


def traffic_spans(seed: int, n: int) -> list[Span]:
    """The spans of n agent runs: run i is task i's run by system i % 2, a trace of its own."""
    out: list[Span] = []
    for i in range(n):
        item = agent_item(seed, i)
        output = item["outputs"][i % len(SYSTEMS)]
        truth = output["metadata"]["truth"]
        label = "unacceptable" if truth["answer_supported"] == "no" else "acceptable"
        out += _run_spans(output["content"], trace_id=hex_id(seed, "traffic", i)[:32], agent=output["system"],
                          label=label)
    return out
