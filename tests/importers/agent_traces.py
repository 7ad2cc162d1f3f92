"""A tool-using agent's traces, recorded with the OpenTelemetry SDK itself (GenAI semantic
conventions: an invoke_agent root span, chat spans with gen_ai.input/output.messages, execute_tool
spans, gen_ai.evaluation.result events), as an instrumented agent framework writes them."""

from __future__ import annotations

import json

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.trace import Status, StatusCode

SYSTEM = [{"type": "text", "content": "You are a travel agent. Use the tools."}]


def _text(role: str, text: str) -> dict:
    return {"role": role, "parts": [{"type": "text", "content": text}]}


def record_agent_run(tracer, *, question: str, tool_fails: bool = False, label: str | None = None) -> int:
    """One agent run: a model call asking for a tool, the tool (failing or not), a final answer.
    Returns the trace id (an int, as the SDK keeps it)."""
    user = _text("user", question)
    call = {"type": "tool_call", "id": "call_1", "name": "search_trains", "arguments": {"to": "Lyon", "day": "fri"}}
    with tracer.start_as_current_span("invoke_agent travel-bot") as root:
        root.set_attribute("gen_ai.operation.name", "invoke_agent")
        root.set_attribute("gen_ai.agent.name", "travel-bot")
        with tracer.start_as_current_span("chat gpt-4o") as chat:
            chat.set_attribute("gen_ai.operation.name", "chat")
            chat.set_attribute("gen_ai.provider.name", "openai")
            chat.set_attribute("gen_ai.request.model", "gpt-4o")
            chat.set_attribute("gen_ai.response.model", "gpt-4o-2024-08-06")
            chat.set_attribute("gen_ai.usage.input_tokens", 812)
            chat.set_attribute("gen_ai.usage.output_tokens", 40)
            chat.set_attribute("gen_ai.response.finish_reasons", ["tool_calls"])
            chat.set_attribute("gen_ai.system_instructions", json.dumps(SYSTEM))
            chat.set_attribute("gen_ai.input.messages", json.dumps([user]))
            chat.set_attribute("gen_ai.output.messages", json.dumps([
                {"role": "assistant", "parts": [{"type": "reasoning", "content": "I need the timetable first."}, call],
                 "finish_reason": "tool_call"}]))
        with tracer.start_as_current_span("execute_tool search_trains") as tool:
            tool.set_attribute("gen_ai.operation.name", "execute_tool")
            tool.set_attribute("gen_ai.tool.name", "search_trains")
            tool.set_attribute("gen_ai.tool.call.id", "call_1")
            tool.set_attribute("gen_ai.tool.call.arguments", json.dumps({"to": "Lyon", "day": "fri"}))
            if tool_fails:
                tool.set_attribute("error.type", "HTTPError")
                tool.set_status(Status(StatusCode.ERROR, "HTTP 503 from the timetable service"))
            else:
                tool.set_attribute("gen_ai.tool.call.result", json.dumps({"trains": ["09:04 TGV", "11:04 TGV"]}))
        answer = ("I could not reach the timetable; please try again later." if tool_fails
                  else "The 09:04 TGV is the first train on Friday.")
        result = ("HTTP 503 from the timetable service" if tool_fails else '{"trains": ["09:04 TGV", "11:04 TGV"]}')
        with tracer.start_as_current_span("chat gpt-4o") as chat:
            chat.set_attribute("gen_ai.operation.name", "chat")
            chat.set_attribute("gen_ai.request.model", "gpt-4o")
            chat.set_attribute("gen_ai.usage.input_tokens", 900)
            chat.set_attribute("gen_ai.usage.output_tokens", 25)
            chat.set_attribute("gen_ai.input.messages", json.dumps([
                user, {"role": "assistant", "parts": [call]},
                {"role": "tool", "parts": [{"type": "tool_call_response", "id": "call_1", "response": result}]}]))
            chat.set_attribute("gen_ai.output.messages", json.dumps([_text("assistant", answer)]))
        if label is not None:
            root.add_event("gen_ai.evaluation.result", {"gen_ai.evaluation.name": "helpfulness",
                                                        "gen_ai.evaluation.score.label": label})
        return root.get_span_context().trace_id


def provider(processor) -> TracerProvider:
    tracer_provider = TracerProvider(resource=Resource.create({"service.name": "travel-bot"}))
    tracer_provider.add_span_processor(processor)
    return tracer_provider
