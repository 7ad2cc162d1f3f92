"""One request/response shape for every judge backend.

A backend turns `JudgeRequest`s into `JudgeResponse`s. `score_many` keeps the order of
its input and returns a `BackendError` in place of a response that failed, so one bad
request never loses the others.
"""
from __future__ import annotations

import abc
import dataclasses
from dataclasses import dataclass, field
from typing import Any, Literal, Sequence

from judges.backends.errors import BackendError

Message = dict[str, str]  # {"role": "system"|"user"|"assistant", "content": "..."}


@dataclass(frozen=True)
class JudgeRequest:
    messages: tuple[Message, ...] | None = None
    prompt: str | None = None  # raw completion prompt, used when messages is None
    temperature: float = 0.0
    top_p: float = 1.0
    max_tokens: int = 512
    n: int = 1
    seed: int | None = None
    logprobs: bool = False
    top_logprobs: int = 0
    json_schema: dict | None = None
    stop: tuple[str, ...] | None = None
    # "logprob": no generation, only the next-token distribution (local backends); remote
    # backends treat it as a one-token generation with logprobs.
    mode: Literal["generate", "logprob"] = "generate"
    allowed_tokens: tuple[str, ...] | None = None  # e.g. ("1","2","3","4","5") for G-Eval

    def __post_init__(self) -> None:
        if (self.messages is None) == (self.prompt is None):
            raise ValueError("give exactly one of messages or prompt")
        if self.messages is not None and not isinstance(self.messages, tuple):
            object.__setattr__(self, "messages", tuple(dict(m) for m in self.messages))

    def sampling(self) -> dict[str, Any]:
        """Everything except the prompt: part of the cache key."""
        d = dataclasses.asdict(self)
        d.pop("messages")
        d.pop("prompt")
        return d

    def prompt_text(self) -> str:
        """The prompt flattened to text (for backends without a chat template, and logs)."""
        if self.prompt is not None:
            return self.prompt
        return "\n\n".join(m.get("content") or "" for m in self.messages or ())


# One position of a generated sequence: token -> log probability, best first.
TopLogprobs = dict[str, float]


@dataclass
class JudgeResponse:
    texts: list[str]
    input_tokens: int = 0
    output_tokens: int = 0
    finish_reasons: list[str] = field(default_factory=list)
    # logprobs[i] belongs to texts[i]; each is a list of positions, each position the top-k
    # alternatives (including the chosen token). None when the backend gave none.
    logprobs: list[list[TopLogprobs]] | None = None
    chosen_tokens: list[list[str]] | None = None
    model: str = ""
    raw: Any = None
    latency_s: float = 0.0
    cached: bool = False
    reasoning_tokens: int = 0  # hidden reasoning spent from the output cap (reasoning models), when reported

    @property
    def text(self) -> str:
        return self.texts[0] if self.texts else ""

    @property
    def finish_reason(self) -> str | None:
        return self.finish_reasons[0] if self.finish_reasons else None


Result = JudgeResponse | BackendError


class Backend(abc.ABC):
    """Base class: subclasses implement `score_many`; `score` is derived from it."""

    name: str = "base"

    @abc.abstractmethod
    async def score_many(self, requests: Sequence[JudgeRequest]) -> list[Result]:
        """Responses in the order of `requests`; a failure is returned, not raised."""

    async def score(self, request: JudgeRequest) -> JudgeResponse:
        """One request; raises the BackendError on failure."""
        (result,) = await self.score_many([request])
        if isinstance(result, BackendError):
            raise result
        return result

    def identity(self) -> dict[str, Any]:
        """What makes this backend's answers differ from another's (for cache keys)."""
        return {"backend": self.name}

    async def aclose(self) -> None:
        """Release connections or models; default nothing."""
