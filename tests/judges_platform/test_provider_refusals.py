"""A judge the provider would refuse is refused when loaded, by file and by API, naming the rule and
the fix, and nothing is saved; one it accepts is saved with its provider's defaults."""
from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from judges.models import JudgeConfig

pytestmark = pytest.mark.django_db


def test_load_judge_refuses_a_reasoning_model_with_temperature_and_logprobs(tmp_path):
    path = tmp_path / "judges.yaml"
    path.write_text("judges:\n"
                    "  - {name: fine, provider: anthropic, model: claude-sonnet-4-5, sampling: {max_tokens: 300}}\n"
                    "  - {name: hot, provider: openai, model: o4-mini, method: geval, sampling: {temperature: 0}}\n")
    with pytest.raises(CommandError) as info:
        call_command("load_judge", str(path), stdout=StringIO())
    text = str(info.value)
    assert "judges[1].sampling.temperature: OpenAI reasoning models (o4-mini) accept only the default" in text
    assert "judges[1].mode: OpenAI reasoning models (o4-mini) return no logprobs" in text
    assert not JudgeConfig.objects.exists()  # all or nothing


def test_load_judge_saves_the_provider_and_its_defaults(tmp_path):
    path = tmp_path / "judge.yaml"
    path.write_text("name: claude\nprovider: anthropic\nmodel: claude-sonnet-4-5\nsampling: {max_tokens: 300}\n"
                    "structured_output: true\n")
    call_command("load_judge", str(path), stdout=StringIO())
    j = JudgeConfig.objects.get(name="claude")
    assert (j.provider, j.backend, j.endpoint, j.api_key_env, j.structured_output) == (
        "anthropic", "openai", "https://api.anthropic.com/v1", "ANTHROPIC_API_KEY", True)


def test_api_refuses_anthropic_without_max_tokens(api_for, admin_user, annotator):
    body = {"name": "c", "provider": "anthropic", "model": "claude-sonnet-4-5", "method": "geval"}
    assert api_for(annotator).post("/api/judges/configs/", body, format="json").status_code == 403
    resp = api_for(admin_user).post("/api/judges/configs/", body, format="json")
    assert resp.status_code == 400
    errors = {e["field"]: e["message"] for e in resp.json()["errors"]}
    assert "requires max_tokens" in errors["sampling.max_tokens"] and "set sampling.max_tokens" in errors["sampling.max_tokens"]
    assert "no token logprobs" in errors["mode"]
    assert not JudgeConfig.objects.filter(name="c").exists()
    ok = api_for(admin_user).post("/api/judges/configs/", {**body, "method": "per_criterion",
                                                           "sampling": {"max_tokens": 200}}, format="json")
    assert ok.status_code == 201 and ok.json()["provider"] == "anthropic"


def test_demo_hosted_judges_show_their_provider(client_for, admin_user, researcher):
    from judges.simulation import demo_provider_judges

    assert demo_provider_judges() == ["hosted-gpt-5-mini", "hosted-claude-sonnet"]
    assert demo_provider_judges() == ["hosted-gpt-5-mini", "hosted-claude-sonnet"]  # idempotent
    page = client_for(admin_user).get("/judges/")
    assert page.status_code == 200
    html = page.content.decode()
    assert "anthropic · structured output" in html and "https://api.anthropic.com/v1" in html
    assert "ANTHROPIC_API_KEY" in html and "sk-" not in html
    assert client_for(researcher).get("/judges/").status_code == 404  # the judges page is for admins
