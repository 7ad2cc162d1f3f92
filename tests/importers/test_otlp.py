"""OTLP/HTTP traces into a study: sent by the OpenTelemetry SDK's own exporter (protobuf) to a live
server, and as OTLP/JSON encoded by the SDK's own encoder; the sampling rule checked against the
SDK's TraceIdRatioBased sampler; the bounds (body size, spans per request, rate per token)."""

from __future__ import annotations

import base64
import json

import pytest
from google.protobuf.json_format import MessageToDict
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.sampling import Decision, TraceIdRatioBased
from rest_framework.authtoken.models import Token

from annotation import trajectory
from tests.importers.agent_traces import provider, record_agent_run


@pytest.fixture
def study(db, preset_version, admin_user):
    from annotation.services.studies import study_create

    return study_create(name="Agent traces", rubric_version=preset_version["rrgen-001"], user=admin_user)


def otlp_url(study, query: str = "") -> str:
    return f"/api/studies/{study.slug}/otlp/v1/traces" + (f"?{query}" if query else "")


class RecordingExporter(OTLPSpanExporter):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.results: list[SpanExportResult] = []

    def export(self, spans):
        result = super().export(spans)
        self.results.append(result)
        return result


def _stored(study, trace_id: int) -> tuple[dict, dict]:
    item = study.items.get(external_id=format(trace_id, "032x"))
    output = item.outputs.get()
    assert output.kind == "trajectory"
    return item.metadata, trajectory.parse(output.content)


@pytest.mark.django_db(transaction=True)
def test_the_sdk_exporter_sends_spans_one_by_one_and_each_trace_becomes_one_trajectory(live_server, study, admin_user):
    token = Token.objects.create(user=admin_user).key
    exporter = RecordingExporter(endpoint=live_server.url + otlp_url(study), headers={"Authorization": f"Bearer {token}"})
    # SimpleSpanProcessor exports every span as it ends: the root span comes in the last request.
    tracer_provider = provider(SimpleSpanProcessor(exporter))
    tracer = tracer_provider.get_tracer("agent")
    fine = record_agent_run(tracer, question="Book me a train to Lyon on Friday.")
    failed = record_agent_run(tracer, question="Train to Lyon, Friday?", tool_fails=True)
    tracer_provider.shutdown()

    assert exporter.results == [SpanExportResult.SUCCESS] * 8
    assert study.items.count() == 2
    metadata, run = _stored(study, fine)
    assert metadata["source"] == "opentelemetry" and metadata["sampling"]["probability"] == 1.0
    assert run["trace_id"] == format(fine, "032x")
    roles = [m["role"] for m in run["messages"]]
    assert roles == ["system", "user", "assistant", "tool", "assistant"]
    ask = run["messages"][2]
    assert ask["reasoning"] == "I need the timetable first."
    assert ask["tool_calls"][0]["function"] == {"name": "search_trains", "arguments": '{"to": "Lyon", "day": "fri"}'}
    assert ask["meta"]["model"] == "gpt-4o-2024-08-06" and ask["meta"]["input_tokens"] == 812
    assert len(ask["meta"]["span_id"]) == 16 and ask["meta"]["latency_ms"] >= 0
    assert run["messages"][3]["content"] == '{"trains": ["09:04 TGV", "11:04 TGV"]}'
    assert run["messages"][4]["content"] == "The 09:04 TGV is the first train on Friday."
    assert run["meta"] == {"agent": "travel-bot", "service": "travel-bot", "root_span": "invoke_agent travel-bot"}

    _, broken = _stored(study, failed)
    tool_step = broken["messages"][3]
    assert tool_step["role"] == "tool" and tool_step["meta"]["error"] == "HTTP 503 from the timetable service"
    assert tool_step["meta"]["span_id"] != ask["meta"]["span_id"]


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("where", ["study", "query"])
def test_sampling_keeps_every_flagged_trace_and_the_share_the_sdk_sampler_would(live_server, study, admin_user, where):
    """The rule stored on the study (issue 56 §2), or for a study without one, the endpoint's query."""
    token = Token.objects.create(user=admin_user).key
    if where == "study":
        from annotation.services.studies import study_settings_update

        study_settings_update(study=study, user=admin_user,
                              changes={"trace_sampling": {"rate": "0.25", "flags": ["Unacceptable", "fail"]}})
        assert study.trace_sampling == {"rate": 0.25, "flags": ["unacceptable", "fail"]}
    query = "" if where == "study" else "sample=0.25&flag=unacceptable,fail"
    exporter = RecordingExporter(endpoint=live_server.url + otlp_url(study, query),
                                 headers={"Authorization": f"Token {token}"})
    tracer_provider = provider(BatchSpanProcessor(exporter))
    tracer = tracer_provider.get_tracer("agent")
    flagged = {record_agent_run(tracer, question=f"q{n}", label=("unacceptable", "FAIL", "fail")[n % 3])
               for n in range(6)}
    rest = {record_agent_run(tracer, question=f"r{n}", label="acceptable" if n % 2 else None) for n in range(40)}
    tracer_provider.shutdown()
    assert exporter.results and set(exporter.results) == {SpanExportResult.SUCCESS}

    sampler = TraceIdRatioBased(0.25)
    chosen = {t for t in rest if sampler.should_sample(None, t, "invoke_agent").decision == Decision.RECORD_AND_SAMPLE}
    assert 0 < len(chosen) < len(rest)
    stored = {item.external_id: item.metadata["sampling"] for item in study.items.all()}
    assert set(stored) == {format(t, "032x") for t in flagged | chosen}
    for trace_id in flagged:
        assert stored[format(trace_id, "032x")]["rule"] == "flagged"
        assert stored[format(trace_id, "032x")]["probability"] == 1.0
    for trace_id in chosen:
        assert stored[format(trace_id, "032x")] == {"rule": "random", "rate": 0.25, "probability": 0.25, "weight": 4.0}


