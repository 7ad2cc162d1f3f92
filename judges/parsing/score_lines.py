"""Seed 000's Output Format: one `- **Name**: score` line per criterion, then a Reasoning
section of `- **Name**: justification` lines."""
from __future__ import annotations

import re
from typing import Any, Mapping, Sequence

from judges.parsing.common import (
    NEGATION, NUM, TEMPLATE_MARKS, ParseResult, decide, norm, score_judge, short, strip_reasoning_blocks, unparsed,
)
from judges.parsing.formats import DASH_COMMENT

_BULLET = re.compile(r"^\s*(?:#{1,6}\s+)?(?:[-*•+]\s+|\d+[.)]\s+)?")

_HEADING = re.compile(r"^\s*#*\s*([A-Za-z][A-Za-z ]*?)\s*:?\s*$")

_SCORE_SECTIONS = {"output", "output format", "scores", "score", "ratings", "rating", "evaluation", "assessment"}

_REASON_SECTIONS = {"reasoning", "reasons", "justification", "justifications", "explanation", "rationale"}

_BLOCK_VALUE = re.compile(rf"^({NUM})\s*(?:(?:/|out of)\s*({NUM}))?\s*(?:\(\s*[^\d()]*\))?\s*\.?{DASH_COMMENT}$",
                          re.I)


def _plain(line: str) -> str:
    return re.sub(r"\*\*|__|`", "", _BULLET.sub("", line, count=1)).strip()


def _block_sections(body: str) -> list[tuple[str, str]]:
    """(section, plain line) for each line: 'score' under Output/Scores (or, in an answer without
    such a heading, before any heading), 'reasoning' under a Reasoning heading, and 'prose' before
    the score heading of an answer that has one (a `- **Correctness**: 2 - but weak` line there is
    the judge thinking aloud, not its score)."""
    parsed = []
    for line in body.splitlines():
        plain = _plain(line)
        h = _HEADING.match(plain)
        kind = None
        if h and (line.strip().startswith(("#", "*", "_")) or plain.endswith(":") or
                  h.group(1).lower() in _REASON_SECTIONS):
            name = h.group(1).strip().lower()
            kind = "reasoning" if name in _REASON_SECTIONS else "score" if name in _SCORE_SECTIONS else None
        parsed.append((kind, plain))
    section = "prose" if any(kind == "score" for kind, _ in parsed) else "score"
    out = []
    for kind, plain in parsed:
        if kind is not None:
            section = kind
            continue
        out.append((section, plain))
    return out


def _named(plain: str, names: Sequence[str]) -> str | None:
    """The text after `Name:` (or `Name (…):`, `Name -`) when the line is that criterion's."""
    for n in names:
        m = re.match(rf"{re.escape(n)}\s*(?:\([^)\n]*\))?\s*(?::|\s[-–—]\s)\s*(.*)$", plain, re.I)
        if m:
            return m.group(1).strip()
    return None


def parse_criteria_block(text: str, names: Mapping[str, str], lo: float, hi: float,
                         *, integer: bool = True) -> dict[str, ParseResult]:
    """Seed 000's Output Format: one `- **Name**: score` line per criterion, then a Reasoning
    section of `- **Name**: justification` lines.

    `names` maps criterion key -> the name in the format. A score line holds the value alone
    (`4`, `4/5`, `**4**`, `4 (Good)`); a line whose value runs on into words (`2 minor slips…`)
    is reasoning, never a score; lines under the Reasoning heading are never scores.
    """
    raw = text or ""
    body = strip_reasoning_blocks(raw)
    lines = _block_sections(body)
    judge = score_judge(lo, hi, None, integer)
    results: dict[str, ParseResult] = {}
    for key, name in names.items():
        aliases = [name] + ([key] if key.lower() != name.lower() else [])
        found: list[tuple[Any, str | None]] = []
        reasoning = None
        for section, plain in lines:
            value = _named(plain, aliases)
            if value is None:
                continue
            if section == "reasoning":
                if value and reasoning is None:
                    reasoning = value
                continue
            if section == "prose":
                continue
            m = _BLOCK_VALUE.match(value)
            if m:
                if m.group(2) is not None and float(m.group(2)) != hi:
                    found.append((None, f"scored out of {m.group(2)}, the scale is {norm(lo)}–{norm(hi)}"))
                else:
                    found.append(judge(float(m.group(1))))
            elif TEMPLATE_MARKS.search(value) or not value:
                found.append((None, f"template echoed ({short(value, 40)!r})"))
            elif NEGATION.match(value):
                found.append((None, f"negated answer ({short(value, 40)!r})"))
            # any other text on a name line is the judge's prose, not its score
        if not body.strip():
            results[key] = unparsed(raw, "empty answer")
            continue
        results[key] = decide(found, raw, body, f"score line {name!r}", f"no score line for {name!r}", reasoning)
    return results
