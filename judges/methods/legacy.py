"""Seed 003 "feedback/legacy (baseline-v0)": the early label prompt as a method of its own.

Same call shape and parsing as the baseline `label` method (one call per output, JSON
label); only the prompt differs (judges.prompts.aqua_003.LEGACY_HEADER), so the two can be
benchmarked side by side as in the seed's table.
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

from judges.backends.base import Backend
from judges.parsing import parse_label
from judges.prompts import criterion_by_key
from judges.prompts.aqua_003 import build_legacy
from judges.methods.base import (
    CriterionResult, MethodSettings, Target, call, from_parse, parse_or_error, request_for, schema,
)
from judges.structured import label_schema
from judges.methods.direct import label_set


async def legacy(backend: Backend, rubric: Mapping[str, Any], targets: Sequence[Target], s: MethodSettings,
                 key: str | None = None) -> list[CriterionResult]:
    criterion = criterion_by_key(rubric, key) if key else None
    prompts = [build_legacy(rubric, criterion, t.item, t.output, s.overrides) for t in targets]
    labels = label_set(rubric, key)
    answer = schema(s, lambda: label_schema(labels))
    results = await call(backend, [request_for(p, s, json_schema=answer) for p in prompts], s)
    return [from_parse(t, key or "label", parse_or_error(r, lambda text: parse_label(text, labels)), r, s.pricing)
            for t, r in zip(targets, results)]