def otlp_json(tracer_count: int = 1) -> tuple[bytes, list[int]]:
    """OTLP/JSON of agent runs: the SDK's own protobuf encoding in the JSON mapping, with the ids
    in hex as the OTLP/JSON specification has them (protobuf's JSON mapping writes base64)."""
    memory = InMemorySpanExporter()
    tracer_provider = provider(SimpleSpanProcessor(memory))
    tracer = tracer_provider.get_tracer("agent")
    traces = [record_agent_run(tracer, question=f"q{n}", tool_fails=n == 1) for n in range(tracer_count)]
    data = MessageToDict(encode_spans(memory.get_finished_spans()))
    for resource_spans in data["resourceSpans"]:
        for scope_spans in resource_spans["scopeSpans"]:
            for span in scope_spans["spans"]:
                for key in ("traceId", "spanId", "parentSpanId"):
                    if key in span:
                        span[key] = base64.b64decode(span[key]).hex()
    return json.dumps(data).encode(), traces


def test_otlp_json_gives_the_same_trajectory(client, study, admin_user):
    token = Token.objects.create(user=admin_user).key
    body, traces = otlp_json(2)
    response = client.post(otlp_url(study), body, content_type="application/json", HTTP_AUTHORIZATION=f"Token {token}")
    assert response.status_code == 200, response.content
    assert response.json() == {}
    _, run = _stored(study, traces[0])
    assert [m["role"] for m in run["messages"]] == ["system", "user", "assistant", "tool", "assistant"]
    _, broken = _stored(study, traces[1])
    assert broken["messages"][3]["meta"]["error"] == "HTTP 503 from the timetable service"
    # A retried request (the exporter retries on 5xx and timeouts) adds nothing twice.
    again = client.post(otlp_url(study), body, content_type="application/json", HTTP_AUTHORIZATION=f"Token {token}")
    assert again.status_code == 200 and study.items.count() == 2


