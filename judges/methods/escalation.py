"""Seed 003 escalation: a cheap judge, a deterministic router, experts, and a finaliser.

1. The small judge (stage 0) labels every output.
2. The router escalates an output when the small label is in `escalate_labels`, or the
   small answer did not parse, or a risk flag from the aligned edit spans is set
   (number_change, proper_noun_change, long_rewrite_risk) and listed in `escalate_flags`.
3. Escalated outputs go to the experts in turn (stages 1..N-2); the first expert that
   agrees with the small judge settles it.
4. Only when small and experts disagree does the finaliser (the last stage) decide.
With two stages there is no finaliser: the expert's label stands.
"""
from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field, replace
from typing import Any, Mapping, Sequence

from judges.backends.base import Backend
from judges.prompts.aqua_003 import source_target, tokens
from judges.methods.base import CriterionResult, MethodSettings, Pricing, Target
from judges.methods.direct import classify

ALL_FLAGS = ("number_change", "proper_noun_change", "long_rewrite_risk")


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
    if not small.ok:
        reasons.append(f"small_{small.status}")
    elif small.value in set(escalate_labels):
        reasons.append(f"label:{small.value}")
    reasons += [f"flag:{f}" for f in sorted(flags & set(escalate_flags))]
    return reasons


def _add_cost(into: CriterionResult, other: CriterionResult) -> None:
    into.input_tokens += other.input_tokens
    into.output_tokens += other.output_tokens
    into.cost_usd += other.cost_usd


async def escalation(stages: Sequence[Stage], rubric: Mapping[str, Any], targets: Sequence[Target],
                     s: MethodSettings, *, escalate_labels: Sequence[str] = ("FP1", "FP2", "Error"),
                     escalate_flags: Sequence[str] = ALL_FLAGS, long_rewrite_tokens: int = 4,
                     key: str | None = None) -> list[CriterionResult]:
    if len(stages) < 2:
        raise ValueError("escalation needs at least a small judge and one expert")

    def settings_for(stage: Stage) -> MethodSettings:
        return replace(s, pricing=stage.pricing)

    small = await classify(stages[0].backend, rubric, targets, settings_for(stages[0]), key)
    final: list[CriterionResult] = []
    pending: list[int] = []
    for n, (t, r) in enumerate(zip(targets, small)):
        flags = risk_flags(*source_target(t.item, t.output), long_rewrite_tokens)
        reasons = should_escalate(r, flags, escalate_labels, escalate_flags)
        res = CriterionResult(item_id=r.item_id, output=r.output, criterion=r.criterion, value=r.value,
                              status=r.status, raw=list(r.raw), reasoning=r.reasoning,
                              input_tokens=r.input_tokens, output_tokens=r.output_tokens, cost_usd=r.cost_usd,
                              detail={"flags": sorted(flags), "escalation_reasons": reasons,
                                      "path": [{"stage": 0, "label": r.value, "status": r.status}]},
                              doubt={"escalated": bool(reasons)})
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
            if len(stages) == 2 or (r.ok and r.value == small_label):
                res.value, res.status, res.reasoning = r.value, r.status, r.reasoning
                res.doubt["small_expert_disagree"] = not (r.ok and r.value == small_label)
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
