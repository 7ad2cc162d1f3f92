"""Trace and log files into a study: Inspect AI logs written by inspect-ai itself, Phoenix spans written
by a Phoenix server and a Langfuse trace download serialised by the Langfuse SDK's own models of it
(tests/importers/writer_fixtures.py), hand-written Langfuse and Phoenix exports in their documented shapes
and OpenAI JSONL (tests/importers/files/), OTLP/JSON; through
the command and the import page; errors name the line or record and the field; all or nothing."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse

from annotation import trajectory
from annotation.importers import ItemFileError
from annotation.traces import files
from annotation.traces.imports import file_import

FILES = Path(__file__).parent / "files"


@pytest.fixture(scope="module")
def inspect_logs(tmp_path_factory) -> list[Path]:
    from tests.importers.inspect_task import write_logs

    return [Path(p) for p in write_logs(str(tmp_path_factory.mktemp("inspect")))]


@pytest.fixture
def study(db, preset_version, admin_user):
    from annotation.services.studies import study_create

    return study_create(name="Trace files", rubric_version=preset_version["rrgen-001"], user=admin_user)


def _runs(study) -> dict[str, tuple[dict, dict, str]]:
    """external id -> (item metadata, parsed trajectory, system)."""
    out = {}
    for item in study.items.prefetch_related("outputs"):
        output = item.outputs.get()
        assert output.kind == "trajectory"
        out[item.external_id] = (item.metadata, trajectory.parse(output.content), output.system)
    return out


def test_inspect_logs_written_by_inspect_ai_both_forms(inspect_logs, study, db):
    eval_log, json_log = inspect_logs
    assert [files.detect(p.name, p.read_bytes()[:8192]) for p in inspect_logs] == ["inspect", "inspect"]
    call_command("import_items", str(eval_log), study=study.slug, stdout=io.StringIO())
    runs = _runs(study)
    assert set(runs) == {"task-lyon-e1", "task-nowhere-e1"}
    metadata, run, system = runs["task-lyon-e1"]
    assert system == "mockllm/model" and metadata["scores"] == {"includes": "C"} and metadata["target"] == "TGV"
    assert [m["role"] for m in run["messages"]] == ["system", "user", "assistant", "tool", "assistant"]
    assert run["messages"][2]["tool_calls"][0]["function"] == {"name": "search_trains", "arguments": '{"to": "Lyon"}'}
    assert run["messages"][2]["meta"]["input_tokens"] == 30
    assert run["messages"][3]["content"] == "09:04 TGV to Lyon"
    assert run["trace_id"] == metadata["trace_id"]  # the sample's uuid
    _, failed, _ = runs["task-nowhere-e1"]
    assert failed["messages"][3]["meta"]["error"].endswith("timetable service unavailable")
    assert failed["messages"][3]["content"].startswith("(the tool failed:")
    # The JSON form of the same log reads to the same trajectories.
    assert files.rows(json_log.read_bytes(), "inspect") == files.rows(eval_log.read_bytes(), "inspect")


def test_langfuse_trace_download(study):
    with (FILES / "langfuse-trace.json").open("rb") as f:
        assert file_import(study=study, file=f, filename="trace-b7f2c1d0.json") == 1
    metadata, run, system = _runs(study)["b7f2c1d0-5e8a-4c3b-9f21-0a1b2c3d4e5f"]
    assert system == "travel-bot" and metadata["scores"] == {"helpfulness": "unacceptable"}
    assert [m["role"] for m in run["messages"]] == ["system", "user", "assistant", "tool", "assistant"]
    assert run["messages"][2]["meta"] | {"started_at": None} == {
        "model": "gpt-4o", "input_tokens": 812, "output_tokens": 40, "latency_ms": 930.0, "span_id": "obs-gen-1",
        "started_at": None}
    tool = run["messages"][3]
    assert tool["content"] == "HTTP 503 from the timetable service"
    assert tool["meta"]["span_id"] == "obs-tool-1" and tool["meta"]["error"] == "HTTP 503 from the timetable service"


def test_phoenix_spans_flat_and_nested_attributes(study):
    with (FILES / "phoenix-spans.jsonl").open("rb") as f:
        assert file_import(study=study, file=f, filename="spans.jsonl") == 1
    _, run, system = _runs(study)["0af7651916cd43dd8448eb211c80319c"]
    assert system == "gpt-4o-mini"
    assert [m["role"] for m in run["messages"]] == ["user", "assistant", "tool", "assistant"]
    assert run["messages"][1]["tool_calls"][0]["id"] == "call_w"
    assert run["messages"][1]["meta"]["span_id"] == "00f067aa0ba902b7"
    assert run["messages"][2]["meta"]["span_id"] == "1111111111111111"  # the TOOL span, matched by name
    assert run["messages"][3]["content"] == "It is 18 C with light rain in Paris."


def test_a_span_list_written_by_phoenix_itself(study):
    """phoenix-writer-spans.json: Phoenix's own REST answer (GET /v1/projects/default/spans) for an agent run
    the OpenTelemetry SDK sent it with OpenInference's attribute names (tests/importers/writer_fixtures.py)."""
    with (FILES / "phoenix-writer-spans.json").open("rb") as f:
        assert file_import(study=study, file=f, filename="spans.json") == 1
    metadata, run, system = _runs(study)["9b84a7121450ba47a72830b2dfe0122c"]
    assert system == "gpt-4o-mini" and metadata["source"] == "phoenix"
    assert [m["role"] for m in run["messages"]] == ["system", "user", "assistant", "tool", "assistant"]
    call = run["messages"][2]["tool_calls"][0]
    assert call["id"] == "call_w1" and json.loads(call["function"]["arguments"]) == {"city": "Paris"}
    assert run["messages"][2]["meta"]["input_tokens"] == 120 and run["messages"][2]["meta"]["span_id"] == \
        "a25da82c35f8ec4d"
    tool = run["messages"][3]
    assert tool["tool_call_id"] == "call_w1" and tool["meta"]["error"] == "Timed out after 30 s"
    assert tool["meta"]["span_id"] == "b4db22d42cddae65"
    assert run["messages"][4]["content"].startswith("I could not reach the weather service")


