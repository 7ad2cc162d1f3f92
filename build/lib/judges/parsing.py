"""Read a verdict out of a judge's free text.

Rules that hold for every parser here:
- the LAST verdict in the judge's own answer wins (templates echoed earlier, or numbers
  quoted from the response under review, come before it);
- out-of-range, missing or ambiguous -> `ParseResult(value=None, status="unparsed")` with
  the raw text kept; refusals -> status "refusal". Never 0, never the minimum, never a tie.
"""
from __future__ import annotations

import ast
import json
import math
import re
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Sequence

OK, UNPARSED, REFUSAL, LOGPROBS_UNAVAILABLE = "ok", "unparsed", "refusal", "logprobs_unavailable"


@dataclass
class ParseResult:
    value: Any
    status: str
    raw: str = ""
    reasoning: str | None = None
    detail: str | None = None  # why unparsed, or which rule matched
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


def strip_reasoning_blocks(text: str) -> str:
    """Drop <think>…</think> (reasoning models); an unclosed <think> hides everything after it."""
    text = _THINK.sub(" ", text or "")
    idx = text.lower().find("<think>")
    return text[:idx] if idx >= 0 else text


def _unparsed(raw: str, detail: str, text: str | None = None) -> ParseResult:
    status = REFUSAL if _REFUSAL.search(text if text is not None else raw) else UNPARSED
    return ParseResult(None, status, raw, detail=detail if status == UNPARSED else "refusal")


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
            # a single quote inside prose ("it's") must not open a string: only after : , { [ or space-colon
            prev = text[:i].rstrip()[-1:] if depth else ""
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
                out.append((start, text[start : i + 1]))
    return out


def _load_obj(s: str) -> dict | None:
    try:
        v = json.loads(s)
    except ValueError:
        try:  # single quotes, True/False, trailing commas: Python literal syntax
            v = ast.literal_eval(re.sub(r"\btrue\b", "True", re.sub(r"\bfalse\b", "False",
                                 re.sub(r"\bnull\b", "None", s))))
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            try:
                v = json.loads(re.sub(r",\s*([}\]])", r"\1", s))
            except ValueError:
                return _lenient_pairs(s)
    return v if isinstance(v, dict) else None


def _lenient_pairs(s: str) -> dict | None:
    """Last resort for almost-JSON (an unescaped quote in a reason): scalar key/value pairs."""
    pairs = re.findall(r"""["']?([A-Za-z_][\w ]*?)["']?\s*:\s*("[^"\n]*"|'[^'\n,}]*'|[-+]?\d+(?:\.\d+)?|true|false|True|False)""", s)
    if not pairs:
        return None
    out: dict[str, Any] = {}
    for k, v in pairs:
        if v[:1] in "\"'":
            out[k.strip()] = v[1:-1]
        elif v.lower() in ("true", "false"):
            out[k.strip()] = v.lower() == "true"
        else:
            out[k.strip()] = float(v) if "." in v else int(v)
    return out


def extract_json_objects(text: str) -> list[dict]:
    """Every JSON-ish object in the text, in order (fenced ```json blocks included)."""
    text = strip_reasoning_blocks(text)
    objs = []
    for _, s in _balanced_objects(text):
        obj = _load_obj(s)
        if obj is not None:
            objs.append(obj)
    return objs


def _find_key(obj: Mapping, keys: Sequence[str]) -> Any:
    lower = {str(k).strip().lower(): v for k, v in obj.items()}
    for k in keys:
        if k in lower:
            return lower[k]
    return None


def _to_number(v: Any) -> float | None:
    if isinstance(v, bool):
        return None
    if isinstance(v, (int, float)):
        return float(v) if math.isfinite(v) else None
    if isinstance(v, str):
        m = re.fullmatch(rf"\s*\**\s*({_NUM})\s*(?:/\s*\d+)?\s*\**\s*", v)
        return float(m.group(1)) if m else None
    return None


def _norm(x: float) -> int | float:
    return int(x) if float(x).is_integer() else x


# --------------------------------------------------------------------------- scores

