"""Direct scoring: all criteria in one call, one call per criterion, and label classification."""
from __future__ import annotations

from typing import Any, Mapping, Sequence

from judges.backends.base import Backend
from judges.parsing import ParseResult, parse_criteria_block, parse_json_scores, parse_label, parse_score
from judges.prompts import Prompt, build_all_criteria, build_criterion, build_label, criterion_by_key
from judges.prompts.base import LABEL_KINDS, bounds, choice_values, judgeable
from judges.prompts.feedback_000 import output_names
from judges.structured import label_schema, prompt_schema, reader, scores_schema
from judges.methods.base import (
    CriterionResult, MethodSettings, Target, call, from_parse, parse_or_error, request_for, schema,
)


def selected(rubric: Mapping[str, Any], s: MethodSettings) -> list[dict]:
    crits = judgeable(rubric)
    if s.criteria is not None:
        crits = [c for c in crits if c["key"] in set(s.criteria)]
    return crits


def parse_for_prompt(prompt: Prompt, criterion: Mapping[str, Any], text: str) -> ParseResult:
    """Parse a one-criterion answer from where its prompt's output format puts the verdict."""
    if prompt.expects == "label" or criterion.get("kind") in LABEL_KINDS:
        return parse_label(text, choice_values(criterion) or label_set({}, None))
    lo, hi = bounds(criterion)
    if prompt.expects == "json_score":
        return parse_score(text, lo, hi, fmt="json")
    if prompt.expects == "first_line":
        return parse_score(text, lo, hi, fmt="first_line")
    raise ValueError(f"a one-criterion prompt cannot expect {prompt.expects!r}")


def parse_all(rubric: Mapping[str, Any], prompt: Prompt, crits: Sequence[Mapping[str, Any]],
              text: str, structured: bool = False) -> dict[str, ParseResult]:
    """Every criterion of one answer; a structured answer is the JSON object whatever the prompt's format."""
    if prompt.expects == "criteria_block" and not structured:
        names = output_names(rubric)
        out = {}
        for c in crits:
            lo, hi = bounds(c)
            out.update(parse_criteria_block(text, {c["key"]: names[c["key"]]}, lo, hi))
        return out
    specs = {c["key"]: ("label", choice_values(c)) if c.get("kind") in LABEL_KINDS else ("score", *bounds(c))
             for c in crits}
    return parse_json_scores(text, specs)


async def all_in_one(backend: Backend, rubric: Mapping[str, Any], targets: Sequence[Target],
                     s: MethodSettings) -> list[CriterionResult]:
    """One call per output scoring every criterion; the call's usage is split over the criteria."""
    crits = selected(rubric, s)
    prompts = [build_all_criteria(rubric, t.item, t.output, s.overrides) for t in targets]
    answer = schema(s, lambda: scores_schema(crits)) or (scores_schema(crits) if s.use_json_schema else None)
    results = await call(backend, [request_for(p, s, json_schema=answer) for p in prompts], s)
    out = []
    for t, p, r in zip(targets, prompts, results):
        parsed = parse_or_error(r, lambda text: parse_all(rubric, p, crits, text, s.structured))
        for i, c in enumerate(crits):
            pr = parsed[c["key"]] if isinstance(parsed, dict) else parsed
            out.append(from_parse(t, c["key"], pr, r, s.pricing, share=(i, len(crits))))
    return out


async def per_criterion(backend: Backend, rubric: Mapping[str, Any], targets: Sequence[Target],
                        s: MethodSettings) -> list[CriterionResult]:
    """One call per (output, criterion). Requests are grouped by criterion so that
    consecutive requests share the longest prompt prefix."""
    crits = selected(rubric, s)
    jobs = [(t, c, build_criterion(rubric, c["key"], t.item, t.output, s.overrides, s.output_format))
            for c in crits for t in targets]
    answers = [schema(s, lambda: criterion_schema(p, c)) for _, c, p in jobs]
    results = await call(backend, [request_for(p, s, json_schema=a) for (_, _, p), a in zip(jobs, answers)], s)
    return [from_parse(t, c["key"], parse_or_error(r, reader(a, lambda text: parse_for_prompt(p, c, text))), r,
                       s.pricing)
            for (t, c, p), r, a in zip(jobs, results, answers)]


def criterion_schema(prompt: Prompt, criterion: Mapping[str, Any]) -> dict | None:
    """The answer schema of a one-criterion prompt (its own format: a score or a label)."""
    return prompt_schema(prompt.expects, criterion, label_set({}, None))


async def classify(backend: Backend, rubric: Mapping[str, Any], targets: Sequence[Target],
                   s: MethodSettings, key: str | None = None) -> list[CriterionResult]:
    """Label classification (seed 003 baseline): one call per output, strict JSON label."""
    prompts = [build_label(rubric, t.item, t.output, key, s.overrides) for t in targets]
    key = prompts[0].criterion if prompts else key
    answer = schema(s, lambda: label_schema(label_set(rubric, key)))
    results = await call(backend, [request_for(p, s, json_schema=answer) for p in prompts], s)
    return [from_parse(t, key or "label", parse_or_error(r, lambda text: parse_label_answer(rubric, key, text)), r,
                       s.pricing)
            for t, r in zip(targets, results)]


def parse_label_answer(rubric: Mapping[str, Any], key: str | None, text: str) -> ParseResult:
    """A label answer (seed 003, binary criteria): the JSON `label` field, one of the criterion's choices."""
    return parse_label(text, label_set(rubric, key))


def label_set(rubric: Mapping[str, Any], key: str | None) -> list[str]:
    from judges.prompts.aqua_003 import DEFAULT_LABELS

    if key:
        vals = choice_values(criterion_by_key(rubric, key))
        if vals:
            return vals
    return [str(c["value"]) for c in DEFAULT_LABELS]
