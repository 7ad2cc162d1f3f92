"""Rankings `[[2 > 1 > 3]]` and best-worst picks `[[best: 3, worst: 1]]` of K shown responses.

Honest, like every parser here (see judges.parsing): only the LAST `[[...]]` marker of the answer
(outside reasoning blocks) is the verdict, since a judge may quote the format or change its mind
while explaining; the verdict is unparsed when it names a response number that was not shown,
names one twice, leaves one out (ranking), uses a tie the criterion does not allow, is negated
("not [[1 > 2]]"), or picks one response as both best and worst. Nothing is ever guessed from
the prose around it.

Values use the shown numbers (1..K): a ranking is the rank of each shown response, 1 = best,
tied responses sharing the better rank ("[[2 = 1 > 3]]" -> [1, 1, 3]); a best-worst pick is
{"best": n, "worst": m}.
"""
from __future__ import annotations

import re

from judges.parsing.common import OK, ParseResult, TEMPLATE_MARKS, short, strip_reasoning_blocks, unparsed

_MARKER = re.compile(r"\[\[([^\[\]\n]{0,200})\]\]")
_NEGATION = re.compile(r"\b(?:not|never)\b|n[’']t\b", re.I)
_RESPONSE = r"(?:response\s*)?#?\s*"
_RANK_TOKEN = re.compile(rf"^\s*{_RESPONSE}(\d+)\s*$", re.I)
_BW_FIELD = re.compile(r"^\s*(best|worst)\s*[:=]\s*(.*?)\s*$", re.I)
_PLACEHOLDER = re.compile(r"^\s*[a-z]\s*$", re.I)  # "[[best: n, worst: m]]", "[[x > y > z]]": the format echoed


def _last_marker(text: str, missing: str) -> tuple[str | None, ParseResult | None, str]:
    """(the inside of the last verdict marker, None) or (None, the unparsed result)."""
    raw = text or ""
    body = strip_reasoning_blocks(raw)
    markers = list(_MARKER.finditer(body))
    if not markers:
        return None, unparsed(raw, missing, body), body
    m = markers[-1]
    before = body[max(0, m.start() - 40): m.start()].split("\n")[-1]
    if _NEGATION.search(" ".join(before.split()[-3:])):
        return None, unparsed(raw, f"negated answer ({short(before + m.group(0), 50)!r})", body), body
    return m.group(1), None, body


def _shown_number(token: str, k: int) -> tuple[int | None, str | None]:
    m = _RANK_TOKEN.match(token)
    if not m:
        echoed = TEMPLATE_MARKS.search(token) or _PLACEHOLDER.match(token) or not token.strip()
        return None, ("template echoed" if echoed else "not a response number") + f" ({short(token, 30)!r})"
    n = int(m.group(1))
    if not 1 <= n <= k:
        return None, f"names Response {n}, which was not shown (1 to {k})"
    return n, None


def parse_ranking(text: str, k: int, *, allow_ties: bool = False) -> ParseResult:
    """The rank of each of the K shown responses (list, by shown number) from the last `[[a > b > c]]`."""
    inside, failed, body = _last_marker(text, "no [[...]] ranking")
    if failed:
        return failed
    raw = text or ""
    if "<" in inside:
        return unparsed(raw, f"'<' in the ranking ({short(inside, 40)!r}); the format lists the best first with '>'",
                        body)
    parts = re.split(r"\s*([>=])\s*", inside.strip())
    tokens, ops = parts[0::2], parts[1::2]
    numbers: list[int] = []
    for token in tokens:
        n, why = _shown_number(token, k)
        if why:
            return unparsed(raw, f"{why} in [[{short(inside, 40)}]]", body)
        if n in numbers:
            return unparsed(raw, f"names Response {n} twice", body)
        numbers.append(n)
    missing = [n for n in range(1, k + 1) if n not in numbers]
    if missing:
        return unparsed(raw, "leaves out " + ", ".join(f"Response {n}" for n in missing), body)
    if "=" in ops and not allow_ties:
        return unparsed(raw, "a tie ('='), which this criterion does not allow", body)
    ranks = [0] * k
    rank = 1
    for place, n in enumerate(numbers):
        if place > 0 and ops[place - 1] == ">":
            rank = place + 1
        ranks[n - 1] = rank
    return ParseResult(ranks, OK, raw, detail="ranking marker")


def parse_best_worst(text: str, k: int) -> ParseResult:
    """{"best": n, "worst": m} (shown numbers) from the last `[[best: n, worst: m]]`."""
    inside, failed, body = _last_marker(text, "no [[best: n, worst: m]] verdict")
    if failed:
        return failed
    raw = text or ""
    fields = [f for f in re.split(r"\s*[,;]\s*", inside.strip()) if f]
    got: dict[str, int] = {}
    for f in fields:
        m = _BW_FIELD.match(f)
        if not m:
            return unparsed(raw, ("template echoed" if TEMPLATE_MARKS.search(f) else "not a best/worst field")
                            + f" ({short(f, 30)!r}) in [[{short(inside, 40)}]]", body)
        which = m.group(1).lower()
        if which in got:
            return unparsed(raw, f"gives {which} twice", body)
        n, why = _shown_number(m.group(2), k)
        if why:
            return unparsed(raw, f"{which}: {why}", body)
        got[which] = n
    if set(got) != {"best", "worst"}:
        return unparsed(raw, "needs both best and worst in [[best: n, worst: m]]", body)
    if got["best"] == got["worst"]:
        return unparsed(raw, f"Response {got['best']} is both the best and the worst", body)
    if k < 2:
        return unparsed(raw, "fewer than two responses were shown", body)
    return ParseResult({"best": got["best"], "worst": got["worst"]}, OK, raw, detail="best-worst marker")
