"""Read a verdict out of a judge's answer, from the one place its prompt's output format puts it.

Rules that hold for every parser here (issue 10 §3):
- each criterion is read from where the output format puts it and nowhere else: the first
  line (seed 004), the JSON field (seed 004 evidence, seed 003, generic prompts), the score
  line `- **Name**: 4` (seed 000), the `[[A]]` marker (pairwise). Reasoning text around the
  answer never changes it;
- an echoed template (`score`, `xx`, `true|false`, `<integer from 0 to 4>`), a negated answer
  (`not TP`) or two different values for one criterion -> unparsed;
- unparsed is `ParseResult(value=None, status="unparsed")` with the raw text kept and a
  `detail` saying why; refusals -> status "refusal". Never 0, never the minimum, never a tie.
"""
from __future__ import annotations

import ast
import json
import math
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping, Sequence

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
_NUM = r"[-+]?\d+(?:\.\d+)?"
_NEGATION = re.compile(r"\b(?:not|no|never|neither|nor|hardly|without)\b|n't\b|n’t\b", re.I)
_TEMPLATE_MARKS = re.compile(r"[|<>]|\bxx+\b|\.\.\.|…|^\s*(?:score|label|value|justification|integer|number)\s*$",
                             re.I)


def strip_reasoning_blocks(text: str) -> str:
    """Drop <think>…</think> (reasoning models); an unclosed <think> hides everything after it."""
    text = _THINK.sub(" ", text or "")
    idx = text.lower().find("<think>")
    return text[:idx] if idx >= 0 else text


def _unparsed(raw: str, detail: str, text: str | None = None) -> ParseResult:
    status = REFUSAL if _REFUSAL.search(text if text is not None else raw) else UNPARSED
    return ParseResult(None, status, raw, detail=detail if status == UNPARSED else "refusal")


def _short(text: str, n: int = 60) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= n else text[: n - 1] + "…"


def _norm(x: float) -> int | float:
    return int(x) if float(x).is_integer() else x


def _in_range(x: float, lo: float, hi: float, allowed: Iterable[float] | None, integer: bool) -> bool:
    if not (lo <= x <= hi):
        return False
    if integer and not float(x).is_integer():
        return False
    return allowed is None or x in set(allowed)


# --------------------------------------------------------------------------- JSON

def _balanced_objects(text: str) -> list[tuple[int, str]]:
    """(start, substring) of every top-level {...} with balanced braces (strings respected)."""
    out, depth, start, quote, esc = [], 0, -1, "", False
    for i, ch in enumerate(text):
        if quote:
            if esc:
                esc = False
            elif ch == "\\":
                esc = True
            elif ch == quote:
                quote = ""
            continue
        if ch in "\"'" and depth > 0:
            # a single quote inside prose ("it's") must not open a string: only after { , : [
            prev = text[:i].rstrip()[-1:]
            if ch == '"' or prev in ("{", ",", ":", "["):
                quote = ch
            continue
        if ch == "{":
            if depth == 0:
                start = i
            depth += 1
        elif ch == "}" and depth > 0:
            depth -= 1
            if depth == 0:
                out.append((start, text[start: i + 1]))
    return out


def _load_obj(s: str) -> dict | None:
    try:
        v = json.loads(s)
    except ValueError:
        try:  # single quotes, True/False: Python literal syntax
            v = ast.literal_eval(re.sub(r"\btrue\b", "True", re.sub(r"\bfalse\b", "False",
                                 re.sub(r"\bnull\b", "None", s))))
        except (ValueError, SyntaxError, MemoryError, RecursionError, TypeError):
            try:
                v = json.loads(re.sub(r",\s*([}\]])", r"\1", s))
            except ValueError:
                return _lenient_pairs(s)
    return v if isinstance(v, dict) else None


