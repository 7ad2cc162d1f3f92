"""What every parser shares: the result, the answer statuses, and how one value is decided
from every place an output format puts it (none, one, or a conflict)."""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Sequence

OK, UNPARSED, REFUSAL, LOGPROBS_UNAVAILABLE = "ok", "unparsed", "refusal", "logprobs_unavailable"


@dataclass
class ParseResult:
    value: Any
    status: str
    raw: str = ""
    reasoning: str | None = None
    detail: str | None = None  # why unparsed, or where the value was read
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.status == OK

_THINK = re.compile(r"<think>.*?</think>", re.S | re.I)

_REFUSAL = re.compile(
    r"\b(I\s+(?:cannot|can't|can not|won't|am unable to|'m unable to|am not able to)\s+"
    r"(?:help|assist|evaluate|rate|score|provide|comply|do that)|I'm sorry, but|as an AI(?: language model)?, I)",
    re.I,
)

NUM = r"[-+]?\d+(?:\.\d+)?"

NEGATION = re.compile(r"\b(?:not|no|never|neither|nor|hardly|without)\b|n't\b|n’t\b", re.I)

TEMPLATE_MARKS = re.compile(r"[|<>]|\bxx+\b|\.\.\.|…|^\s*(?:score|label|value|justification|integer|number)\s*$",
                             re.I)


def strip_reasoning_blocks(text: str) -> str:
    """Drop <think>…</think> (reasoning models); an unclosed <think> hides everything after it."""
    text = _THINK.sub(" ", text or "")
    idx = text.lower().find("<think>")
    return text[:idx] if idx >= 0 else text


def unparsed(raw: str, detail: str, text: str | None = None) -> ParseResult:
    status = REFUSAL if _REFUSAL.search(text if text is not None else raw) else UNPARSED
    return ParseResult(None, status, raw, detail=detail if status == UNPARSED else "refusal")


def short(text: str, n: int = 60) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= n else text[: n - 1] + "…"


def norm(x: float) -> int | float:
    return int(x) if float(x).is_integer() else x


def in_range(x: float, lo: float, hi: float, allowed: Iterable[float] | None, integer: bool) -> bool:
    if not (lo <= x <= hi):
        return False
    if integer and not float(x).is_integer():
        return False
    return allowed is None or x in set(allowed)


# A judged value: (value, None) when it is an answer, (None, why) when it is not.
Judge = Callable[[Any], tuple[Any, str | None]]


def decide(found: list[tuple[Any, str | None]], raw: str, body: str, where: str, missing: str,
            reasoning: str | None = None) -> ParseResult:
    """One value from every place the format puts it: none, one, or a conflict."""
    values = [v for v, why in found if why is None]
    distinct: list[Any] = []
    for v in values:
        if v not in distinct:
            distinct.append(v)
    if len(distinct) > 1:
        return ParseResult(None, UNPARSED, raw, detail=f"two different values ({', '.join(map(str, distinct))})")
    if len(distinct) == 1:
        return ParseResult(distinct[0], OK, raw, reasoning=reasoning, detail=where)
    whys = [why for _, why in found if why]
    return unparsed(raw, whys[-1] if whys else missing, body)


def echo_or(v: Any, what: str) -> str:
    s = str(v)
    if TEMPLATE_MARKS.search(s):
        return f"template echoed ({short(s, 40)!r})"
    if isinstance(v, str) and NEGATION.search(s):
        return f"negated answer ({short(s, 40)!r})"
    return f"{what} ({short(s, 40)!r})"


def score_judge(lo: float, hi: float, allowed: Iterable[float] | None, integer: bool) -> Judge:
    allowed = list(allowed) if allowed is not None else None

    def judge(v: Any) -> tuple[Any, str | None]:
        x: float | None = None
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            x = float(v) if math.isfinite(v) else None
        elif isinstance(v, str):
            m = re.fullmatch(rf"\s*\**\s*({NUM})\s*(?:(?:/|out of)\s*({NUM}))?\s*\**\s*", v, re.I)
            if m and (m.group(2) is None or float(m.group(2)) == hi):
                x = float(m.group(1))
        if x is None:
            return None, echo_or(v, "not a number")
        if not in_range(x, lo, hi, allowed, integer):
            return None, f"out of range: {norm(x)} (scale {norm(lo)}–{norm(hi)})"
        return norm(x), None
    return judge

_LABEL_COMMENT = re.compile(r"^(\S+?)[*_`\"']*\s*(?:\(.*|[-–—:]\s+.*|[–—:].*)$")

_LABEL_EDGES = re.compile(r"^[\s*_`\"'\[(]+|[\s*_`\"'\]).]+$")


def label_judge(labels: Sequence[str]) -> Judge:
    canon = {str(lab).strip().lower(): lab for lab in labels}

    def judge(v: Any) -> tuple[Any, str | None]:
        s = _LABEL_EDGES.sub("", v).lower() if isinstance(v, str) else None
        if s is not None and s in canon:
            return canon[s], None
        m = _LABEL_COMMENT.match(s) if s is not None else None
        if m and m.group(1).rstrip(".") in canon:  # "FP3 (style only)", "TP – fixes agreement"
            return canon[m.group(1).rstrip(".")], None
        return None, echo_or(v, f"not one of {'/'.join(map(str, labels))}")
    return judge

_TRUE, _FALSE = {"true", "yes"}, {"false", "no"}


def bool_judge(v: Any) -> tuple[Any, str | None]:
    if isinstance(v, bool):
        return v, None
    s = str(v).strip().strip("\"'").lower() if isinstance(v, str) else None
    if s in _TRUE | _FALSE:
        return s in _TRUE, None
    return None, echo_or(v, "not true/false")