SCORE_KEYS = ("score", "rating", "overall", "overall_rating", "value", "grade")
_LABELLED = re.compile(
    rf"(?:final\s+|overall\s+)?(?:score|rating|grade)\s*(?:\(\s*{_NUM}\s*[-–]\s*{_NUM}\s*\))?\s*(?:is|of|=|:)?\s*[:=]?\s*\**\s*({_NUM})(?:\s*(?:/|out of)\s*({_NUM}))?",
    re.I,
)
_FRACTION = re.compile(rf"(?<![\d.])({_NUM})\s*(?:/|out of)\s*({_NUM})(?!\.?\d)", re.I)
_BARE = re.compile(rf"^\s*(?:[#>*_`\[\(]\s*)*({_NUM})(?:\s*/\s*({_NUM}))?\s*(?:[*_`\]\)]\s*)*[.]?\s*$")


def _in_range(x: float, lo: float, hi: float, allowed: Iterable[float] | None, integer: bool) -> bool:
    if not (lo <= x <= hi):
        return False
    if integer and not float(x).is_integer():
        return False
    return allowed is None or x in set(allowed)


def parse_score(text: str, lo: float, hi: float, *, allowed: Iterable[float] | None = None,
                integer: bool = True) -> ParseResult:
    """A single score in [lo, hi] from any format the seeds show.

    Order of trust: the last JSON object with a score key; a bare number on the first line
    (seed 004's contract); the last "Score: 4" / "Rating: 4/5"; the last "4/5" whose
    denominator is the scale maximum; a bare number on the last line.
    """
    raw = text or ""
    body = strip_reasoning_blocks(raw).strip()
    if not body:
        return _unparsed(raw, "empty")
    allowed = list(allowed) if allowed is not None else None

    def accept(x: float | None, how: str) -> ParseResult | None:
        if x is None:
            return None
        if not _in_range(x, lo, hi, allowed, integer):
            return ParseResult(None, UNPARSED, raw, detail=f"out_of_range:{_norm(x)} ({how})")
        return ParseResult(_norm(x), OK, raw, reasoning=_reason_from(body), detail=how)

    for obj in reversed(extract_json_objects(body)):
        v = _find_key(obj, SCORE_KEYS)
        if v is not None:
            x = _to_number(v)
            if x is None:
                continue  # an echoed template like {"score": "xx"}
            r = accept(x, "json")
            if r:
                reason = _find_key(obj, ("reason", "reasoning", "explanation", "justification"))
                r.reasoning = str(reason) if reason is not None else r.reasoning
                return r

    lines = [ln for ln in body.splitlines() if ln.strip()]
    m = _BARE.match(lines[0]) if lines else None
    if m and (m.group(2) is None or float(m.group(2)) == hi):
        return accept(float(m.group(1)), "first_line")  # type: ignore[return-value]

    labelled = [mm for mm in _LABELLED.finditer(body) if mm.group(2) is None or float(mm.group(2)) == hi]
    if labelled:
        return accept(float(labelled[-1].group(1)), "labelled")  # type: ignore[return-value]

    fractions = [mm for mm in _FRACTION.finditer(body) if float(mm.group(2)) == hi]
    if fractions:
        return accept(float(fractions[-1].group(1)), "fraction")  # type: ignore[return-value]

    m = _BARE.match(lines[-1]) if lines else None
    if m and (m.group(2) is None or float(m.group(2)) == hi):
        return accept(float(m.group(1)), "last_line")  # type: ignore[return-value]
    return _unparsed(raw, "no_score", body)


def _reason_from(body: str) -> str | None:
    """Everything after the first line, for first-line formats; the whole text otherwise."""
    parts = body.split("\n", 1)
    rest = parts[1].strip() if len(parts) == 2 else ""
    return rest or None


# --------------------------------------------------------------------------- per-criterion block (seed 000)