_PAIR = re.compile(r"""["']?([A-Za-z_][\w ]*?)["']?\s*:\s*("[^"\n]*"|'[^'\n,}]*'|[^,}\n"']+?)\s*(?=[,}\n]|$)""")


def _lenient_pairs(s: str) -> dict | None:
    """Last resort for almost-JSON (an unescaped quote in a reason, an echoed `true|false`).

    A value runs to the next `,` `}` or line end: `true|false` stays the string it is (an
    echo), never the `true` it starts with.
    """
    pairs = _PAIR.findall(s)
    if not pairs:
        return None
    out: dict[str, Any] = {}
    for k, v in pairs:
        v = v.strip()
        if v[:1] in "\"'":
            out[k.strip()] = v[1:-1]
        elif v.lower() in ("true", "false"):
            out[k.strip()] = v.lower() == "true"
        elif re.fullmatch(_NUM, v):
            out[k.strip()] = float(v) if "." in v else int(v)
        else:
            out[k.strip()] = v
    return out


def extract_json_objects(text: str) -> list[dict]:
    """Every JSON-ish object in the text, in order (fenced ```json blocks included).

    Seed 004 prints its answer template with escaped quotes (`{"score\\":"xx\\",...}`) and a
    judge may copy that style; such an object is read with the backslashes removed.
    """
    text = strip_reasoning_blocks(text)
    objs = []
    for _, s in _balanced_objects(text):
        obj = None
        if '\\"' in s:
            obj = _strict_json(s.replace('\\"', '"'))
        if obj is None:
            obj = _load_obj(s)
        if obj is not None:
            objs.append(obj)
    if '\\"' in text and not objs:
        objs = [o for _, s in _balanced_objects(text.replace('\\"', '"')) if (o := _load_obj(s)) is not None]
    return objs


def _strict_json(s: str) -> dict | None:
    try:
        v = json.loads(s)
    except ValueError:
        return None
    return v if isinstance(v, dict) else None


def _get(obj: Mapping, keys: Sequence[str]) -> tuple[bool, Any]:
    lower = {str(k).strip().lower(): v for k, v in obj.items()}
    for k in keys:
        if k.lower() in lower:
            return True, lower[k.lower()]
    return False, None


def _find_key(obj: Mapping, keys: Sequence[str]) -> Any:
    return _get(obj, keys)[1]


def _reason_of(obj: Mapping) -> str | None:
    r = _find_key(obj, ("reason", "reasoning", "explanation", "justification", "rationale"))
    if r is None:
        return None
    return r if isinstance(r, str) else json.dumps(r, ensure_ascii=False)


# A judged value: (value, None) when it is an answer, (None, why) when it is not.
Judge = Callable[[Any], tuple[Any, str | None]]


