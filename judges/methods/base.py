"""Shared plumbing of the judge methods: targets, settings, results, calling a backend."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

from judges.backends.base import Backend, JudgeRequest, JudgeResponse, Result
from judges.backends.errors import BackendError
from judges.cache import CacheStore, score_many_cached
from judges.parsing import OK, ParseResult
from judges.prompts import Prompt

ERROR = "error"


@dataclass(frozen=True)
class Pricing:
    """USD per one million tokens."""

    input_per_million: float = 0.0
    output_per_million: float = 0.0

    def cost(self, input_tokens: float, output_tokens: float) -> float:
        return (input_tokens * self.input_per_million + output_tokens * self.output_per_million) / 1e6


@dataclass(frozen=True)
class Target:
    """One output of one item, to be judged."""

    item: Mapping[str, Any]
    output: int  # index into item["outputs"]

    @property
    def item_id(self) -> str:
        return str(self.item.get("id"))

    @property
    def system(self) -> str | None:
        return self.item["outputs"][self.output].get("system")


def targets_for(items: Sequence[Mapping[str, Any]]) -> list[Target]:
    return [Target(it, i) for it in items for i in range(len(it.get("outputs") or []))]


@dataclass
class MethodSettings:
    temperature: float = 0.0
    top_p: float = 1.0
    max_tokens: int = 512
    seed: int | None = None
    pricing: Pricing = field(default_factory=Pricing)
    overrides: Mapping[str, str] | None = None  # prompt template pieces
    output_format: str | None = None  # first_line | json, for one-criterion prompts
    use_json_schema: bool = False  # ask the server to enforce the answer schema
    structured: bool = False  # structured_output: every prompt's answer held to its JSON schema (judges.structured)
    cache: CacheStore | None = None
    criteria: Sequence[str] | None = None  # restrict to these keys


@dataclass
class CriterionResult:
    item_id: str
    output: int | None  # output index; None for item-level results
    criterion: str
    value: Any
    status: str
    raw: list[str] = field(default_factory=list)
    reasoning: str | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    doubt: dict[str, Any] = field(default_factory=dict)  # signals for routing items to humans
    detail: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.status == "ok"


def request_for(prompt: Prompt, s: MethodSettings, **changes: Any) -> JudgeRequest:
    args: dict[str, Any] = dict(messages=prompt.messages, temperature=s.temperature, top_p=s.top_p,
                                max_tokens=s.max_tokens, seed=s.seed)
    args.update(changes)
    return JudgeRequest(**args)


async def call(backend: Backend, requests: Sequence[JudgeRequest], s: MethodSettings) -> list[Result]:
    return await score_many_cached(backend, requests, s.cache)


def usage(result: Result) -> tuple[int, int]:
    if isinstance(result, JudgeResponse) and not result.cached:
        return result.input_tokens, result.output_tokens
    return 0, 0  # failed calls report no usage; cached answers cost nothing now


def cached_usage(result: Result) -> tuple[int, int]:
    """The usage a cached answer had when it was first paid for (0, 0 for anything else)."""
    if isinstance(result, JudgeResponse) and result.cached:
        return result.input_tokens, result.output_tokens
    return 0, 0


def add_cached_cost(res: "CriterionResult", results: Sequence[Result], pricing: Pricing) -> None:
    """Record in detail what the cached calls among `results` would have cost (seed 003's
    cost per 10K prices the method, not the rerun that the cache made free)."""
    tin = sum(cached_usage(r)[0] for r in results)
    tout = sum(cached_usage(r)[1] for r in results)
    if tin or tout:
        res.detail["cached_cost_usd"] = res.detail.get("cached_cost_usd", 0.0) + pricing.cost(tin, tout)


def texts(result: Result) -> list[str]:
    return list(result.texts) if isinstance(result, JudgeResponse) else []


def from_parse(target: Target | None, key: str, parsed: ParseResult, result: Result, pricing: Pricing,
               share: tuple[int, int] = (0, 1), item_id: str | None = None) -> CriterionResult:
    """A result for one criterion; `share=(i, n)` splits one call's usage over n criteria."""
    tin, tout = usage(result)
    i, n = share
    tin_i = tin // n + (1 if i < tin % n else 0)
    tout_i = tout // n + (1 if i < tout % n else 0)
    res = CriterionResult(
        item_id=item_id if item_id is not None else (target.item_id if target else ""),
        output=target.output if target else None, criterion=key, value=parsed.value, status=parsed.status,
        raw=texts(result) or ([parsed.raw] if parsed.raw else []), reasoning=parsed.reasoning,
        input_tokens=tin_i, output_tokens=tout_i, cost_usd=pricing.cost(tin_i, tout_i),
        detail={"parse": parsed.detail} if parsed.detail else {},
    )
    if isinstance(result, JudgeResponse):
        if result.finish_reason == "length":
            res.doubt["truncated"] = True
        if result.cached:
            res.detail["cached"] = True
            cin, cout = cached_usage(result)
            res.detail["cached_cost_usd"] = pricing.cost(cin // n + (1 if i < cin % n else 0),
                                                         cout // n + (1 if i < cout % n else 0))
    return res


def error_parse(result: BackendError) -> ParseResult:
    return ParseResult(None, ERROR, "", detail=f"{type(result).__name__}: {result}")


def schema(s: MethodSettings, build: Callable[[], dict | None]) -> dict | None:
    """`build()` when the judge asks for structured output, else None."""
    return build() if s.structured else None


def parse_or_error(result: Result, parse: Any) -> ParseResult:
    """Run `parse(text)` on a response, or turn a backend error into an error ParseResult. An
    answer the token cap cut off before it could be read is "truncated", with the reason."""
    if isinstance(result, BackendError):
        return error_parse(result)
    parsed = parse(result.text)
    if result.finish_reason != "length":
        return parsed
    if isinstance(parsed, dict):  # one answer, several criteria: the ones the cut took
        return {k: p if p.status == OK else truncated(result) for k, p in parsed.items()}
    return parsed if parsed.status == OK else truncated(result)


TRUNCATED = "truncated"


def truncated(result: JudgeResponse) -> ParseResult:
    hidden = result.reasoning_tokens
    if not result.text.strip() and hidden:
        why = (f"no visible answer: the cap was spent on {hidden} hidden reasoning tokens (of {result.output_tokens}"
               f" output tokens); raise sampling.reasoning_tokens or lower sampling.reasoning_effort")
    else:
        why = (f"cut off by the token cap after {result.output_tokens} output tokens"
               + (f" ({hidden} of them hidden reasoning)" if hidden else "") + "; raise sampling.max_tokens")
    return ParseResult(None, TRUNCATED, result.text, detail=why)