def parse_criteria_block(text: str, names: Mapping[str, str], lo: float, hi: float,
                         *, integer: bool = True) -> dict[str, ParseResult]:
    """Seed 000's "- **Correctness**: 4" lines (or a JSON object keyed by names/keys).

    `names` maps criterion key -> display name. The last scored line per criterion wins;
    "- **Correctness**: justification" lines in the Reasoning section give its reasoning.
    """
    raw = text or ""
    body = strip_reasoning_blocks(raw)
    results: dict[str, ParseResult] = {}
    objs = extract_json_objects(body)
    for key, name in names.items():
        value: float | None = None
        how = ""
        for obj in reversed(objs):
            v = _find_key(obj, (key.lower(), name.lower(), name.lower().replace(" ", "_")))
            if isinstance(v, Mapping):
                v = _find_key(v, SCORE_KEYS)
            x = _to_number(v)
            if x is not None:
                value, how = x, "json"
                break
        pat = re.compile(
            rf"(?:^|\n)\s*(?:[-*•]\s*|\d+\.\s*)?\**\s*{re.escape(name)}\s*\**\s*(?:\([^)\n]*\))?\s*\**\s*[:\-–]\s*\**\s*({_NUM})\s*\**(?:\s*(?:/|out of)\s*({_NUM}))?(?![\w.])",
            re.I,
        )
        if value is None:
            hits = [m for m in pat.finditer(body) if m.group(2) is None or float(m.group(2)) == hi]
            if hits:
                value, how = float(hits[-1].group(1)), "block"
        reasoning = None
        rpat = re.compile(rf"(?:^|\n)\s*[-*•]?\s*\**\s*{re.escape(name)}\s*\**\s*:\s*\**\s*([^\n]*[A-Za-z][^\n]*)", re.I)
        rs = [m.group(1).strip() for m in rpat.finditer(body) if not re.fullmatch(rf"{_NUM}.*", m.group(1).strip().strip('*'))]
        if rs:
            reasoning = rs[-1]
        if value is None:
            results[key] = _unparsed(raw, "no_score", body)
        elif not _in_range(value, lo, hi, None, integer):
            results[key] = ParseResult(None, UNPARSED, raw, detail=f"out_of_range:{_norm(value)}")
        else:
            results[key] = ParseResult(_norm(value), OK, raw, reasoning=reasoning, detail=how)
    return results


# --------------------------------------------------------------------------- labels (seed 003)

LABEL_KEYS = ("label", "verdict", "classification", "class", "category", "answer", "decision", "choice")


def parse_label(text: str, labels: Sequence[str]) -> ParseResult:
    """One of `labels` (e.g. TP/FP3/FP2/FP1, ACCEPT/REJECT): JSON, then "Label: X", then the last bare mention."""
    raw = text or ""
    body = strip_reasoning_blocks(raw)
    canon = {lab.lower(): lab for lab in labels}
    for obj in reversed(extract_json_objects(body)):
        v = _find_key(obj, LABEL_KEYS)
        if isinstance(v, (str, bool)) and str(v).strip().lower() in canon:
            reason = _find_key(obj, ("reason", "reasoning", "explanation", "rationale"))
            return ParseResult(canon[str(v).strip().lower()], OK, raw,
                               reasoning=str(reason) if reason is not None else None, detail="json")
    alts = "|".join(re.escape(lab) for lab in sorted(labels, key=len, reverse=True))
    word = rf"(?<![A-Za-z0-9_])({alts})(?![A-Za-z0-9_])"
    labelled = list(re.finditer(rf"(?:label|verdict|classification|class|answer|decision)\s*(?:is)?\s*[:=]?\s*[\"'*`\[]*\s*{word}", body, re.I))
    if labelled:
        return ParseResult(canon[labelled[-1].group(1).lower()], OK, raw, detail="labelled")
    bare = list(re.finditer(word, body, re.I if all(len(lab) > 3 for lab in labels) else 0))
    if bare:
        return ParseResult(canon[bare[-1].group(1).lower()], OK, raw, detail="last_mention")
    return _unparsed(raw, "no_label", body)


# --------------------------------------------------------------------------- pairwise

def parse_pairwise(text: str, *, allow_tie: bool = True) -> ParseResult:
    """'A', 'B' or (only when the judge says so) 'tie': [[A]], {"winner": "B"}, "Winner: A", "Response A is better"."""
    raw = text or ""
    body = strip_reasoning_blocks(raw)
    for obj in reversed(extract_json_objects(body)):
        v = _find_key(obj, ("winner", "preferred", "better", "choice", "verdict", "answer"))
        if isinstance(v, str):
            r = _pair_token(v)
            if r and (r != "tie" or allow_tie):
                return ParseResult(r, OK, raw, detail="json")
    found: list[tuple[int, str]] = []
    for m in re.finditer(r"\[\[\s*(A|B|C|tie)\s*\]\]", body, re.I):
        found.append((m.start(), {"a": "A", "b": "B"}.get(m.group(1).lower(), "tie")))
    for m in re.finditer(r"(?:winner|verdict|better response|preferred|choice)\s*(?:is)?\s*[:=]?\s*\**\s*(?:response|output|assistant)?\s*\(?\b(A|B|tie)\b", body, re.I):
        found.append((m.start(), {"a": "A", "b": "B"}.get(m.group(1).lower(), "tie")))
    for m in re.finditer(r"(?:response|output|assistant)\s*\(?\b(A|B)\)?\s+is\s+(?:better|preferred|superior)", body, re.I):
        found.append((m.start(), m.group(1).upper()))
    found = [f for f in found if f[1] != "tie" or allow_tie]
    if found:
        return ParseResult(max(found)[1], OK, raw, detail="text")
    return _unparsed(raw, "no_winner", body)


