"""Writes tests/importers/files/*-writer.* with the real writers, offline; not part of the suite (the
project does not depend on these packages). Run it in a throwaway virtualenv:

    python -m venv /tmp/writers && /tmp/writers/bin/pip install arize-phoenix openinference-semantic-conventions
    /tmp/writers/bin/python tests/importers/writer_fixtures.py phoenix
    python -m venv /tmp/writers-lf && /tmp/writers-lf/bin/pip install "langfuse<3"
    /tmp/writers-lf/bin/python tests/importers/writer_fixtures.py langfuse

phoenix: a Phoenix server (arize-phoenix, SQLite in a temporary folder) receives an agent run sent by
the OpenTelemetry SDK with OpenInference's attribute names (openinference-semantic-conventions), and
its REST API's span list (GET /v1/projects/default/spans) is written as it answers.

langfuse: Langfuse's server is not a Python package, so the trace download (GET
/api/public/traces/{id}, the UI's "download trace") is built with the Python SDK's own models of that
response (langfuse.api TraceWithFullDetails, ObservationsView, generated from Langfuse's OpenAPI spec),
validated by them and serialised by them with the API's field names.
"""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

FILES = Path(__file__).parent / "files"
TRACE_HEX = "5b8efff798038103d269b633813fc60c"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def phoenix() -> None:
    import httpx
    from openinference.semconv.trace import (MessageAttributes as MA, OpenInferenceSpanKindValues as K,
                                             SpanAttributes as SA, ToolCallAttributes as TCA)
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.trace import Status, StatusCode

    port, grpc = _free_port(), _free_port()
    with tempfile.TemporaryDirectory() as work:
        env = {**os.environ, "PHOENIX_WORKING_DIR": work, "PHOENIX_PORT": str(port), "PHOENIX_GRPC_PORT": str(grpc),
               "PHOENIX_TELEMETRY_ENABLED": "false"}
        server = subprocess.Popen([str(Path(sys.executable).with_name("phoenix")), "serve"], env=env,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
        try:
            base = f"http://127.0.0.1:{port}"
            for _ in range(120):
                try:
                    if httpx.get(f"{base}/healthz", timeout=1).status_code == 200:
                        break
                except httpx.HTTPError:
                    pass
                time.sleep(1)
            provider = TracerProvider(resource=Resource.create({"service.name": "weather-bot"}))
            provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(endpoint=f"{base}/v1/traces")))
            tracer = provider.get_tracer("writer_fixtures")
            question = "What is the weather in Paris, and should I take an umbrella?"
            args = json.dumps({"city": "Paris"})
            with tracer.start_as_current_span("agent") as root:
                root.set_attribute(SA.OPENINFERENCE_SPAN_KIND, K.AGENT.value)
                root.set_attribute(SA.INPUT_VALUE, question)
                with tracer.start_as_current_span("ChatCompletion") as llm:
                    llm.set_attributes({
                        SA.OPENINFERENCE_SPAN_KIND: K.LLM.value, SA.LLM_MODEL_NAME: "gpt-4o-mini",
                        SA.LLM_PROVIDER: "openai", SA.LLM_TOKEN_COUNT_PROMPT: 120, SA.LLM_TOKEN_COUNT_COMPLETION: 18,
                        f"{SA.LLM_INPUT_MESSAGES}.0.{MA.MESSAGE_ROLE}": "system",
                        f"{SA.LLM_INPUT_MESSAGES}.0.{MA.MESSAGE_CONTENT}": "You answer with the weather tool.",
                        f"{SA.LLM_INPUT_MESSAGES}.1.{MA.MESSAGE_ROLE}": "user",
                        f"{SA.LLM_INPUT_MESSAGES}.1.{MA.MESSAGE_CONTENT}": question,
                        f"{SA.LLM_OUTPUT_MESSAGES}.0.{MA.MESSAGE_ROLE}": "assistant",
                        f"{SA.LLM_OUTPUT_MESSAGES}.0.{MA.MESSAGE_TOOL_CALLS}.0.{TCA.TOOL_CALL_ID}": "call_w1",
                        f"{SA.LLM_OUTPUT_MESSAGES}.0.{MA.MESSAGE_TOOL_CALLS}.0.{TCA.TOOL_CALL_FUNCTION_NAME}":
                            "get_weather",
                        f"{SA.LLM_OUTPUT_MESSAGES}.0.{MA.MESSAGE_TOOL_CALLS}.0.{TCA.TOOL_CALL_FUNCTION_ARGUMENTS_JSON}":
                            args})
                with tracer.start_as_current_span("get_weather") as tool:
                    tool.set_attributes({SA.OPENINFERENCE_SPAN_KIND: K.TOOL.value, SA.TOOL_NAME: "get_weather",
                                         SA.TOOL_PARAMETERS: args, SA.INPUT_VALUE: args,
                                         SA.OUTPUT_VALUE: "upstream timeout"})
                    tool.set_status(Status(StatusCode.ERROR, "Timed out after 30 s"))
                with tracer.start_as_current_span("ChatCompletion") as llm:
                    answer = "I could not reach the weather service; take an umbrella to be safe."
                    llm.set_attributes({
                        SA.OPENINFERENCE_SPAN_KIND: K.LLM.value, SA.LLM_MODEL_NAME: "gpt-4o-mini",
                        SA.LLM_PROVIDER: "openai",
                        f"{SA.LLM_INPUT_MESSAGES}.0.{MA.MESSAGE_ROLE}": "user",
                        f"{SA.LLM_INPUT_MESSAGES}.0.{MA.MESSAGE_CONTENT}": question,
                        f"{SA.LLM_INPUT_MESSAGES}.1.{MA.MESSAGE_ROLE}": "tool",
                        f"{SA.LLM_INPUT_MESSAGES}.1.{MA.MESSAGE_TOOL_CALL_ID}": "call_w1",
                        f"{SA.LLM_INPUT_MESSAGES}.1.{MA.MESSAGE_CONTENT}": "upstream timeout",
                        f"{SA.LLM_OUTPUT_MESSAGES}.0.{MA.MESSAGE_ROLE}": "assistant",
                        f"{SA.LLM_OUTPUT_MESSAGES}.0.{MA.MESSAGE_CONTENT}": answer})
                root.set_attribute(SA.OUTPUT_VALUE, answer)
            provider.shutdown()
            for _ in range(30):
                body = httpx.get(f"{base}/v1/projects/default/spans", timeout=10).json()
                if len(body.get("data") or ()) == 4:
                    break
                time.sleep(1)
            (FILES / "phoenix-writer-spans.json").write_text(json.dumps(body, indent=1, ensure_ascii=False) + "\n")
        finally:
            server.terminate()
            server.wait(timeout=30)


