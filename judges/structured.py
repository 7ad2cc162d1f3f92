"""Structured output: a JSON schema for each judge prompt's answer, and its answer read back.

Pure (no Django). `schema_for` builds the schema from what the prompt expects (its `expects`) and
the rubric: each criterion's value held to its scale (integer, minimum..maximum) or its choices
(enum), the verdict of a comparison held to what can be shown, and `reason` a string. The
schema's `title` names the answer form, so `as_native` can turn a schema answer back into the
seed's own output format and the method's own parser reads it: one set of parsing rules,
whichever way the judge was asked. Strict-mode rules hold (OpenAI): every property required,
no additional properties.

Prompts whose field sets are the seed's own (seed 003's sub-judges and routers) get no schema.
"""
from __future__ import annotations

import json
from typing import Any, Callable, Mapping, Sequence

from judges.parsing import extract_json_objects
from judges.prompts.base import LABEL_KINDS, bounds, choice_values

REASON = {"type": "string"}
PAIRWISE = ("A", "B", "tie")


def _object(title: str, props: dict[str, Any]) -> dict[str, Any]:
    props = {**props, "reason": REASON}
    return {"title": title, "type": "object", "properties": props, "required": list(props),
            "additionalProperties": False}


def value_schema(criterion: Mapping[str, Any], labels: Sequence[str] = ()) -> dict[str, Any]:
    """One criterion's value: its choices, else an integer on its scale."""
    if criterion.get("kind") in LABEL_KINDS or labels:
        return {"type": "string", "enum": list(choice_values(criterion) or labels)}
    lo, hi = bounds(criterion)
    return {"type": "integer", "minimum": lo, "maximum": hi}


def scores_schema(criteria: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Every criterion in one answer (all_in_one): {"<key>": value, ..., "reason": "..."}."""
    return _object("scores", {c["key"]: value_schema(c) for c in criteria})


def score_schema(criterion: Mapping[str, Any], native: str = "json_score") -> dict[str, Any]:
    """One criterion (per_criterion, self_consistency): {"score": n, "reason"}; title = the prompt's format."""
    return _object(native, {"score": value_schema(criterion)})


def label_schema(labels: Sequence[str]) -> dict[str, Any]:
    return _object("label", {"label": {"type": "string", "enum": list(labels)}})


def pairwise_schema(allow_tie: bool = True) -> dict[str, Any]:
    return _object("pairwise", {"winner": {"type": "string", "enum": list(PAIRWISE if allow_tie else PAIRWISE[:2])}})


def ranking_schema(k: int) -> dict[str, Any]:
    """The shown numbers, best first (no ties: the schema cannot say which places tie)."""
    return _object("ranking", {"ranking": {"type": "array", "items": {"type": "integer", "minimum": 1, "maximum": k},
                                           "minItems": k, "maxItems": k}})


def best_worst_schema(k: int) -> dict[str, Any]:
    shown = {"type": "integer", "minimum": 1, "maximum": k}
    return _object("best_worst", {"best": shown, "worst": dict(shown)})


def prompt_schema(expects: str, criterion: Mapping[str, Any] | None, labels: Sequence[str] = ()) -> dict | None:
    """The schema of a one-criterion (or label) prompt from what it expects; None for the seed's own
    field sets (seed 003's routers and sub-judges)."""
    if expects == "label":
        return label_schema(choice_values(criterion or {}) or labels)
    if expects in ("first_line", "json_score") and criterion is not None:
        return score_schema(criterion, expects)
    return None


def _answer(text: str) -> dict[str, Any] | None:
    """The answer's JSON object (the first whole one), or None."""
    try:
        obj = json.loads(text)
        return obj if isinstance(obj, dict) else None
    except (TypeError, ValueError):
        objs = extract_json_objects(text or "")
        return objs[0] if objs else None


def as_native(schema: Mapping[str, Any] | None, text: str) -> str:
    """A schema answer rewritten in the output format the prompt asked for, so the seed's parser reads
    it; the reason goes first, as reasoning before the verdict. An answer that is not a JSON
    object is returned as it is (the native parser then reports why it cannot read it)."""
    form = (schema or {}).get("title")
    obj = _answer(text) if form in ("first_line", "pairwise", "ranking", "best_worst") else None
    if obj is None:
        return text
    # the verdict field decides: a marker quoted in the reason must not count as a second verdict
    reason = str(obj.get("reason") or "").strip().replace("[[", "[").replace("]]", "]")
    if form == "first_line" and "score" in obj:
        return f"{obj['score']}\n{reason}".strip()
    if form == "pairwise" and "winner" in obj:
        return f"{reason}\n\n[[{obj['winner']}]]".strip()
    if form == "ranking" and isinstance(obj.get("ranking"), list):
        return f"{reason}\n\n[[{' > '.join(str(n) for n in obj['ranking'])}]]".strip()
    if form == "best_worst" and "best" in obj and "worst" in obj:
        return f"{reason}\n\n[[best: {obj['best']}, worst: {obj['worst']}]]".strip()
    return text


def reader(schema: Mapping[str, Any] | None, parse: Callable[[str], Any]) -> Callable[[str], Any]:
    """`parse` for answers to `schema` (unchanged without one)."""
    if schema is None:
        return parse
    return lambda text: parse(as_native(schema, text))


__all__ = ["scores_schema", "score_schema", "label_schema", "pairwise_schema", "ranking_schema", "best_worst_schema",
           "as_native", "reader", "value_schema", "prompt_schema"]
