"""Pairwise comparison with position swap.

Each pair (i, j) of an item's outputs is judged twice: i as A then j as A. Verdicts are
mapped back to output indices; when both parse and differ, the judge flipped with the
position (a position-bias flip): the result is status "inconsistent", value None, and
`doubt["swap_disagreement"]` is set. A tie is a result only when both orders say tie.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from judges.backends.base import Backend
from judges.parsing import OK, parse_pairwise
from judges.prompts import build_pairwise
from judges.methods.base import TRUNCATED, MethodSettings, call, parse_or_error, request_for, schema, texts, usage
from judges.structured import pairwise_schema, reader

INCONSISTENT = "inconsistent"


@dataclass
class PairResult:
    item_id: str
    output_a: int
    output_b: int
    criterion: str
    value: int | str | None  # winning output index, "tie", or None
    status: str
    verdicts: tuple[Any, Any]  # mapped winners from (i first, j first)
    raw: list[str] = field(default_factory=list)
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    doubt: dict[str, Any] = field(default_factory=dict)


def all_pairs(items: Sequence[Mapping[str, Any]]) -> list[tuple[Mapping[str, Any], int, int]]:
    return [(it, i, j) for it in items for i, j in itertools.combinations(range(len(it.get("outputs") or [])), 2)]


def _mapped(verdict: str | None, first: int, second: int) -> int | str | None:
    return {"A": first, "B": second, "tie": "tie"}.get(verdict) if verdict else None


def combine(v1: int | str | None, v2: int | str | None) -> tuple[int | str | None, str]:
    if v1 is None or v2 is None:
        return None, "unparsed"
    if v1 == v2:
        return v1, OK
    return None, INCONSISTENT


async def pairwise(backend: Backend, rubric: Mapping[str, Any], pairs: Sequence[tuple[Mapping[str, Any], int, int]],
                   s: MethodSettings, key: str | None = None) -> list[PairResult]:
    prompts = []
    for item, i, j in pairs:
        prompts.append(build_pairwise(rubric, item, i, j, key, s.overrides))
        prompts.append(build_pairwise(rubric, item, j, i, key, s.overrides))
    answer = schema(s, pairwise_schema)
    results = await call(backend, [request_for(p, s, json_schema=answer) for p in prompts], s)
    parse = reader(answer, parse_pairwise)
    out = []
    for n, (item, i, j) in enumerate(pairs):
        r1, r2 = results[2 * n], results[2 * n + 1]
        p1, p2 = parse_or_error(r1, parse), parse_or_error(r2, parse)
        v1 = _mapped(p1.value if p1.status == OK else None, i, j)
        v2 = _mapped(p2.value if p2.status == OK else None, j, i)
        value, status = combine(v1, v2)
        if status == "unparsed" and "error" in (p1.status, p2.status):
            status = "error"
        elif status == "unparsed" and TRUNCATED in (p1.status, p2.status):
            status = TRUNCATED
        tin = usage(r1)[0] + usage(r2)[0]
        tout = usage(r1)[1] + usage(r2)[1]
        out.append(PairResult(
            item_id=str(item.get("id")), output_a=i, output_b=j, criterion=key or "overall", value=value,
            status=status, verdicts=(v1, v2), raw=texts(r1) + texts(r2), input_tokens=tin, output_tokens=tout,
            cost_usd=s.pricing.cost(tin, tout),
            doubt={"swap_disagreement": status == INCONSISTENT},
        ))
    return out


def position_bias(results: Sequence[PairResult]) -> dict[str, float | int | None]:
    """Flip count and how often the first-shown response won, over pairs where both orders parsed."""
    both = [r for r in results if r.verdicts[0] is not None and r.verdicts[1] is not None]
    flips = sum(1 for r in both if r.verdicts[0] != r.verdicts[1])
    decisive = [(r, k) for r in both for k in (0, 1) if r.verdicts[k] != "tie"]
    first_wins = sum(1 for r, k in decisive if r.verdicts[k] == (r.output_a if k == 0 else r.output_b))
    return {
        "n_pairs": len(results), "n_both_parsed": len(both), "flips": flips,
        "flip_rate": flips / len(both) if both else None,
        "first_position_win_rate": first_wins / len(decisive) if decisive else None,
    }
