"""Seed 003's weighted ensemble (`ensemble: weighted`): several judges label every output,
and a weighted vote decides.

Each member is a whole judge (backend, model, method, price); the judge that carries
`ensemble: weighted` only coordinates them. Weights are given, or learnt
from each member's accuracy on gold labels (`learn_weights`, used by the platform with the
member's own earlier run on the study, so the vote never sees the gold of what it labels).
A member that failed on an output casts no vote there; ties go to the label whose
heaviest supporter comes first in member order. Cost is every member's cost.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Awaitable, Callable, Mapping, Sequence

from judges.backends.base import Backend
from judges.methods.base import CriterionResult, MethodSettings, Pricing, Target

MethodFn = Callable[..., Awaitable[list[CriterionResult]]]


@dataclass
class Member:
    backend: Backend
    method: MethodFn
    pricing: Pricing = field(default_factory=Pricing)
    name: str = ""
    kwargs: Mapping[str, Any] = field(default_factory=dict)
    settings: MethodSettings | None = None  # the member's own sampling, prompts and cache; else the ensemble's


def weighted_vote(votes: Sequence[str | None], weights: Sequence[float]) -> tuple[str | None, float]:
    """(winning label, its share of the cast weight); (None, 0.0) when nobody voted."""
    totals: dict[str, float] = {}
    first: dict[str, tuple[float, int]] = {}  # label -> (heaviest supporter's -weight, its position)
    for k, (v, w) in enumerate(zip(votes, weights)):
        if v is None:
            continue
        totals[v] = totals.get(v, 0.0) + float(w)
        first[v] = min(first.get(v, (float("inf"), k)), (-float(w), k))
    if not totals:
        return None, 0.0
    label = max(totals, key=lambda lab: (totals[lab], -first[lab][0], -first[lab][1]))
    cast = sum(totals.values())
    return label, (totals[label] / cast if cast > 0 else 0.0)


def learn_weights(predictions: Sequence[Mapping[str, str | None]], gold: Mapping[str, str],
                  floor: float = 0.0) -> list[float]:
    """Each member's accuracy on the gold ids (a failure or missing id counts as wrong)."""
    if not gold:
        raise ValueError("no gold labels to learn the ensemble weights from")
    out = []
    for pred in predictions:
        right = sum(1 for i, g in gold.items() if pred.get(i) is not None and str(pred.get(i)) == str(g))
        out.append(max(right / len(gold), floor))
    return out


async def weighted_ensemble(members: Sequence[Member], rubric: Mapping[str, Any], targets: Sequence[Target],
                            s: MethodSettings, *, weights: Sequence[float] | None = None,
                            key: str | None = None) -> list[CriterionResult]:
    if not members:
        raise ValueError("a weighted ensemble needs at least one member")
    weights = list(weights) if weights is not None else [1.0] * len(members)
    if len(weights) != len(members) or any(w < 0 for w in weights):
        raise ValueError(f"weights: need {len(members)} numbers >= 0, one per member, got {weights}")
    per_member = [await m.method(m.backend, rubric, targets, m.settings or replace(s, pricing=m.pricing), key=key,
                                 **m.kwargs) for m in members]
    out = []
    for n, t in enumerate(targets):
        rs = [res[n] for res in per_member]
        label, share = weighted_vote([r.value if r.ok else None for r in rs], weights)
        crit = rs[0].criterion
        res = CriterionResult(
            item_id=t.item_id, output=t.output, criterion=crit, value=label,
            status="ok" if label is not None else (rs[0].status if all(r.status == rs[0].status for r in rs)
                                                   else "unparsed"),
            raw=[x for r in rs for x in r.raw], reasoning=next((r.reasoning for r in rs if r.ok and r.value == label),
                                                               None),
            input_tokens=sum(r.input_tokens for r in rs), output_tokens=sum(r.output_tokens for r in rs),
            cost_usd=sum(r.cost_usd for r in rs),
            detail={"ensemble": "weighted", "weights": weights, "share": share,
                    "votes": [{"member": m.name or str(k), "label": r.value, "status": r.status}
                              for k, (m, r) in enumerate(zip(members, rs))]},
            # the winner's share of the cast weight: a split vote reads as "inconsistent" in doubt routing
            doubt={"agreement": share} if label is not None else {},
        )
        cached = sum(r.detail.get("cached_cost_usd", 0.0) for r in rs)
        if cached:
            res.detail["cached_cost_usd"] = cached
        out.append(res)
    return out