def test_a_trace_download_serialised_by_langfuses_own_models(study):
    """langfuse-writer-trace.json: the trace download (GET /api/public/traces/{id}) built, validated and
    serialised by the Langfuse SDK's models of that response (tests/importers/writer_fixtures.py)."""
    with (FILES / "langfuse-writer-trace.json").open("rb") as f:
        assert file_import(study=study, file=f, filename="trace.json") == 1
    metadata, run, system = _runs(study)["5b8efff798038103d269b633813fc60c"]
    assert system == "travel-bot" and metadata["scores"] == {"helpfulness": "unacceptable"}
    assert [m["role"] for m in run["messages"]] == ["system", "user", "assistant", "tool", "assistant"]
    assert run["messages"][2]["meta"]["input_tokens"] == 812 and run["messages"][2]["meta"]["latency_ms"] == 930.0
    tool = run["messages"][3]
    assert tool["tool_call_id"] == "call_t1" and tool["meta"]["error"] == "HTTP 503 from the timetable service"
    assert tool["meta"]["span_id"] == "obs-tool-1"
    assert run["messages"][4]["content"] == "The timetable service is down; shall I try again?"


def test_openai_chat_and_responses_jsonl(study):
    with (FILES / "openai-chat.jsonl").open("rb") as f:
        assert file_import(study=study, file=f, filename="chats.jsonl") == 2
    with (FILES / "openai-responses.jsonl").open("rb") as f:
        assert file_import(study=study, file=f, filename="responses.jsonl") == 1
    runs = _runs(study)
    metadata, calc, _ = runs["chat-1"]
    assert metadata == {"source": "openai-chat", "trace_id": "chat-1", "split": "test"}
    assert [m["role"] for m in calc["messages"]] == ["system", "user", "assistant", "tool", "assistant"]
    _, hello, system = runs["chat-2"]
    assert system == "gpt-4o-mini-2024-07-18" and hello["trace_id"] == "chatcmpl-AbC123"
    assert hello["messages"][-1]["meta"] == {"model": "gpt-4o-mini-2024-07-18", "input_tokens": 11,
                                             "output_tokens": 3, "span_id": "chatcmpl-AbC123", "finish_reason": "stop"}
    _, oslo, _ = runs["resp_67ccd2bed1ec8190"]
    assert [m["role"] for m in oslo["messages"]] == ["system", "user", "assistant", "tool", "assistant"]
    assert oslo["messages"][2]["reasoning"] == "Look the weather up."
    assert oslo["messages"][2]["tool_calls"][0]["id"] == "call_o"
    assert oslo["messages"][4]["meta"]["span_id"] == "msg_1" and oslo["messages"][4]["meta"]["output_tokens"] == 12


