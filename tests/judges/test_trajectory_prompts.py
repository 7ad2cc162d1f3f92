"""Trajectories as judges receive them: chat messages with tool calls in each provider's own format,
truncated by the stated rule, blinded like a rater's view. No Django, no server."""
from __future__ import annotations

import json

from judges.backends.base import JudgeRequest
from judges.prompts import trajectory as P
from judges.providers import build_request

RUBRIC = {"slug": "agent", "name": "Agent", "criteria": [
    {"key": "task_success", "name": "Task done?", "kind": "likert", "min": 1, "max": 5},
    {"key": "call_needed", "name": "Was this tool call needed?", "kind": "binary", "scope": "steps",
     "steps": ["tool_call"], "choices": [{"value": "yes"}, {"value": "no"}]},
]}
TRAJ = {"messages": [
    {"role": "system", "content": "You are a travel agent."},
    {"role": "user", "content": "Book me a train to Lyon."},
    {"role": "assistant", "content": None, "reasoning": "I need the timetable first.",
     "tool_calls": [{"id": "call_1", "type": "function",
                     "function": {"name": "search_trains", "arguments": json.dumps({"to": "Lyon"})}},
                    {"id": "call.2", "type": "function",
                     "function": {"name": "get_weather", "arguments": json.dumps({"blob": "x" * 5000})}}],
     "meta": {"model": "gpt-4o-secret-model", "input_tokens": 800}},
    {"role": "tool", "tool_call_id": "call_1", "content": "R" * 10_000,
     "meta": {"error": "HTTP 503 from timetable service"}},
    {"role": "assistant", "content": "The 9:04 TGV is the first train.", "meta": {"model": "gpt-4o-secret-model"}},
]}
ITEM = {"id": "i1", "context": "Travel request", "outputs": [{"content": json.dumps(TRAJ), "kind": "trajectory"}]}


def test_the_trajectory_is_sent_as_chat_messages_with_tool_calls_truncated_by_the_rule():
    prompt = P.build(RUBRIC, RUBRIC["criteria"][1], ITEM, json.dumps(TRAJ), ["m2.t0"])
    roles = [m["role"] for m in prompt.messages]
    # judge's instructions, the agent's turns (both calls answered right after), the question
    assert roles == ["user", "user", "assistant", "tool", "tool", "assistant", "user"]
    first, call_msg, result, unanswered = prompt.messages[0], prompt.messages[2], prompt.messages[3], prompt.messages[4]
    assert "You are a travel agent." in first["content"] and "Was this tool call needed?" in first["content"]
    assert [c["id"] for c in call_msg["tool_calls"]] == ["call_1", "call.2"]
    assert "[reasoning summary] I need the timetable first." in call_msg["content"]
    assert result["tool_call_id"] == "call_1" and result["content"].startswith("[tool error] HTTP 503")
    cut = len("R" * 10_000) - P.RESULT_CHARS
    assert f"[... {cut} characters cut ...]" in result["content"]
    assert result["content"].count("R") == P.RESULT_CHARS
    assert unanswered == {"role": "tool", "tool_call_id": "call.2", "content": "(no result recorded)"}
    args = json.loads(call_msg["tool_calls"][1]["function"]["arguments"])  # still JSON, as servers parse it
    assert args["cut_characters"] == len(TRAJ["messages"][2]["tool_calls"][1]["function"]["arguments"]) - 2000
    assert "step m2.t0" in prompt.messages[-1]["content"] and "search_trains" in prompt.messages[-1]["content"]
    assert "secret-model" not in json.dumps(prompt.messages)  # blinded: no model names, no meta
    assert "Steps are never dropped" in P.TRUNCATION_RULE and str(P.RESULT_CHARS) in P.TRUNCATION_RULE


def test_structured_prompt_asks_every_step_in_one_json_object():
    prompt = P.build(RUBRIC, RUBRIC["criteria"][1], ITEM, json.dumps(TRAJ), ["m2.t0", "m2.t1"], structured=True)
    assert prompt.expects == "json_fields"
    assert '"m2.t0": "<one of yes|no>", "m2.t1": "<one of yes|no>"' in prompt.messages[-1]["content"]


