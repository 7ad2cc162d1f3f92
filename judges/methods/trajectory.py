"""Judging trajectory outputs: whole-trajectory and per-step criteria (rubric `scope`), the
trajectory sent as chat messages with tool calls (judges.prompts.trajectory).

A slot is a criterion key, or `<key>@<step>` for a per-step criterion (the key a rater's per-step
rating has: annotation.step_questions). `steps="calls"` asks one call per slot; `steps="structured"`
asks one call per (output, per-step criterion) whose JSON answer holds every step, its usage split
over the steps.
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

from judges.backends.base import Backend
from judges.methods.base import CriterionResult, MethodSettings, Target, call, from_parse, parse_or_error, request_for
from judges.methods.direct import parse_for_prompt
from judges.parsing import parse_json_scores
from judges.prompts import criterion_by_key
from judges.prompts import trajectory as P
from judges.prompts.base import LABEL_KINDS, bounds, choice_values

STEP_SEPARATOR = "@"  # as annotation.step_questions stores a per-step rating
STEP_MODES = ("calls", "structured")


def split_slot(slot: str) -> tuple[str, str]:
    base, _sep, step = slot.partition(STEP_SEPARATOR)
    return base, step


async def judge_trajectories(backend: Backend, rubric: Mapping[str, Any], jobs: Sequence[tuple[Target, Sequence[str]]],
                             s: MethodSettings, steps: str = "calls") -> list[CriterionResult]:
    """One result per (target, slot) of `jobs`."""
    if steps not in STEP_MODES:
        raise ValueError(f"method_options.steps must be one of {', '.join(STEP_MODES)}, not {steps!r}")
    calls: list[tuple[Target, Mapping[str, Any], list[str], P.Prompt]] = []  # (target, criterion, slots, prompt)
    for t, slots in jobs:
        content = t.item["outputs"][t.output]["content"]
        by_base: dict[str, list[str]] = {}
        for slot in slots:
            base, step = split_slot(slot)
            by_base.setdefault(base, []).append(step)
        for base, step_keys in by_base.items():
            c = criterion_by_key(rubric, base)
            whole = [k for k in step_keys if not k]
            per = [k for k in step_keys if k]
            if whole:
                calls.append((t, c, [base], P.build(rubric, c, t.item, content, None, overrides=s.overrides)))
            if per and steps == "structured":
                calls.append((t, c, [f"{base}{STEP_SEPARATOR}{k}" for k in per],
                              P.build(rubric, c, t.item, content, per, structured=True, overrides=s.overrides)))
            elif per:
                calls += [(t, c, [f"{base}{STEP_SEPARATOR}{k}"],
                           P.build(rubric, c, t.item, content, [k], overrides=s.overrides)) for k in per]
    results = await call(backend, [request_for(p, s) for *_, p in calls], s)
    out: list[CriterionResult] = []
    for (t, c, slots, p), r in zip(calls, results):
        if p.expects == "json_fields":
            spec = ("label", choice_values(c)) if c.get("kind") in LABEL_KINDS else ("score", *bounds(c))
            steps_of = {split_slot(slot)[1]: slot for slot in slots}
            parsed = parse_or_error(r, lambda text: parse_json_scores(text, {k: spec for k in steps_of}))
            for i, (step, slot) in enumerate(steps_of.items()):
                pr = parsed[step] if isinstance(parsed, dict) else parsed
                res = from_parse(t, slot, pr, r, s.pricing, share=(i, len(slots)))
                res.detail["asked"] = "structured"
                out.append(res)
            continue
        res = from_parse(t, slots[0], parse_or_error(r, lambda text: parse_for_prompt(p, c, text)), r, s.pricing)
        res.detail["asked"] = "whole" if STEP_SEPARATOR not in slots[0] else "step"
        out.append(res)
    return out
