"""Provider profiles: the requests each provider gets, its answers read back, and load-time refusals."""
from __future__ import annotations

import json

import pytest

from judges.backends.errors import PermanentBackendError, RateLimited, RetryableBackendError
from judges.config import JudgeConfigError, validate_judge
from judges.providers import PROVIDERS, build_request, read_response, request_for_judge

MSGS = [{"role": "system", "content": "You judge."}, {"role": "user", "content": "Rate it."}]


def judge(**kw):
    return validate_judge({"name": "j", **kw})


def http(j, schema=None, **changes):
    return build_request(j, request_for_judge(j, MSGS, json_schema=schema, **changes), key="sk-test-123456789")


def refusals(**kw) -> dict[str, str]:
    with pytest.raises(JudgeConfigError) as info:
        judge(**kw)
    return dict(info.value.errors)


def test_old_files_are_the_generic_provider():
    j = judge(backend="openai", model="m", endpoint="http://127.0.0.1:9/v1", sampling={"max_tokens": 30})
    assert j["provider"] == "openai-compatible"
    req = http(j)
    assert req.url == "http://127.0.0.1:9/v1/chat/completions" and req.path == "/v1/chat/completions"
    assert req.json["max_tokens"] == 30 and req.json["temperature"] == 0.0
    assert req.headers["Authorization"] == "Bearer sk-test-123456789"
    assert "response_format" not in http(j, {"type": "object"}).json  # only when the server is said to take it


def test_openai_reasoning_model_takes_max_completion_tokens_and_effort_with_headroom():
    j = judge(provider="openai", model="gpt-5-mini", sampling={"max_tokens": 300, "reasoning_effort": "minimal"})
    assert j["endpoint"] == "https://api.openai.com/v1" and j["api_key_env"] == "OPENAI_API_KEY"
    body = http(j).json
    assert "max_tokens" not in body and "temperature" not in body and "top_p" not in body
    assert body["max_completion_tokens"] == 300 + 1024 and body["reasoning_effort"] == "minimal"
    j = judge(provider="openai", model="o4-mini", sampling={"max_tokens": 100, "reasoning_tokens": 50})
    assert http(j).json["max_completion_tokens"] == 150 and http(j).json["reasoning_effort"] == "low"
    plain = judge(provider="openai", model="gpt-4.1-mini", sampling={"temperature": 0.2, "max_tokens": 10})
    assert http(plain).json["temperature"] == 0.2 and http(plain).json["max_completion_tokens"] == 10


def test_openai_reasoning_refusals_name_the_rule_and_the_fix():
    errs = refusals(provider="openai", model="gpt-5", method="geval", sampling={"temperature": 0, "top_p": 0.9})
    assert "default temperature" in errs["sampling.temperature"] and "remove" in errs["sampling.temperature"]
    assert "top_p" in errs["sampling.top_p"]
    assert "no logprobs" in errs["mode"]
    errs = refusals(provider="openai", model="gpt-4o", sampling={"reasoning_effort": "low"})
    assert "not a reasoning model" in errs["sampling.reasoning_effort"]
    # the name rule can be overridden for deployments with their own names
    j = judge(provider="openai", model="my-deployment", backend_options={"reasoning_model": True})
    assert "max_completion_tokens" in http(j).json and "temperature" not in http(j).json


def test_anthropic_messages_api_shape():
    j = judge(provider="anthropic", model="claude-sonnet-4-5", sampling={"max_tokens": 200, "temperature": 0})
    req = http(j, {"type": "object", "properties": {"score": {"type": "integer"}}})
    assert req.url == "https://api.anthropic.com/v1/messages"
    assert req.headers["x-api-key"] == "sk-test-123456789" and req.headers["anthropic-version"] == "2023-06-01"
    assert "Authorization" not in req.headers
    assert req.json["system"] == "You judge." and req.json["max_tokens"] == 200
    assert req.json["messages"] == [{"role": "user", "content": [{"type": "text", "text": "Rate it."}]}]
    assert req.json["tool_choice"] == {"type": "tool", "name": "record_judgement"}
    assert req.json["tools"][0]["input_schema"]["properties"]["score"] == {"type": "integer"}
    thinking = judge(provider="anthropic", model="claude-sonnet-4-5", sampling={"max_tokens": 200,
                                                                                "reasoning_tokens": 2048})
    body = http(thinking).json
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 2048} and body["max_tokens"] == 2248
    assert "temperature" not in body


def test_anthropic_refusals():
    errs = refusals(provider="anthropic", model="claude-sonnet-4-5", method="geval",
                    sampling={"top_p": 0.9, "seed": 3, "temperature": 1.5})
    assert "requires max_tokens" in errs["sampling.max_tokens"]
    assert "no token logprobs" in errs["mode"]
    assert "0 to 1" in errs["sampling.temperature"]
    assert "sampling.top_p" in errs["sampling.top_p"] and "no seed" in errs["sampling.seed"]
    errs = refusals(provider="anthropic", model="claude-opus-4-1", structured_output=True,
                    sampling={"max_tokens": 100, "reasoning_tokens": 512})
    assert "at least 1024" in errs["sampling.reasoning_tokens"] and "forced tool call" in errs["structured_output"]


