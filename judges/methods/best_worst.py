"""Best-worst scaling: the judge picks the best and the worst of a tuple of outputs,
`[[best: 3, worst: 1]]`.

The tuples come from the design the human raters get (annotation.services.comparative.tuple_order):
the item's outputs stand in a random circle and tuple s takes `tuple_size` consecutive places from
s·tuple_size, in a random order within the tuple. With m = n / gcd(n, tuple_size) tuples (slots
0..m-1) every output is shown exactly tuple_size / gcd(n, tuple_size) times; an item with no more
outputs than tuple_size is shown whole, once. The design is fixed by the item id and the
criterion, so a resumed run asks the same tuples. One slot per tuple: criterion
`bw:<key>:<p1>-<p2>-...` (output indexes in the order shown), value
{"shown": [...], "best": index, "worst": index}.
"""
from __future__ import annotations

import hashlib
from math import gcd
from typing import Any, Mapping, Sequence

from annotation.services.comparative import tuple_order
from judges.backends.base import Backend
from judges.methods.base import (
    CriterionResult, MethodSettings, call, parse_or_error, request_for, schema, texts, usage,
)
from judges.structured import best_worst_schema, reader
from judges.parsing import OK, parse_best_worst
from judges.prompts import build_best_worst

DEFAULT_TUPLE_SIZE = 4


def bw_slot(key: str, shown: Sequence[int]) -> str:
    return f"bw:{key}:{'-'.join(str(i) for i in shown)}"


def shown_of_slot(slot: str) -> list[int]:
    """The tuple (output indexes in the order shown) a `bw:` slot names."""
    return [int(x) for x in slot.rsplit(":", 1)[1].split("-")]


def design(item_id: str, n: int, size: int, key: str) -> list[list[int]]:
    """The tuples asked of one item, each in the order shown."""
    if n < 2:
        return []
    seed = int.from_bytes(hashlib.sha256(f"bw/{key}/{item_id}".encode()).digest()[:8], "big")
    m = n // gcd(n, size) if n > size else 1
    return [tuple_order(n, size, slot=s, seed=seed) for s in range(m)]


async def best_worst(backend: Backend, rubric: Mapping[str, Any],
                     tuples: Sequence[tuple[Mapping[str, Any], Sequence[int]]], s: MethodSettings,
                     key: str | None = None) -> list[CriterionResult]:
    """One result per (item, tuple in the order shown)."""
    name = key or "overall"
    prompts = [build_best_worst(rubric, item, shown, key, s.overrides) for item, shown in tuples]
    answers = [schema(s, lambda k=len(shown): best_worst_schema(k)) for _, shown in tuples]
    results = await call(backend, [request_for(p, s, json_schema=a) for p, a in zip(prompts, answers)], s)
    out = []
    for (item, shown), r, a in zip(tuples, results, answers):
        p = parse_or_error(r, reader(a, lambda t, k=len(shown): parse_best_worst(t, k)))
        tin, tout = usage(r)
        value = ({"shown": list(shown), "best": shown[p.value["best"] - 1], "worst": shown[p.value["worst"] - 1]}
                 if p.status == OK else None)
        detail: dict[str, Any] = {"shown": list(shown), "parse": p.detail}
        if p.status == OK:
            detail["picked"] = p.value  # by shown number, for the position-bias count
        out.append(CriterionResult(item_id=str(item.get("id")), output=None, criterion=bw_slot(name, shown),
                                   value=value, status=p.status, raw=texts(r), input_tokens=tin, output_tokens=tout,
                                   cost_usd=s.pricing.cost(tin, tout), detail=detail))
    return out
