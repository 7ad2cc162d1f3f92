"""Seed 003 escalation: a cheap judge, a deterministic router, experts, and a finaliser.

1. The small judge (stage 0) labels every output.
2. The router escalates an output when the small label is in `escalate_labels`, where
   "Error" stands for a small answer that failed (unparsed, refusal, backend error), or
   when a risk flag from the aligned edit spans is set (number_change,
   proper_noun_change, long_rewrite_risk) and listed in `escalate_flags`.
   `router="llm"` (seed 003's optional, model-driven router) replaces the risk flags by
   the small model's own say: one combined classify+route JSON call; where that answer
   lacks a readable label or route, the two-call fallback asks for them separately
   (the label prompt, then the route prompt). `router_two_calls=True` always uses two.
   An unreadable route escalates (a router that cannot say "accept" is low-trust).
3. Escalated outputs go to the experts in turn (stages 1..N-2); the first expert that
   agrees with the small judge settles it.
4. Only when small and experts disagree does the finaliser (the last stage) decide.
With two stages there is no finaliser: the expert's label stands (the small judge's,
when the expert failed and the small judge did not).
"""
from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field, replace
from typing import Any, Mapping, Sequence

from judges.backends.base import Backend
from judges.parsing import OK, parse_bool_field, parse_label
from judges.prompts import criterion_by_key
from judges.prompts.aqua_003 import build_combined_route, build_route, source_target, tokens
from judges.methods.base import (
    CriterionResult, MethodSettings, Pricing, Target, call, from_parse, parse_or_error, request_for,
)
from judges.methods.direct import classify, label_set

ALL_FLAGS = ("number_change", "proper_noun_change", "long_rewrite_risk")
ROUTERS = ("deterministic", "llm")
FAILED_LABEL = "error"  # how escalate_labels names a failed small answer (any case: "Error")


@dataclass
class Stage:
    backend: Backend
    pricing: Pricing = field(default_factory=Pricing)
    name: str = ""


def risk_flags(source: str, target: str, long_rewrite_tokens: int = 4) -> set[str]:
    """Language-agnostic risk flags from the changed spans between source and target."""
    a, b = tokens(source), tokens(target)
    flags: set[str] = set()
    changed = 0
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
        if op == "equal":
            continue
        old, new = a[i1:i2], b[j1:j2]
        changed += max(len(old), len(new))
        if re.search(r"\d", " ".join(old)) or re.search(r"\d", " ".join(new)):
            if re.findall(r"\d+", " ".join(old)) != re.findall(r"\d+", " ".join(new)):
                flags.add("number_change")
        # a capitalised word that is not sentence-initial, appearing on one side only
        caps_old = {w for k, w in enumerate(old, start=i1) if k > 0 and w[:1].isupper()}
        caps_new = {w for k, w in enumerate(new, start=j1) if k > 0 and w[:1].isupper()}
        if caps_old != caps_new and {w.lower() for w in caps_old} != {w.lower() for w in caps_new}:
            flags.add("proper_noun_change")
        if max(len(old), len(new)) >= long_rewrite_tokens:
            flags.add("long_rewrite_risk")
    if a and changed / len(a) > 0.5:
        flags.add("long_rewrite_risk")
    return flags


def should_escalate(small: CriterionResult, flags: set[str], escalate_labels: Sequence[str],
                    escalate_flags: Sequence[str]) -> list[str]:
    """Reasons to escalate (empty: accept the small judge's label)."""
    reasons = []
    wanted = {str(x) for x in escalate_labels}
    if not small.ok:
        if FAILED_LABEL in {x.lower() for x in wanted}:
            reasons.append(f"label:Error ({small.status})")
    elif small.value in wanted:
        reasons.append(f"label:{small.value}")
    reasons += [f"flag:{f}" for f in sorted(flags & set(escalate_flags))]
    return reasons


def _add_cost(into: CriterionResult, other: CriterionResult) -> None:
    into.input_tokens += other.input_tokens
    into.output_tokens += other.output_tokens
    into.cost_usd += other.cost_usd
    if other.detail.get("cached_cost_usd"):
        into.detail["cached_cost_usd"] = into.detail.get("cached_cost_usd", 0.0) + other.detail["cached_cost_usd"]


