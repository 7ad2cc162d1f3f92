"""Ranking: the judge ranks all of an item's outputs at once, `[[2 > 1 > 3]]`.

The outputs are shown in a per-item random order (fixed by the item id and the criterion, so a
resumed or repeated run shows the same order) and, with `swap` (default), asked a second time in
the reverse order. Choice (issue 12): the stored ranking is the FIRST order's parse (the second
order's when only it parsed), and the two orders' disagreement goes to `doubt`:
`swap_distance` (normalised Kendall tau distance between the two rankings, 0 = the same, 1 =
reversed; a pair tied in one ranking and not the other counts half) and `swap_disagreement`
(distance > 0, a routing signal like the pairwise swap's). Unlike a pairwise flip, one adjacent
swap among K responses is not a contradiction that voids the whole ranking; the distance says
how far the judge moved. One slot per item: criterion `rank:<key>`, value
{"shown": [output indexes in the order shown], "ranks": [rank of each, 1 = best]}.
"""
from __future__ import annotations

import random
from itertools import combinations
from typing import Any, Mapping, Sequence

from judges.backends.base import Backend
from judges.methods.base import (
    TRUNCATED, CriterionResult, MethodSettings, call, parse_or_error, request_for, schema, texts, usage,
)
from judges.structured import ranking_schema, reader
from judges.parsing import OK, ParseResult, parse_ranking
from judges.prompts import build_ranking, criterion_by_key


def rank_slot(key: str) -> str:
    return f"rank:{key}"


def shown_order(item_id: str, n: int, key: str) -> list[int]:
    """The item's outputs in the order the judge sees them first: random per item, but fixed."""
    order = list(range(n))
    random.Random(f"rank/{key}/{item_id}").shuffle(order)
    return order


def by_output(shown: Sequence[int], ranks: Sequence[int]) -> dict[int, int]:
    return dict(zip(shown, ranks))


def kendall_distance(a: Mapping[int, int], b: Mapping[int, int]) -> float:
    """Share of output pairs the two rankings order differently (a tie against an order: half)."""
    pairs = list(combinations(sorted(a), 2))
    if not pairs:
        return 0.0
    bad = 0.0
    for x, y in pairs:
        sa, sb = (a[x] > a[y]) - (a[x] < a[y]), (b[x] > b[y]) - (b[x] < b[y])
        bad += 1.0 if sa * sb < 0 else 0.5 if sa != sb else 0.0
    return bad / len(pairs)


async def ranking(backend: Backend, rubric: Mapping[str, Any], items: Sequence[Mapping[str, Any]],
                  s: MethodSettings, key: str | None = None, swap: bool = True) -> list[CriterionResult]:
    """One result per item with two or more outputs (criterion `rank:<key or overall>`)."""
    name = key or "overall"
    allow_ties = bool(key and criterion_by_key(rubric, key).get("ties"))
    asked: list[tuple[Mapping[str, Any], list[list[int]]]] = []
    prompts, answers = [], []
    for item in items:
        n = len(item.get("outputs") or [])
        if n < 2:
            continue
        first = shown_order(str(item.get("id")), n, name)
        orders = [first, first[::-1]] if swap else [first]
        asked.append((item, orders))
        prompts += [build_ranking(rubric, item, order, key, s.overrides) for order in orders]
        # a schema cannot say which places tie, so a criterion that allows ties keeps the seed's format
        answers += [None if allow_ties else schema(s, lambda k=len(order): ranking_schema(k)) for order in orders]
    results = await call(backend, [request_for(p, s, json_schema=a) for p, a in zip(prompts, answers)], s)
    out: list[CriterionResult] = []
    at = 0
    for item, orders in asked:
        mine = results[at: at + len(orders)]
        at += len(orders)
        mine_answers = answers[at - len(orders): at]
        parses: list[ParseResult] = [parse_or_error(r, reader(a, lambda t, k=len(orders[0]): parse_ranking(
            t, k, allow_ties=allow_ties))) for r, a in zip(mine, mine_answers)]
        out.append(_combine(str(item.get("id")), name, orders, parses, mine, s))
    return out


def _combine(item_id: str, name: str, orders: list[list[int]], parses: list[ParseResult], results: list,
             s: MethodSettings) -> CriterionResult:
    ok = [i for i, p in enumerate(parses) if p.status == OK]
    tin = sum(usage(r)[0] for r in results)
    tout = sum(usage(r)[1] for r in results)
    detail: dict[str, Any] = {"orders": orders, "rankings": [p.value if p.status == OK else None for p in parses],
                              "parse": [p.detail for p in parses]}
    doubt: dict[str, Any] = {}
    if ok:
        keep = ok[0]
        value: Any = {"shown": orders[keep], "ranks": parses[keep].value}
        status = OK
        if len(ok) == 2:
            d = kendall_distance(by_output(orders[0], parses[0].value), by_output(orders[1], parses[1].value))
            doubt = {"swap_distance": d, "swap_disagreement": d > 0}
        elif len(orders) == 2:
            doubt = {"swap_unparsed": True}
    else:
        value = None
        statuses = [p.status for p in parses]
        status = next((x for x in ("error", "refusal", TRUNCATED) if x in statuses), "unparsed")
    raw: list[str] = []
    for r in results:
        raw += texts(r)
    return CriterionResult(item_id=item_id, output=None, criterion=rank_slot(name), value=value, status=status,
                           raw=raw, input_tokens=tin, output_tokens=tout, cost_usd=s.pricing.cost(tin, tout),
                           doubt=doubt, detail=detail)


def first_shown_best(orders: Sequence[Sequence[int]], rankings: Sequence[Sequence[int] | None]) -> tuple[int, int, float]:
    """(answers where the first-shown output was ranked best alone, parsed answers, the 1/K chance)."""
    hits = n = 0
    chance = 0.0
    for order, ranks in zip(orders, rankings):
        if ranks is None:
            continue
        n += 1
        chance += 1 / len(order)
        hits += ranks[0] == 1 and list(ranks).count(1) == 1
    return hits, n, chance / n if n else 0.0
