"""One raw judge answer parsed exactly as a run of a rubric and method would parse it.

The prompt is built by the method's own builder (for a placeholder item: a prompt's format
never depends on the item) and the answer goes through the method's own parse function, so
`manage.py parse_judge_output` and a judge run cannot drift apart. No Django.
"""
from __future__ import annotations

from typing import Any, Mapping

from judges.config import METHOD_NAMES
from judges.parsing import LOGPROBS_UNAVAILABLE, OK, ParseResult, parse_pairwise
from judges.prompts import build_all_criteria, build_criterion
from judges.prompts.base import LABEL_KINDS, judgeable
from judges.methods.direct import parse_all, parse_for_prompt, parse_label_answer
from judges.methods.modular import fuse, parse_signals

PLACEHOLDER_ITEM: dict[str, Any] = {"id": "answer", "context": "", "metadata": {},
                                    "outputs": [{"content": ""}, {"content": ""}]}
# methods that ask one criterion per call: the answer is for the criterion given
ONE_CRITERION = ("per_criterion", "self_consistency")
LABEL_METHODS = ("label", "legacy", "escalation")
KNOWN_METHODS = METHOD_NAMES


class AnswerError(ValueError):
    """The rubric, method or criterion asked for does not exist or does not fit."""


def _keys(crits: list[Mapping[str, Any]]) -> list[str]:
    return [c["key"] for c in crits]


def _pick(crits: list[Mapping[str, Any]], criterion: str | None, method: str) -> list[Mapping[str, Any]]:
    if criterion is None:
        return crits
    chosen = [c for c in crits if c["key"] == criterion]
    if not chosen:
        raise AnswerError(f"criterion {criterion!r} is not judged by method {method} in this rubric; "
                          f"known: {', '.join(_keys(crits)) or 'none'}")
    return chosen


def parse_answer(rubric: Mapping[str, Any], method: str, text: str, criterion: str | None = None,
                 output_format: str | None = None) -> dict[str, ParseResult]:
    """criterion key -> ParseResult for every criterion this answer is for."""
    if method not in KNOWN_METHODS:
        raise AnswerError(f"unknown method {method!r}; known: {', '.join(KNOWN_METHODS)}")
    scored = judgeable(rubric)
    labelled = [c for c in scored if c.get("kind") in LABEL_KINDS]
    if not scored:
        raise AnswerError("this rubric has no criterion a judge scores")
    if method == "all_in_one":
        crits = _pick(scored, criterion, method)
        prompt = build_all_criteria(rubric, PLACEHOLDER_ITEM, 0)
        return parse_all(rubric, prompt, crits, text)
    if method in ONE_CRITERION:
        if criterion is None and len(scored) != 1:
            raise AnswerError(f"method {method} asks one criterion per call: give --criterion "
                              f"(one of {', '.join(_keys(scored))})")
        c = _pick(scored, criterion, method)[0]
        prompt = build_criterion(rubric, c["key"], PLACEHOLDER_ITEM, 0, None, output_format)
        return {c["key"]: parse_for_prompt(prompt, c, text)}
    if method in LABEL_METHODS or method == "modular":
        if labelled:
            key = _pick(labelled, criterion, method)[0]["key"]
        elif criterion is not None:
            raise AnswerError(f"method {method} labels a choice/binary criterion; this rubric has none, "
                              f"so there is no criterion {criterion!r}")
        else:
            key = "label"
        if method != "modular":
            return {key: parse_label_answer(rubric, key if labelled else None, text)}
        # the modular method fuses three sub-judge answers; one answer is read by all three
        signals = parse_signals(text, text, text)
        values = {k: p.value for k, p in signals.items() if p.ok}
        label, rule = fuse(values)
        fused = (ParseResult(label, OK, text, detail=f"fusion rule {rule}") if label is not None else
                 ParseResult(None, "unparsed", text, detail="signals missing for the fusion: " +
                             ", ".join(k for k, p in signals.items() if not p.ok)))
        return {**signals, key: fused}
    if method == "pairwise":
        key = _pick(scored, criterion, method)[0]["key"] if criterion else "overall"
        return {key: parse_pairwise(text)}
    if method != "geval":
        raise AnswerError(f"method {method} has no text answer this command can parse")
    # geval reads the score from the next-token probabilities, never from the text
    crits = _pick([c for c in scored if c.get("kind") not in LABEL_KINDS], criterion, method)
    if not crits:
        raise AnswerError("method geval scores scale criteria; this rubric has none")
    return {c["key"]: ParseResult(None, LOGPROBS_UNAVAILABLE, text,
                                  detail="geval reads the score from logprobs, not from the answer's text")
            for c in crits}


def as_report(results: Mapping[str, ParseResult]) -> dict[str, dict[str, Any]]:
    """{"<key>": {"value", "status": "parsed"|"unparsed", "detail"}} as the command prints it."""
    out = {}
    for key, r in results.items():
        ok = r.status == OK
        detail = r.detail or r.status
        if r.status not in (OK, "unparsed"):
            detail = f"{r.status}: {detail}" if detail != r.status else r.status
        out[key] = {"value": r.value if ok else None, "status": "parsed" if ok else "unparsed",
                    "detail": detail}
    return out
