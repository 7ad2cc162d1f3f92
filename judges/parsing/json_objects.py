"""JSON objects in a judge's free text (fenced, single-quoted, almost-JSON, the seed's escaped
style), and one field read from all of them."""
from __future__ import annotations

import ast
import json
import re
from typing import Any, Mapping, Sequence

from judges.parsing.common import NUM, Judge, ParseResult, decide, strip_reasoning_blocks, unparsed

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
        elif re.fullmatch(NUM, v):
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


def find_key(obj: Mapping, keys: Sequence[str]) -> Any:
    return _get(obj, keys)[1]


def _reason_of(obj: Mapping) -> str | None:
    r = find_key(obj, ("reason", "reasoning", "explanation", "justification", "rationale"))
    if r is None:
        return None
    return r if isinstance(r, str) else json.dumps(r, ensure_ascii=False)


def json_field(text: str, keys: Sequence[str], judge: Judge, name: str) -> ParseResult:
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
        return unparsed(raw, "empty answer", body)
    return decide(found, raw, body, f"JSON field {name!r}", f"no JSON field {name!r}", reasoning)
