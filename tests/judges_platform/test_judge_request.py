"""`judge_request`: the exact HTTP requests a judge file would send, sent nowhere, key masked."""
from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from tests.doubles.strict_provider_server import running_strict_server
from judges.providers import read_response

pytestmark = pytest.mark.django_db


def printed(tmp_path, text: str, *args: str) -> str:
    path = tmp_path / "judge.yaml"
    path.write_text(text)
    out = StringIO()
    call_command("judge_request", str(path), *args, stdout=out)
    return out.getvalue()


def test_openai_reasoning_model_request(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-proj-verysecret")
    out = printed(tmp_path, "name: g5\nprovider: openai\nmodel: gpt-5-mini\nsampling: {max_tokens: 300}\n",
                  "--rubric", "fulltext-004")
    assert out.count("POST https://api.openai.com/v1/chat/completions") == 5  # one per criterion, one output
    assert "Authorization: Bearer sk-..." in out and "verysecret" not in out
    assert '"max_completion_tokens": 4396' in out and '"max_tokens"' not in out and '"temperature"' not in out


def test_json_lists_every_request_of_a_comparative_method(tmp_path):
    out = printed(tmp_path, "name: c\nprovider: anthropic\nmodel: claude-sonnet-4-5\nsampling: {max_tokens: 200}\n"
                            "structured_output: true\n", "--rubric", "compare-pairwise", "--method", "pairwise",
                  "--json")
    reqs = json.loads(out)
    assert len(reqs) == 6  # 3 stand-in outputs: 3 pairs, each asked in both orders
    r = reqs[0]
    assert r["url"] == "https://api.anthropic.com/v1/messages" and r["headers"]["x-api-key"] == "$ANTHROPIC_API_KEY"
    assert r["json"]["tool_choice"]["name"] == "record_judgement"
    assert r["json"]["tools"][0]["input_schema"]["properties"]["winner"]["enum"] == ["A", "B", "tie"]


def test_printed_requests_are_what_the_strict_servers_accept(tmp_path):
    """The requests judge_request prints, sent as printed, pass the provider's strict server."""
    import httpx

    for provider, extra in (("vllm", "structured_output: true\n"), ("llamacpp", "method: geval\n"),
                            ("tgi", "structured_output: true\n")):
        with running_strict_server(provider) as server:
            out = printed(tmp_path, f"name: s\nprovider: {provider}\nmodel: m\nendpoint: {server.base_url}\n{extra}",
                          "--rubric", "feedback-000", "--json")
            for r in json.loads(out):
                resp = httpx.request(r["method"], r["url"], headers=r["headers"], json=r["json"], timeout=5)
                assert resp.status_code == 200, (provider, resp.text)
                judge = {"provider": provider, "model": "m", "endpoint": server.base_url}
                assert read_response(judge, 200, resp.content).text
            assert server.refusals == []


def test_refusals_and_local_models_are_errors(tmp_path):
    with pytest.raises(CommandError, match="sampling.temperature: OpenAI reasoning models"):
        printed(tmp_path, "name: g\nprovider: openai\nmodel: o3\nsampling: {temperature: 0}\n", "--rubric",
                "fulltext-004")
    with pytest.raises(CommandError, match="sends no HTTP request"):
        printed(tmp_path, "name: t\nbackend: transformers\nmodel: tiny\n", "--rubric", "fulltext-004")
    with pytest.raises(CommandError, match="unknown rubric .nope.; known: aqua-003"):
        printed(tmp_path, "name: v\nprovider: vllm\nmodel: m\nendpoint: http://x\n", "--rubric", "nope")