def langfuse() -> None:
    from langfuse.api.resources.commons.types import ObservationsView, TraceWithFullDetails

    def observation(**fields) -> dict:
        return {"traceId": TRACE_HEX, "parentObservationId": "obs-root", "level": "DEFAULT", "statusMessage": None,
                "version": None, "metadata": None, "completionStartTime": None, "modelParameters": None,
                "promptId": None, "usage": None, **fields}

    question = "Find me a train from Paris to Lyon on Friday morning."
    args = {"from": "Paris", "to": "Lyon", "day": "friday", "after": "07:00"}
    observations = [
        observation(id="obs-root", parentObservationId=None, type="SPAN", name="travel-bot",
                    startTime="2026-12-04T08:00:00.000Z", endTime="2026-12-04T08:00:02.600Z", input=question),
        observation(id="obs-gen-1", type="GENERATION", name="OpenAI-generation", model="gpt-4o",
                    startTime="2026-12-04T08:00:00.050Z", endTime="2026-12-04T08:00:00.980Z",
                    input=[{"role": "system", "content": "You book trains."}, {"role": "user", "content": question}],
                    output={"role": "assistant", "content": None, "tool_calls": [
                        {"id": "call_t1", "type": "function",
                         "function": {"name": "search_trains", "arguments": json.dumps(args)}}]},
                    usageDetails={"input": 812, "output": 40, "total": 852}, costDetails={"total": 0.0025},
                    promptTokens=812, completionTokens=40, totalTokens=852),
        observation(id="obs-tool-1", type="TOOL", name="search_trains", startTime="2026-12-04T08:00:01.000Z",
                    endTime="2026-12-04T08:00:01.400Z", input=args, level="ERROR",
                    statusMessage="HTTP 503 from the timetable service", output=None,
                    metadata={"tool_call_id": "call_t1"}),
        observation(id="obs-gen-2", type="GENERATION", name="OpenAI-generation", model="gpt-4o",
                    startTime="2026-12-04T08:00:01.450Z", endTime="2026-12-04T08:00:02.550Z",
                    input=[{"role": "user", "content": question},
                           {"role": "assistant", "content": None, "tool_calls": [
                               {"id": "call_t1", "type": "function",
                                "function": {"name": "search_trains", "arguments": json.dumps(args)}}]},
                           {"role": "tool", "tool_call_id": "call_t1", "content": "HTTP 503"}],
                    output={"role": "assistant", "content": "The timetable service is down; shall I try again?"},
                    usageDetails={"input": 900, "output": 15, "total": 915}),
    ]
    trace = TraceWithFullDetails(
        id=TRACE_HEX, timestamp="2026-12-04T08:00:00.000Z", name="travel-bot", input=question,
        output="The timetable service is down; shall I try again?", sessionId="session-7", tags=["prod"],
        htmlPath=f"/project/demo/traces/{TRACE_HEX}", latency=2.6, totalCost=0.0025,
        observations=[ObservationsView(**o) for o in observations],
        scores=[{"id": "score-1", "traceId": TRACE_HEX, "name": "helpfulness", "source": "EVAL",
                 "timestamp": "2026-12-04T08:05:00.000Z", "createdAt": "2026-12-04T08:05:00.000Z",
                 "updatedAt": "2026-12-04T08:05:00.000Z", "dataType": "CATEGORICAL", "stringValue": "unacceptable",
                 "value": 0, "comment": "answered although the tool failed"}])
    (FILES / "langfuse-writer-trace.json").write_text(trace.json(indent=1, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    {"phoenix": phoenix, "langfuse": langfuse}[sys.argv[1]]()