def _decide(found: list[tuple[Any, str | None]], raw: str, body: str, where: str, missing: str,
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
    return _unparsed(raw, whys[-1] if whys else missing, body)


def _json_field(text: str, keys: Sequence[str], judge: Judge, name: str) -> ParseResult:
    """The value of `keys[0]` (or an alias) in the answer's JSON objects."""
    raw = text or ""
    body = strip_reasoning_blocks(raw)
    found, reasoning = [], None
    for obj in extract_json_objects(body):
        present, v = _get(obj, keys)
        if not present:
            continue
        value, why = judge(v)
        found.append((value, why))
        if why is None and reasoning is None:
            reasoning = _reason_of(obj)
    if not body.strip():
        return _unparsed(raw, "empty answer", body)
    return _decide(found, raw, body, f"JSON field {name!r}", f"no JSON field {name!r}", reasoning)


def _echo_or(v: Any, what: str) -> str:
    s = str(v)
    if _TEMPLATE_MARKS.search(s):
        return f"template echoed ({_short(s, 40)!r})"
    if isinstance(v, str) and _NEGATION.search(s):
        return f"negated answer ({_short(s, 40)!r})"
    return f"{what} ({_short(s, 40)!r})"


def _score_judge(lo: float, hi: float, allowed: Iterable[float] | None, integer: bool) -> Judge:
    allowed = list(allowed) if allowed is not None else None

    def judge(v: Any) -> tuple[Any, str | None]:
        x: float | None = None
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            x = float(v) if math.isfinite(v) else None
        elif isinstance(v, str):
            m = re.fullmatch(rf"\s*\**\s*({_NUM})\s*(?:(?:/|out of)\s*({_NUM}))?\s*\**\s*", v, re.I)
            if m and (m.group(2) is None or float(m.group(2)) == hi):
                x = float(m.group(1))
        if x is None:
            return None, _echo_or(v, "not a number")
        if not _in_range(x, lo, hi, allowed, integer):
            return None, f"out of range: {_norm(x)} (scale {_norm(lo)}–{_norm(hi)})"
        return _norm(x), None
    return judge


_LABEL_COMMENT = re.compile(r"^(\S+?)[*_`\"']*\s*(?:\(.*|[-–—:]\s+.*|[–—:].*)$")
_LABEL_EDGES = re.compile(r"^[\s*_`\"'\[(]+|[\s*_`\"'\]).]+$")


def _label_judge(labels: Sequence[str]) -> Judge:
    canon = {str(lab).strip().lower(): lab for lab in labels}

    def judge(v: Any) -> tuple[Any, str | None]:
        s = _LABEL_EDGES.sub("", v).lower() if isinstance(v, str) else None
        if s is not None and s in canon:
            return canon[s], None
        m = _LABEL_COMMENT.match(s) if s is not None else None
        if m and m.group(1).rstrip(".") in canon:  # "FP3 (style only)", "TP – fixes agreement"
            return canon[m.group(1).rstrip(".")], None
        return None, _echo_or(v, f"not one of {'/'.join(map(str, labels))}")
    return judge


# --------------------------------------------------------------------------- one score

# After the value a line may carry a comment set off by a dash ("8 – a reasonable structure");
# a number that runs straight on into words ("2 minor slips") is prose, never a score.
_DASH_COMMENT = r"(?:\s+[-–—]\s+\S.*|\s*[–—]\s*\S.*)?"
_FIRST_LINE = re.compile(
    rf"^\s*(?:[#>*_`\[(]\s*)*(?:(?:final\s+|overall\s+)?(?:score|rating|grade)\s*[:=]?\s*(?:[*_`]\s*)*)?"
    rf"({_NUM})(?:\s*(?:/|out of)\s*({_NUM}))?\s*(?:[*_`\])]\s*)*\.?{_DASH_COMMENT}\s*$",
    re.I,
)


def parse_first_line_score(text: str, lo: float, hi: float, *, allowed: Iterable[float] | None = None,
                           integer: bool = True) -> ParseResult:
    """Seed 004: "an initial line containing only a single value"; the rest is the explanation."""
    raw = text or ""
    body = strip_reasoning_blocks(raw).strip()
    if not body:
        return _unparsed(raw, "empty answer")
    body = re.sub(r"^(?:```\w*\s*\n)+", "", body)  # a code fence around the answer is markup, not its first line
    first, _, rest = body.partition("\n")
    m = _FIRST_LINE.match(first)
    if not m:
        why = "template echoed" if _TEMPLATE_MARKS.search(first.strip("*_`#> ")) else "first line is not a single score"
        return _unparsed(raw, f"{why}: {_short(first)!r}", body)
    if m.group(2) is not None and float(m.group(2)) != hi:
        return _unparsed(raw, f"first line scores out of {m.group(2)}, the scale is {_norm(lo)}–{_norm(hi)}", body)
    value, why = _score_judge(lo, hi, allowed, integer)(float(m.group(1)))
    if why:
        return ParseResult(None, UNPARSED, raw, detail=why + " on the first line")
    return ParseResult(value, OK, raw, reasoning=rest.strip() or None, detail="first line")


def parse_json_score(text: str, lo: float, hi: float, *, allowed: Iterable[float] | None = None,
                     integer: bool = True, key: str = "score") -> ParseResult:
    """Seed 004 evidence: {"score": "6", "reason": "…"} (the seed's escaped template style too)."""
    return _json_field(text, (key,), _score_judge(lo, hi, allowed, integer), key)


def parse_score(text: str, lo: float, hi: float, *, fmt: str = "first_line",
                allowed: Iterable[float] | None = None, integer: bool = True) -> ParseResult:
    """One score in [lo, hi], read from where `fmt` (first_line | json) puts it."""
    if fmt == "json":
        return parse_json_score(text, lo, hi, allowed=allowed, integer=integer)
    if fmt == "first_line":
        return parse_first_line_score(text, lo, hi, allowed=allowed, integer=integer)
    raise ValueError(f"unknown score format {fmt!r} (known: first_line, json)")


# --------------------------------------------------------------------------- per-criterion block (seed 000)

_BULLET = re.compile(r"^\s*(?:#{1,6}\s+)?(?:[-*•+]\s+|\d+[.)]\s+)?")
_HEADING = re.compile(r"^\s*#*\s*([A-Za-z][A-Za-z ]*?)\s*:?\s*$")
_SCORE_SECTIONS = {"output", "output format", "scores", "score", "ratings", "rating", "evaluation", "assessment"}
_REASON_SECTIONS = {"reasoning", "reasons", "justification", "justifications", "explanation", "rationale"}
_BLOCK_VALUE = re.compile(rf"^({_NUM})\s*(?:(?:/|out of)\s*({_NUM}))?\s*(?:\(\s*[^\d()]*\))?\s*\.?{_DASH_COMMENT}$",
                          re.I)


def _plain(line: str) -> str:
    return re.sub(r"\*\*|__|`", "", _BULLET.sub("", line, count=1)).strip()


def _block_sections(body: str) -> list[tuple[str, str]]:
    """(section, plain line) for each line: 'score' before any heading or under Output/Scores,
    'reasoning' under a Reasoning heading."""
    section, out = "score", []
    for line in body.splitlines():
        plain = _plain(line)
        h = _HEADING.match(plain)
        if h and (line.strip().startswith(("#", "*", "_")) or plain.endswith(":") or
                  h.group(1).lower() in _REASON_SECTIONS):
            name = h.group(1).strip().lower()
            if name in _REASON_SECTIONS:
                section = "reasoning"
                continue
            if name in _SCORE_SECTIONS:
                section = "score"
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
    judge = _score_judge(lo, hi, None, integer)
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
            m = _BLOCK_VALUE.match(value)
            if m:
                if m.group(2) is not None and float(m.group(2)) != hi:
                    found.append((None, f"scored out of {m.group(2)}, the scale is {_norm(lo)}–{_norm(hi)}"))
                else:
                    found.append(judge(float(m.group(1))))
            elif _TEMPLATE_MARKS.search(value) or not value:
                found.append((None, f"template echoed ({_short(value, 40)!r})"))
            elif _NEGATION.match(value):
                found.append((None, f"negated answer ({_short(value, 40)!r})"))
            # any other text on a name line is the judge's prose, not its score
        if not body.strip():
            results[key] = _unparsed(raw, "empty answer")
            continue
        results[key] = _decide(found, raw, body, f"score line {name!r}", f"no score line for {name!r}", reasoning)
    return results


# --------------------------------------------------------------------------- labels (seed 003, binary criteria)

def parse_label(text: str, labels: Sequence[str], *, key: str = "label") -> ParseResult:
    """One of `labels` (TP/FP3/FP2/FP1, ACCEPT/REJECT, Yes/No) from the answer's JSON `label` field."""
    return _json_field(text, (key,), _label_judge(labels), key)


# --------------------------------------------------------------------------- pairwise

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
            found.append((None, f"template echoed ({m.group(0)!r})" if _TEMPLATE_MARKS.search(token)
                          else f"not a verdict ({m.group(0)!r})"))
        elif _VERDICT_NEGATION.search(" ".join(before.split()[-3:])):
            found.append((None, f"negated answer ({_short(before + m.group(0), 50)!r})"))
        elif value == "tie" and not allow_tie:
            found.append((None, "a tie, which this comparison does not allow"))
        else:
            found.append((value, None))
    return _decide(found, raw, body, "verdict marker", "no [[A]]/[[B]] verdict")


# --------------------------------------------------------------------------- fields of sub-judges (seed 003 modular)

def parse_int_field(text: str, key: str, lo: int, hi: int) -> ParseResult:
    """An integer field of the answer's JSON object."""
    return _json_field(text, (key,), _score_judge(lo, hi, None, True), key)


_TRUE, _FALSE = {"true", "yes"}, {"false", "no"}


def _bool_judge(v: Any) -> tuple[Any, str | None]:
    if isinstance(v, bool):
        return v, None
    s = str(v).strip().strip("\"'").lower() if isinstance(v, str) else None
    if s in _TRUE | _FALSE:
        return s in _TRUE, None
    return None, _echo_or(v, "not true/false")


def parse_bool_field(text: str, key: str) -> ParseResult:
    """A true/false (or yes/no) field of the answer's JSON object."""
    return _json_field(text, (key,), _bool_judge, key)


# --------------------------------------------------------------------------- logprobs (G-Eval)

def expected_score(positions: Sequence[Mapping[str, float]] | None, allowed: Sequence[int | str],
                   chosen: Sequence[str] | None = None, raw: str = "") -> ParseResult:
    """Probability-weighted score (G-Eval) renormalised over the allowed score tokens.

    Uses the first position whose chosen token is a score token (the score may follow a
    space or a bold marker), else the first position. Tokens equal after stripping
    whitespace (" 4" and "4") are merged. `extra` carries doubt signals: top_prob (largest
    renormalised probability) and score_mass (probability on score tokens before
    renormalising). No logprobs -> status "logprobs_unavailable", never a silent fallback.
    """
    if not positions:
        return ParseResult(None, LOGPROBS_UNAVAILABLE, raw, detail="backend returned no logprobs")
    allowed_s = {str(a) for a in allowed}
    idx = 0
    if chosen:
        for i, tok in enumerate(chosen[: len(positions)]):
            if tok.strip() in allowed_s:
                idx = i
                break
    probs: dict[str, float] = {}
    for tok, lp in positions[idx].items():
        t = tok.strip()
        if t in allowed_s and lp is not None and math.isfinite(lp):
            probs[t] = probs.get(t, 0.0) + math.exp(lp)
    mass = sum(probs.values())
    if mass <= 0:
        return ParseResult(None, UNPARSED, raw, detail="no score token among the top logprobs",
                           extra={"score_mass": 0.0})
    dist = {t: p / mass for t, p in probs.items()}
    value = sum(float(t) * p for t, p in dist.items())
    return ParseResult(value, OK, raw, detail="logprobs",
                       extra={"distribution": dist, "top_prob": max(dist.values()), "score_mass": mass,
                              "position": idx})


# --------------------------------------------------------------------------- one JSON object for all criteria (generic)

def parse_json_scores(text: str, specs: Mapping[str, tuple]) -> dict[str, ParseResult]:
    """Generic all-criteria answer {"key": value, ..., "reasoning": "..."}.

    `specs[key]` is ("score", lo, hi) or ("label", [labels]); each key is read from its own
    JSON field.
    """
    out: dict[str, ParseResult] = {}
    for key, spec in specs.items():
        judge = _score_judge(spec[1], spec[2], None, True) if spec[0] == "score" else _label_judge(spec[1])
        out[key] = _json_field(text, (key,), judge, key)
    return out