def test_a_span_that_cannot_be_read_is_refused_naming_it(client, study, admin_user):
    token = Token.objects.create(user=admin_user).key
    body, _ = otlp_json()
    data = json.loads(body)
    data["resourceSpans"][0]["scopeSpans"][0]["spans"][1]["traceId"] = "not-hex"
    response = client.post(otlp_url(study), json.dumps(data), content_type="application/json",
                           HTTP_AUTHORIZATION=f"Token {token}")
    assert response.status_code == 400
    assert response.json()["message"] == "resourceSpans[0].scopeSpans[0].spans[1].traceId: must be 32 hex digits"
    assert study.items.count() == 0


def test_a_trace_whose_messages_cannot_be_read_is_rejected_as_partial_success(client, study, admin_user):
    token = Token.objects.create(user=admin_user).key
    body, _ = otlp_json()
    data = json.loads(body)
    spans = data["resourceSpans"][0]["scopeSpans"][0]["spans"]
    chat = next(s for s in spans if s["name"] == "chat gpt-4o")
    for attribute in chat["attributes"]:
        if attribute["key"] == "gen_ai.input.messages":
            attribute["value"] = {"stringValue": "[{\"role\": \"user\", \"parts\": \"oops\"}]"}
    response = client.post(otlp_url(study), json.dumps(data), content_type="application/json",
                           HTTP_AUTHORIZATION=f"Token {token}")
    assert response.status_code == 200
    partial = response.json()["partialSuccess"]
    assert partial["rejectedSpans"] == str(len(spans))
    assert "attributes.gen_ai.input.messages[0].parts: must be a list" in partial["errorMessage"]
    assert study.items.count() == 0


def test_bounds_body_spans_and_rate(client, study, admin_user, settings, monkeypatch):
    monkeypatch.setattr("annotation.traces.api._clock", lambda: 1_800_000_030.0)  # one rate window
    token = Token.objects.create(user=admin_user).key
    body, _ = otlp_json()
    headers = {"content_type": "application/json", "HTTP_AUTHORIZATION": f"Token {token}"}
    settings.CONCORD_LIMITS = {"otlp.body": len(body) - 1}
    assert client.post(otlp_url(study), body, **headers).status_code == 413
    settings.CONCORD_LIMITS = {"otlp.body": len(body), "otlp.spans": 3}  # a run has 4 spans
    too_many = client.post(otlp_url(study), body, **headers)
    assert too_many.status_code == 400 and "more than 3 spans" in too_many.json()["message"]
    settings.CONCORD_LIMITS = {"otlp.per_token_per_minute": 2}  # the two requests above counted
    limited = client.post(otlp_url(study), body, **headers)
    assert limited.status_code == 429 and limited["Retry-After"] == "30"
    assert study.items.count() == 0


def test_only_a_token_of_someone_who_manages_the_study(client, study, annotator):
    body, _ = otlp_json()
    assert client.post(otlp_url(study), body, content_type="application/json").status_code == 401
    stranger = Token.objects.create(user=annotator).key
    refused = client.post(otlp_url(study), body, content_type="application/json", HTTP_AUTHORIZATION=f"Token {stranger}")
    assert refused.status_code in (403, 404)
    assert study.items.count() == 0
    wrong_type = client.post(otlp_url(study), body, content_type="text/plain",
                             HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=study.created_by).key}")
    assert wrong_type.status_code == 415


def test_gzip_bodies_and_a_body_that_inflates_beyond_the_bound(client, study, admin_user, settings):
    import gzip

    token = Token.objects.create(user=admin_user).key
    body, traces = otlp_json()
    headers = {"content_type": "application/json", "HTTP_AUTHORIZATION": f"Token {token}",
               "HTTP_CONTENT_ENCODING": "gzip"}
    settings.CONCORD_LIMITS = {"otlp.body": 2000}  # the inflated body may be ten times that
    bomb = client.post(otlp_url(study), gzip.compress(b" " * 20_001), **headers)
    assert bomb.status_code == 400 and "inflates to over 20000 bytes" in bomb.json()["message"]
    settings.CONCORD_LIMITS = {}  # the table's own 5 MiB
    assert client.post(otlp_url(study), gzip.compress(body), **headers).status_code == 200
    assert study.items.filter(external_id=format(traces[0], "032x")).exists()


