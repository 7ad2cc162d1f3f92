"""One verdict per answer, read where the prompt's output format puts it: the first line (seed
004), the JSON `score` (seed 004 Evidence), the JSON `label` (seed 003, binary criteria), a
sub-judge's JSON field (seed 003 modular), each criterion's JSON field (generic all-criteria
prompts) and the `[[A]]` marker (pairwise)."""
from __future__ import annotations

import re
from typing import Any, Iterable, Mapping, Sequence

from judges.parsing.common import (
    NUM, OK, UNPARSED, ParseResult, TEMPLATE_MARKS, bool_judge, decide, label_judge, norm, score_judge, short,
    strip_reasoning_blocks, unparsed,
)
from judges.parsing.json_objects import json_field

# After the value a line may carry a comment set off by a dash ("8 – a reasonable structure");
# a number that runs straight on into words ("2 minor slips") is prose, never a score.
DASH_COMMENT = r"(?:\s+[-–—]\s+\S.*|\s*[–—]\s*\S.*)?"

_FIRST_LINE = re.compile(
    rf"^\s*(?:[#>*_`\[(]\s*)*(?:(?:final\s+|overall\s+)?(?:score|rating|grade)\s*[:=]?\s*(?:[*_`]\s*)*)?"
    rf"({NUM})(?:\s*(?:/|out of)\s*({NUM}))?\s*(?:[*_`\])]\s*)*\.?{DASH_COMMENT}\s*$",
    re.I,
)


def parse_first_line_score(text: str, lo: float, hi: float, *, allowed: Iterable[float] | None = None,
                           integer: bool = True) -> ParseResult:
    """Seed 004: "an initial line containing only a single value"; the rest is the explanation."""
    raw = text or ""
    body = strip_reasoning_blocks(raw).strip()
    if not body:
        return unparsed(raw, "empty answer")
    body = re.sub(r"^(?:```\w*\s*\n)+", "", body)  # a code fence around the answer is markup, not its first line
    first, _, rest = body.partition("\n")
    m = _FIRST_LINE.match(first)
    if not m:
        why = "template echoed" if TEMPLATE_MARKS.search(first.strip("*_`#> ")) else "first line is not a single score"
        return unparsed(raw, f"{why}: {short(first)!r}", body)
    if m.group(2) is not None and float(m.group(2)) != hi:
        return unparsed(raw, f"first line scores out of {m.group(2)}, the scale is {norm(lo)}–{norm(hi)}", body)
    value, why = score_judge(lo, hi, allowed, integer)(float(m.group(1)))
    if why:
        return ParseResult(None, UNPARSED, raw, detail=why + " on the first line")
    return ParseResult(value, OK, raw, reasoning=rest.strip() or None, detail="first line")


def parse_json_score(text: str, lo: float, hi: float, *, allowed: Iterable[float] | None = None,
                     integer: bool = True, key: str = "score") -> ParseResult:
    """Seed 004 evidence: {"score": "6", "reason": "…"} (the seed's escaped template style too)."""
    return json_field(text, (key,), score_judge(lo, hi, allowed, integer), key)


def parse_score(text: str, lo: float, hi: float, *, fmt: str = "first_line",
                allowed: Iterable[float] | None = None, integer: bool = True) -> ParseResult:
    """One score in [lo, hi], read from where `fmt` (first_line | json) puts it."""
    if fmt == "json":
        return parse_json_score(text, lo, hi, allowed=allowed, integer=integer)
    if fmt == "first_line":
        return parse_first_line_score(text, lo, hi, allowed=allowed, integer=integer)
    raise ValueError(f"unknown score format {fmt!r} (known: first_line, json)")


def parse_label(text: str, labels: Sequence[str], *, key: str = "label") -> ParseResult:
    """One of `labels` (TP/FP3/FP2/FP1, ACCEPT/REJECT, Yes/No) from the answer's JSON `label` field."""
    return json_field(text, (key,), label_judge(labels), key)


def parse_int_field(text: str, key: str, lo: int, hi: int) -> ParseResult:
    """An integer field of the answer's JSON object."""
    return json_field(text, (key,), score_judge(lo, hi, None, True), key)


def parse_bool_field(text: str, key: str) -> ParseResult:
    """A true/false (or yes/no) field of the answer's JSON object."""
    return json_field(text, (key,), bool_judge, key)


def parse_json_scores(text: str, specs: Mapping[str, tuple]) -> dict[str, ParseResult]:
    """Generic all-criteria answer {"key": value, ..., "reasoning": "..."}.

    `specs[key]` is ("score", lo, hi) or ("label", [labels]); each key is read from its own
    JSON field.
    """
    out: dict[str, ParseResult] = {}
    for key, spec in specs.items():
        judge = score_judge(spec[1], spec[2], None, True) if spec[0] == "score" else label_judge(spec[1])
        out[key] = json_field(text, (key,), judge, key)
    return out

_VERDICT = re.compile(r"\[\[\s*([^\[\]\n]{1,12}?)\s*\]\]")

_VERDICT_NEGATION = re.compile(r"\b(?:not|never)\b|n[’']t\b", re.I)  # "certainly not [[A]]", "I wouldn't pick [[B]]"


def parse_pairwise(text: str, *, allow_tie: bool = True) -> ParseResult:
    """'A', 'B' or (only when the judge says so) 'tie' from the verdict marker [[A]] / [[B]] / [[C]]."""
    raw = text or ""
    body = strip_reasoning_blocks(raw)
    found: list[tuple[Any, str | None]] = []
    for m in _VERDICT.finditer(body):
        token = m.group(1).strip().lower()
        value = {"a": "A", "b": "B", "c": "tie", "tie": "tie"}.get(token)
        before = body[max(0, m.start() - 40): m.start()].split("\n")[-1]
        if value is None:
            found.append((None, f"template echoed ({m.group(0)!r})" if TEMPLATE_MARKS.search(token)
                          else f"not a verdict ({m.group(0)!r})"))
        elif _VERDICT_NEGATION.search(" ".join(before.split()[-3:])):
            found.append((None, f"negated answer ({short(before + m.group(0), 50)!r})"))
        elif value == "tie" and not allow_tie:
            found.append((None, "a tie, which this comparison does not allow"))
        else:
            found.append((value, None))
    return decide(found, raw, body, "verdict marker", "no [[A]]/[[B]] verdict")