def _pair_token(v: str) -> str | None:
    v = v.strip().strip("[]()*\"' ").lower()
    v = re.sub(r"^(response|output|assistant)\s*", "", v)
    return {"a": "A", "b": "B", "tie": "tie", "c": "tie", "equal": "tie"}.get(v)


# --------------------------------------------------------------------------- fields of sub-judges (seed 003 modular)

def parse_int_field(text: str, key: str, lo: int, hi: int) -> ParseResult:
    """An integer field from the last JSON object that has it, else "key: N" in text."""
    raw = text or ""
    body = strip_reasoning_blocks(raw)
    for obj in reversed(extract_json_objects(body)):
        x = _to_number(_find_key(obj, (key.lower(),)))
        if x is not None:
            if _in_range(x, lo, hi, None, True):
                return ParseResult(int(x), OK, raw, detail="json")
            return ParseResult(None, UNPARSED, raw, detail=f"out_of_range:{_norm(x)}")
    hits = list(re.finditer(rf"\b{re.escape(key)}\b\s*[:=]\s*\**\s*([-+]?\d+)", body, re.I))
    if hits:
        x = float(hits[-1].group(1))
        if _in_range(x, lo, hi, None, True):
            return ParseResult(int(x), OK, raw, detail="text")
        return ParseResult(None, UNPARSED, raw, detail=f"out_of_range:{_norm(x)}")
    return _unparsed(raw, f"no_{key}", body)


_TRUE, _FALSE = {"true", "yes", "1", "correct"}, {"false", "no", "0", "incorrect"}


def parse_bool_field(text: str, key: str) -> ParseResult:
    raw = text or ""
    body = strip_reasoning_blocks(raw)
    for obj in reversed(extract_json_objects(body)):
        v = _find_key(obj, (key.lower(),))
        if isinstance(v, bool):
            return ParseResult(v, OK, raw, detail="json")
        if v is not None and str(v).strip().lower() in _TRUE | _FALSE:
            return ParseResult(str(v).strip().lower() in _TRUE, OK, raw, detail="json")
    hits = list(re.finditer(rf"\b{re.escape(key)}\b\s*[:=]\s*\**\s*(true|false|yes|no)\b", body, re.I))
    if hits:
        return ParseResult(hits[-1].group(1).lower() in _TRUE, OK, raw, detail="text")
    return _unparsed(raw, f"no_{key}", body)


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

    `specs[key]` is ("score", lo, hi) or ("label", [labels]). The last object holding the
    key wins for that key.
    """
    raw = text or ""
    objs = extract_json_objects(raw)
    out: dict[str, ParseResult] = {}
    reasoning = None
    for obj in reversed(objs):
        r = _find_key(obj, ("reasoning", "reason", "explanation"))
        if r is not None:
            reasoning = r if isinstance(r, str) else json.dumps(r, ensure_ascii=False)
            break
    for key, spec in specs.items():
        result: ParseResult | None = None
        for obj in reversed(objs):
            v = _find_key(obj, (key.lower(),))
            if isinstance(v, Mapping):
                v = _find_key(v, SCORE_KEYS + LABEL_KEYS)
            if v is None:
                continue
            if spec[0] == "score":
                x = _to_number(v)
                if x is None:
                    continue
                if _in_range(x, spec[1], spec[2], None, True):
                    result = ParseResult(_norm(x), OK, raw, reasoning=reasoning, detail="json")
                else:
                    result = ParseResult(None, UNPARSED, raw, detail=f"out_of_range:{_norm(x)}")
            else:
                canon = {str(lab).lower(): lab for lab in spec[1]}
                if str(v).strip().lower() in canon:
                    result = ParseResult(canon[str(v).strip().lower()], OK, raw, reasoning=reasoning, detail="json")
                else:
                    result = ParseResult(None, UNPARSED, raw, detail=f"unknown_label:{v}")
            break
        out[key] = result or _unparsed(raw, f"no_{key}")
    return out
