"""Seed 003 modular judge: three sub-judges fused by deterministic rules.

Sub-judges: meaning change (0..4), reward (-3..+3), pair correctness (source_correct,
target_correct). The rules are data: an ordered list of {"if": {signal: {op: value}}, "label"};
the first rule whose conditions all hold gives the label. A rule that needs a signal the
sub-judges failed to give stops the evaluation (unparsed) rather than skipping ahead.
"""
from __future__ import annotations

import operator
from typing import Any, Mapping, Sequence

from judges.backends.base import Backend
from judges.parsing import OK, UNPARSED, ParseResult, parse_bool_field, parse_int_field
from judges.prompts import build_subjudge
from judges.methods.base import (
    CriterionResult, MethodSettings, Target, add_cached_cost, call, parse_or_error, request_for, usage,
)

# The seed's fusion, verbatim in order.
DEFAULT_RULES: list[dict[str, Any]] = [
    {"if": {"meaning": {">=": 3}}, "label": "FP1"},
    {"if": {"target_correct": {"==": False}, "reward": {"<=": 0}}, "label": "FP2"},
    {"if": {"source_correct": {"==": True}, "target_correct": {"==": True}, "meaning": {"<=": 1},
            "reward": {"in": [0, 1]}}, "label": "FP3"},
    {"if": {"target_correct": {"==": True}, "meaning": {"<=": 1}, "reward": {">=": 1}}, "label": "TP"},
    {"if": {}, "label": "FP3"},
]

_OPS = {">=": operator.ge, "<=": operator.le, ">": operator.gt, "<": operator.lt, "==": operator.eq,
        "!=": operator.ne, "in": lambda a, b: a in b, "not_in": lambda a, b: a not in b}

SIGNALS = ("meaning", "reward", "source_correct", "target_correct")


class MissingSignal(Exception):
    pass


def _holds(signals: Mapping[str, Any], cond: Mapping[str, Mapping[str, Any]]) -> bool:
    """Evaluates conditions in order; a false one short-circuits before a missing one is needed."""
    for name, tests in cond.items():
        for op, ref in tests.items():
            v = signals.get(name)
            if v is None:
                raise MissingSignal(name)
            if not _OPS[op](v, ref):
                return False
    return True


def fuse(signals: Mapping[str, Any], rules: Sequence[Mapping[str, Any]] = DEFAULT_RULES) -> tuple[str | None, int | None]:
    """(label, index of the rule that fired); (None, None) when a needed signal is missing."""
    for i, rule in enumerate(rules):
        try:
            if _holds(signals, rule.get("if") or {}):
                return rule["label"], i
        except MissingSignal:
            return None, None
    return None, None


def parse_signals(meaning_text: str | None, reward_text: str | None, pair_text: str | None) -> dict[str, ParseResult]:
    miss = ParseResult(None, UNPARSED, "", detail="no answer")
    return {
        "meaning": parse_int_field(meaning_text, "meaning", 0, 4) if meaning_text is not None else miss,
        "reward": parse_int_field(reward_text, "reward", -3, 3) if reward_text is not None else miss,
        "source_correct": parse_bool_field(pair_text, "source_correct") if pair_text is not None else miss,
        "target_correct": parse_bool_field(pair_text, "target_correct") if pair_text is not None else miss,
    }


async def modular(backend: Backend, rubric: Mapping[str, Any], targets: Sequence[Target], s: MethodSettings,
                  rules: Sequence[Mapping[str, Any]] | None = None, key: str = "label") -> list[CriterionResult]:
    kinds = ("meaning", "reward", "pair")
    prompts = [build_subjudge(k, t.item, t.output, s.overrides) for t in targets for k in kinds]
    results = await call(backend, [request_for(p, s) for p in prompts], s)
    out = []
    for n, t in enumerate(targets):
        rs = results[3 * n: 3 * n + 3]
        txt = [parse_or_error(r, lambda x: ParseResult(x, OK, x)) for r in rs]
        texts = [p.value if p.status == OK else None for p in txt]
        parsed = parse_signals(*texts)
        signals = {k: p.value for k, p in parsed.items() if p.ok}
        label, rule = fuse(signals, rules or DEFAULT_RULES)
        tin = sum(usage(r)[0] for r in rs)
        tout = sum(usage(r)[1] for r in rs)
        errors = [p.detail for p in txt if p.status != OK]
        status = OK if label is not None else ("error" if errors else UNPARSED)
        res = CriterionResult(
            item_id=t.item_id, output=t.output, criterion=key, value=label, status=status,
            raw=[x or "" for x in texts], input_tokens=tin, output_tokens=tout,
            cost_usd=s.pricing.cost(tin, tout),
            detail={"signals": signals, "rule": rule, "unparsed_signals": [k for k, p in parsed.items() if not p.ok],
                    **({"errors": errors} if errors else {})},
        )
        add_cached_cost(res, rs, s.pricing)
        out.append(res)
    return out
