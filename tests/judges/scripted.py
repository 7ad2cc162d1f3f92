"""An in-process backend whose answers are a function of the prompt (for method tests)."""
from __future__ import annotations

from typing import Callable, Sequence

from judges.backends.base import Backend, JudgeRequest, JudgeResponse, Result
from judges.backends.errors import BackendError

Answer = str | list[str] | JudgeResponse | BackendError


class ScriptedBackend(Backend):
    name = "scripted"

    def __init__(self, answer: Callable[[str], Answer], model: str = "scripted", output_tokens: int = 10):
        self.answer = answer
        self.model = model
        self.output_tokens = output_tokens
        self.prompts: list[str] = []

    def identity(self) -> dict:
        return {"backend": self.name, "model": self.model}

    async def score_many(self, requests: Sequence[JudgeRequest]) -> list[Result]:
        out: list[Result] = []
        for r in requests:
            text = r.prompt_text()
            self.prompts.append(text)
            a = self.answer(text)
            if isinstance(a, (BackendError, JudgeResponse)):
                out.append(a)
                continue
            texts = a if isinstance(a, list) else [a]
            out.append(JudgeResponse(texts=texts, input_tokens=len(text.split()),
                                     output_tokens=self.output_tokens * len(texts),
                                     finish_reasons=["stop"] * len(texts), model=self.model))
        return out