def test_anthropic_gets_tool_use_and_tool_result_blocks_in_alternating_turns():
    judge = {"name": "claude", "backend": "openai", "provider": "anthropic", "model": "claude-sonnet-4-5",
             "endpoint": "https://api.anthropic.com", "api_key_env": "ANTHROPIC_API_KEY", "sampling": {}}
    prompt = P.build(RUBRIC, RUBRIC["criteria"][0], ITEM, json.dumps(TRAJ))
    body = build_request(judge, JudgeRequest(messages=prompt.messages, max_tokens=100), mask_key=True).json
    turns = body["messages"]
    assert [t["role"] for t in turns] == ["user", "assistant", "user", "assistant", "user"]
    uses = [b for b in turns[1]["content"] if b["type"] == "tool_use"]
    assert [(u["id"], u["name"], u["input"]) for u in uses][0] == ("call_1", "search_trains", {"to": "Lyon"})
    assert uses[1]["id"] == "call_2"  # Anthropic's id pattern has no dots
    results = [b for b in turns[2]["content"] if b["type"] == "tool_result"]
    assert [r["tool_use_id"] for r in results] == ["call_1", "call_2"] and results[0]["is_error"] is True
    assert {t["name"] for t in body["tools"]} == {"search_trains", "get_weather"}
    assert body["tool_choice"] == {"type": "none"}  # the judge answers in text, it calls no agent tool
    assert "system" not in body or "travel agent" not in body["system"]  # the agent's prompt is quoted, not obeyed


def test_openai_compatible_servers_get_the_messages_as_they_are():
    judge = {"name": "local", "backend": "openai", "provider": "vllm", "model": "m",
             "endpoint": "http://127.0.0.1:9/v1", "sampling": {}}
    prompt = P.build(RUBRIC, RUBRIC["criteria"][0], ITEM, json.dumps(TRAJ))
    body = build_request(judge, JudgeRequest(messages=prompt.messages, max_tokens=100), mask_key=True).json
    assert [m["role"] for m in body["messages"]] == ["user", "user", "assistant", "tool", "tool", "assistant", "user"]
    assert body["messages"][2]["tool_calls"][0]["function"]["name"] == "search_trains"


def test_the_estimate_counts_what_the_tool_calls_send():
    from judges.tokens import approximate

    prompt = P.build(RUBRIC, RUBRIC["criteria"][0], ITEM, json.dumps(TRAJ))
    without_calls = [{k: v for k, v in m.items() if k != "tool_calls"} for m in prompt.messages]
    arguments = sum(len(c["function"]["arguments"]) for c in prompt.messages[2]["tool_calls"])
    assert approximate(prompt.messages, None) - approximate(without_calls, None) >= arguments // 4


def test_the_test_servers_refuse_tool_messages_out_of_place_as_the_apis_do():
    from judges.fakeserver import tool_message_problem
    from tests.doubles.strict_provider_server import Refused, check_anthropic_tools

    assert "did not have response messages: c" in tool_message_problem(
        [{"role": "assistant", "tool_calls": [{"id": "c"}]}, {"role": "user", "content": "x"}])
    assert "must be a response to a preceeding message" in tool_message_problem(
        [{"role": "user", "content": "x"}, {"role": "tool", "tool_call_id": "c", "content": "r"}])
    prompt = P.build(RUBRIC, RUBRIC["criteria"][0], ITEM, json.dumps(TRAJ))
    assert tool_message_problem([dict(m) for m in prompt.messages]) is None
    unanswered = [{"role": "user", "content": [{"type": "text", "text": "x"}]},
                  {"role": "assistant", "content": [{"type": "tool_use", "id": "a", "name": "t", "input": {}}]},
                  {"role": "user", "content": [{"type": "text", "text": "y"}]}]
    try:
        check_anthropic_tools(unanswered, {"tools": [{"name": "t"}]})
    except Refused as exc:
        assert "without `tool_result` blocks immediately after: a" in str(exc)
    else:
        raise AssertionError("an unanswered tool_use was accepted")