def test_a_record_that_cannot_be_read_is_named_and_nothing_is_kept(study, tmp_path):
    lines = (FILES / "openai-chat.jsonl").read_text().splitlines()
    broken = json.loads(lines[0])
    broken["id"] = "chat-3"
    broken["messages"][3]["tool_call_id"] = "call_missing"
    path = tmp_path / "chats.jsonl"
    path.write_text("\n".join([lines[0], lines[1], json.dumps(broken)]) + "\n")
    with pytest.raises(CommandError) as refused:
        call_command("import_items", str(path), study=study.slug, stdout=io.StringIO())
    assert "nothing was imported" in str(refused.value)
    assert ("line 3: trajectory.messages[3].tool_call_id: openai-chat: 'call_missing' answers no earlier tool "
            "call") in str(refused.value)
    assert study.items.count() == 0

    path.write_text(lines[0] + "\n" + '{"request": {"model": "m"}, "response": {}}\n')
    with pytest.raises(ItemFileError) as refused:
        file_import(study=study, file=path.open("rb"), filename=path.name, fmt="openai-chat")
    assert refused.value.errors == [(2, "request.messages", "openai-chat: required: list")]

    bad_phoenix = (FILES / "phoenix-spans.jsonl").read_text().replace('"llm.input_messages.0.message.role": "user", ', "")
    with pytest.raises(ItemFileError) as refused:
        file_import(study=study, file=io.BytesIO(bad_phoenix.encode()), filename="spans.jsonl")
    assert refused.value.errors == [(2, "attributes.llm.input_messages[0].message.role", "phoenix: required")]
    assert study.items.count() == 0


def test_the_import_page_takes_an_inspect_log(inspect_logs, study, client, admin_user):
    client.force_login(admin_user)
    eval_log = inspect_logs[0]
    with eval_log.open("rb") as f:
        response = client.post(reverse("manage-upload", args=[study.slug]), {"file": f}, follow=True)
    assert response.status_code == 200
    assert "Imported 2 items" in response.content.decode()
    assert study.items.count() == 2


def test_the_api_upload_takes_a_trace_file_and_names_a_problem(study, admin_user, api_for):
    api = api_for(admin_user)
    url = f"/api/studies/{study.slug}/items/"
    broken = (FILES / "openai-responses.jsonl").read_text().replace('"call_id": "call_o", "output"', '"output"')
    refused = api.post(url, {"file": io.BytesIO(broken.encode())}, format="multipart")
    assert refused.status_code == 400
    assert refused.json()["errors"] == [{"line": 1, "field": "input[3].call_id", "message": "openai-responses: required"}]
    with (FILES / "openai-responses.jsonl").open("rb") as f:
        assert api.post(url, {"file": f}, format="multipart").json() == {"imported": 1}