def test_anthropic_answers_read_back():
    j = judge(provider="anthropic", model="claude-sonnet-4-5", sampling={"max_tokens": 200})
    body = {"type": "message", "model": "claude-sonnet-4-5", "stop_reason": "max_tokens",
            "content": [{"type": "text", "text": "Score: 4"}], "usage": {"input_tokens": 12, "output_tokens": 200}}
    r = read_response(j, 200, json.dumps(body).encode())
    assert (r.text, r.finish_reason, r.input_tokens, r.output_tokens) == ("Score: 4", "length", 12, 200)
    tool = {**body, "stop_reason": "tool_use",
            "content": [{"type": "tool_use", "id": "t", "name": "record_judgement", "input": {"score": 4}}]}
    assert json.loads(read_response(j, 200, tool).text) == {"score": 4}
    err = {"type": "error", "error": {"type": "invalid_request_error", "message": "max_tokens: Field required"}}
    with pytest.raises(PermanentBackendError, match="max_tokens: Field required"):
        read_response(j, 400, json.dumps(err))
    with pytest.raises(RetryableBackendError):
        read_response(j, 529, json.dumps({"type": "error", "error": {"type": "overloaded_error", "message": "x"}}))
    with pytest.raises(RateLimited):
        read_response(j, 429, "{}")


@pytest.mark.parametrize("provider,field,shape", [
    ("vllm", "structured_outputs", {"json": {"type": "object"}}),
    ("llamacpp", "response_format", {"type": "json_object", "schema": {"type": "object"}}),
    ("tgi", "response_format", {"type": "json_object", "value": {"type": "object"}}),
    ("sglang", "response_format", {"type": "json_schema", "json_schema": {"name": "judgement",
                                                                          "schema": {"type": "object"}}}),
    ("ollama", "response_format", {"type": "json_schema", "json_schema": {"name": "judgement",
                                                                          "schema": {"type": "object"}}}),
    ("openai-compatible", "response_format", {"type": "json_schema", "json_schema": {
        "name": "judgement", "schema": {"type": "object"}, "strict": True}}),
])
def test_structured_output_as_each_server_expects(provider, field, shape):
    j = judge(provider=provider, model="m", endpoint="http://127.0.0.1:9", structured_output=True)
    assert http(j, {"type": "object"}).json[field] == shape


def test_logprob_mode_refused_where_no_logprobs():
    for provider in ("anthropic", "google"):
        errs = refusals(provider=provider, model="m", method="geval", sampling={"max_tokens": 5})
        assert "logprob" in errs["mode"], provider
    assert judge(provider="vllm", model="m", endpoint="http://x", method="geval")["mode"] == "logprobs"
    errs = refusals(provider="tgi", model="m", endpoint="http://x", method="geval", method_options={"top_logprobs": 20})
    assert "at most 5" in errs["method_options.top_logprobs"]


def test_key_is_masked_for_printing(monkeypatch):
    j = judge(provider="openai", model="gpt-4o")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    assert build_request(j, request_for_judge(j, MSGS), mask_key=True).headers["Authorization"] == "Bearer $OPENAI_API_KEY"
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret-value-0123")
    shown = build_request(j, request_for_judge(j, MSGS), mask_key=True).headers["Authorization"]
    assert "secret" not in shown and shown == "Bearer sk-..."
    with pytest.raises(PermanentBackendError):
        monkeypatch.delenv("OPENAI_API_KEY")
        build_request(j, request_for_judge(j, MSGS))


def test_every_provider_is_named_in_the_config_error():
    errs = refusals(provider="bedrock", model="m")
    assert all(name in errs["provider"] for name in PROVIDERS)


@pytest.mark.parametrize("body,message", [
    ({"error": {"message": "bad schema", "type": "invalid_request_error"}}, "bad schema"),
    ({"type": "error", "error": {"type": "invalid_request_error", "message": "max_tokens: Field required"}},
     "max_tokens: Field required"),
    ({"error": "Input validation error: `top_n_tokens` must be <= 5", "error_type": "validation"}, "must be <= 5"),
    ({"object": "error", "message": "guided_json is not supported", "type": "BadRequestError", "code": 400},
     "guided_json is not supported"),
    ({"detail": [{"loc": ["body", "messages"], "msg": "field required"}]}, "field required"),
])
def test_each_servers_error_body_gives_its_message(body, message):
    j = judge(provider="vllm", model="m", endpoint="http://x")
    with pytest.raises(PermanentBackendError, match=message.replace("`", ".").replace("[", ".")):
        read_response(j, 400, json.dumps(body))