def test_an_otlp_json_file_through_the_import(study, tmp_path):
    from annotation.traces.imports import file_import

    body, traces = otlp_json(2)
    path = tmp_path / "traces.jsonl"
    path.write_bytes(body + b"\n")
    with path.open("rb") as f:
        assert file_import(study=study, file=f, filename=path.name) == 2
    _, run = _stored(study, traces[1])
    assert run["messages"][3]["meta"]["error"] == "HTTP 503 from the timetable service"


def test_the_step_map_carries_the_sources_trace_and_span_ids_back(client, study, admin_user):
    from annotation.reports.steps import step_map

    token = Token.objects.create(user=admin_user).key
    memory = InMemorySpanExporter()
    tracer_provider = provider(SimpleSpanProcessor(memory))
    trace = record_agent_run(tracer_provider.get_tracer("agent"), question="Lyon?")
    spans = {s.name: s for s in memory.get_finished_spans()}  # the second chat span overwrites the first
    body = encode_spans(memory.get_finished_spans()).SerializeToString()
    response = client.post(otlp_url(study), body, content_type="application/x-protobuf",
                           HTTP_AUTHORIZATION=f"Token {token}")
    assert response.status_code == 200 and response["Content-Type"] == "application/x-protobuf"
    rows = {row["step"]: row for row in step_map(study)}
    assert {row["trace_id"] for row in rows.values()} == {format(trace, "032x")}
    tool_span = format(spans["execute_tool search_trains"].context.span_id, "016x")
    assert rows["m2.t0"]["tool_call_id"] == "call_1" and rows["m3"]["span_id"] == tool_span
    assert rows["m4"]["span_id"] == format(spans["chat gpt-4o"].context.span_id, "016x")


def test_an_agent_called_by_another_service_is_stored_when_its_own_span_ends(client, study, admin_user):
    from opentelemetry import trace as trace_api
    from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags

    token = Token.objects.create(user=admin_user).key
    memory = InMemorySpanExporter()
    tracer = provider(SimpleSpanProcessor(memory)).get_tracer("agent")
    upstream = SpanContext(trace_id=0x4BF92F3577B34DA6A3CE929D0E0E4736, span_id=0x00F067AA0BA902B7, is_remote=True,
                           trace_flags=TraceFlags(TraceFlags.SAMPLED))
    with trace_api.use_span(NonRecordingSpan(upstream)):  # a W3C traceparent from the calling service
        record_agent_run(tracer, question="Lyon?")
    body = encode_spans(memory.get_finished_spans()).SerializeToString()
    response = client.post(otlp_url(study), body, content_type="application/x-protobuf",
                           HTTP_AUTHORIZATION=f"Token {token}")
    assert response.status_code == 200
    assert list(study.items.values_list("external_id", flat=True)) == ["4bf92f3577b34da6a3ce929d0e0e4736"]


def test_a_trace_file_is_bounded_in_spans_over_all_its_lines():
    """An OTLP/JSON file's bound on spans counts the spans of all its lines: it counted each line alone, so a file of
    many lines held any number of spans (up to its size in bytes)."""
    from annotation.traces import files, otel
    from annotation.traces.mapping import TraceFormatError

    lines = [otlp_json()[0] for _ in range(3)]  # three runs, each a request as the SDK's exporter sends it
    per_line = len(otel.spans_from_json(lines[0], max_spans=10**6))
    text = b"\n".join(lines) + b"\n"
    assert len(files.rows(text, "otlp-json", max_spans=3 * per_line)) == 3
    with pytest.raises(TraceFormatError) as refused:
        files.rows(text, "otlp-json", max_spans=3 * per_line - 1)
    assert (refused.value.where, refused.value.message) == (
        "line 3", f"more than {3 * per_line - 1:,} spans in one file; split it")