async def llm_route(backend: Backend, rubric: Mapping[str, Any], targets: Sequence[Target], s: MethodSettings,
                    key: str | None = None, two_calls: bool = False) -> list[tuple[CriterionResult, bool | None]]:
    """(small result, escalate?) per target: the combined call, then the two-call fallback
    for whatever it left unread. escalate is None when no call gave a readable route."""
    criterion = criterion_by_key(rubric, key) if key else None
    labels = label_set(rubric, key)
    out: list[tuple[CriterionResult, bool | None]] = []
    need_label, need_route = list(range(len(targets))), list(range(len(targets)))
    small: list[CriterionResult | None] = [None] * len(targets)
    route: list[bool | None] = [None] * len(targets)
    if not two_calls:
        prompts = [build_combined_route(rubric, criterion, t.item, t.output, s.overrides) for t in targets]
        results = await call(backend, [request_for(p, s) for p in prompts], s)
        for n, (t, r) in enumerate(zip(targets, results)):
            res = from_parse(t, key or "label", parse_or_error(r, lambda text: parse_label(text, labels)), r,
                             s.pricing)
            res.detail["router_calls"] = ["combined"]
            small[n] = res
            esc = parse_or_error(r, lambda text: parse_bool_field(text, "escalate"))
            if esc.status == OK:
                route[n] = bool(esc.value)
        need_label = [n for n in range(len(targets)) if not small[n].ok]
        need_route = [n for n in range(len(targets)) if route[n] is None]
    if need_label:
        fresh = await classify(backend, rubric, [targets[n] for n in need_label], s, key)
        for n, res in zip(need_label, fresh):
            if small[n] is not None:
                _add_cost(res, small[n])
                res.raw = small[n].raw + res.raw
                res.detail["router_calls"] = small[n].detail["router_calls"] + ["label"]
            else:
                res.detail["router_calls"] = ["label"]
            small[n] = res
    if need_route:
        prompts = [build_route(rubric, criterion, targets[n].item, targets[n].output,
                               str(small[n].value) if small[n].ok else None, s.overrides) for n in need_route]
        results = await call(backend, [request_for(p, s) for p in prompts], s)
        for n, r in zip(need_route, results):
            esc = parse_or_error(r, lambda text: parse_bool_field(text, "escalate"))
            part = from_parse(targets[n], key or "label", esc, r, s.pricing)
            _add_cost(small[n], part)
            small[n].raw += part.raw
            small[n].detail["router_calls"].append("route")
            route[n] = bool(esc.value) if esc.status == OK else None
    for n in range(len(targets)):
        out.append((small[n], route[n]))  # type: ignore[arg-type]
    return out


async def escalation(stages: Sequence[Stage], rubric: Mapping[str, Any], targets: Sequence[Target],
                     s: MethodSettings, *, escalate_labels: Sequence[str] = ("FP1", "FP2", "Error"),
                     escalate_flags: Sequence[str] = ALL_FLAGS, long_rewrite_tokens: int = 4,
                     router: str = "deterministic", router_two_calls: bool = False,
                     key: str | None = None) -> list[CriterionResult]:
    if len(stages) < 2:
        raise ValueError("escalation needs at least a small judge and one expert")
    if router not in ROUTERS:
        raise ValueError(f"router must be one of {', '.join(ROUTERS)}, not {router!r}")

    def settings_for(stage: Stage) -> MethodSettings:
        return replace(s, pricing=stage.pricing)

    if router == "llm":
        routed = await llm_route(stages[0].backend, rubric, targets, settings_for(stages[0]), key, router_two_calls)
        small = [r for r, _ in routed]
    else:
        routed = None
        small = await classify(stages[0].backend, rubric, targets, settings_for(stages[0]), key)
    final: list[CriterionResult] = []
    pending: list[int] = []
    for n, (t, r) in enumerate(zip(targets, small)):
        flags = risk_flags(*source_target(t.item, t.output), long_rewrite_tokens)
        if routed is None:
            reasons = should_escalate(r, flags, escalate_labels, escalate_flags)
        else:
            reasons = should_escalate(r, set(), escalate_labels, ())  # the model routes instead of the flags
            verdict = routed[n][1]
            if verdict is None:
                reasons.append("router_unparsed")
            elif verdict:
                reasons.append("router:escalate")
        detail = {"router": router, "flags": sorted(flags), "escalation_reasons": reasons,
                  "path": [{"stage": 0, "label": r.value, "status": r.status}]}
        for k in ("router_calls", "cached_cost_usd"):
            if k in r.detail:
                detail[k] = r.detail[k]
        res = CriterionResult(item_id=r.item_id, output=r.output, criterion=r.criterion, value=r.value,
                              status=r.status, raw=list(r.raw), reasoning=r.reasoning,
                              input_tokens=r.input_tokens, output_tokens=r.output_tokens, cost_usd=r.cost_usd,
                              detail=detail, doubt={"escalated": bool(reasons)})
        final.append(res)
        if reasons:
            pending.append(n)

    experts = list(range(1, len(stages) - 1)) if len(stages) > 2 else [1]
    for e in experts:
        if not pending:
            break
        ex = await classify(stages[e].backend, rubric, [targets[n] for n in pending], settings_for(stages[e]), key)
        still = []
        for n, r in zip(pending, ex):
            res = final[n]
            _add_cost(res, r)
            res.raw += r.raw
            res.detail["path"].append({"stage": e, "label": r.value, "status": r.status})
            small_label = small[n].value if small[n].ok else None
            if len(stages) == 2:
                if r.ok or not small[n].ok:
                    res.value, res.status, res.reasoning = r.value, r.status, r.reasoning
                else:
                    res.doubt["expert_failed"] = True  # keep the small judge's label
                res.doubt["small_expert_disagree"] = not (r.ok and r.value == small_label)
            elif r.ok and r.value == small_label:
                res.value, res.status, res.reasoning = r.value, r.status, r.reasoning
                res.doubt["small_expert_disagree"] = False
            else:
                still.append(n)
        pending = still

    if len(stages) > 2 and pending:
        fin_stage = len(stages) - 1
        fin = await classify(stages[fin_stage].backend, rubric, [targets[n] for n in pending],
                             settings_for(stages[fin_stage]), key)
        for n, r in zip(pending, fin):
            res = final[n]
            _add_cost(res, r)
            res.raw += r.raw
            res.detail["path"].append({"stage": fin_stage, "label": r.value, "status": r.status})
            res.value, res.status, res.reasoning = r.value, r.status, r.reasoning
            res.doubt["small_expert_disagree"] = True
            res.doubt["finalised"] = True
    return final
