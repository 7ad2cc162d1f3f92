"""judges/fakeserver.py's responder hook: a simulation answers per prompt and model."""

from __future__ import annotations

import httpx

from judges.fakeserver import running_fake_server


def _ask(base_url: str, prompt: str, model: str, n: int = 1) -> list[str]:
    body = {"model": model, "messages": [{"role": "user", "content": prompt}], "n": n}
    data = httpx.post(f"{base_url}/chat/completions", json=body, timeout=10).json()
    return [c["message"]["content"] for c in data["choices"]]


def test_the_responder_answers_its_prompts_and_leaves_the_rest_to_the_default():
    seen = []

    def responder(prompt: str, model: str) -> str | None:
        seen.append((prompt, model))
        return f"7\nanswer of {model}" if prompt.startswith("known") else None

    with running_fake_server(responder=responder) as server:
        assert _ask(server.base_url, "known prompt", "judge-a") == ["7\nanswer of judge-a"]
        assert _ask(server.base_url, "known prompt", "judge-b", n=3) == ["7\nanswer of judge-b"] * 3
        other = _ask(server.base_url, "Score from 1 to 5. Give the score alone on the first line.", "judge-a")
        assert other[0] and "answer of" not in other[0]  # the default, format-following answer
    assert [m for _, m in seen] == ["judge-a", "judge-b", "judge-a"]
