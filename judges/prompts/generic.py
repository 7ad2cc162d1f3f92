"""Prompts for any rubric: all criteria in one call (JSON answer) or one criterion per call."""
from __future__ import annotations

import json
from typing import Any, Mapping

from judges.prompts.base import (
    COMPARATIVE_KINDS, LABEL_KINDS, Prompt, bounds, choice_values, choices_text, judgeable, levels_text, make_prompt,
    output_of, render, template,
)

ROLE = "You are an expert evaluator. Judge the response below strictly by the rubric; ignore its length, its position and its author."

ITEM = """## Input
$context

## Response to evaluate
$output"""

FIRST_LINE = "Give the score alone on the first line (an integer from $lo to $hi), then explain your judgement."
JSON_SCORE = 'Answer with one JSON object and nothing else: {"score": <integer from $lo to $hi>, "reason": "<brief justification>"}'
JSON_LABEL = 'Answer with one JSON object and nothing else: {"label": "<one of $options>", "reason": "<brief justification>"}'


def rubric_header(rubric: Mapping[str, Any]) -> str:
    parts = [f"# Rubric: {rubric.get('name') or rubric.get('slug')}"]
    if rubric.get("description"):
        parts.append(rubric["description"].strip())
    if rubric.get("instructions"):
        parts.append("## Guidelines\n" + rubric["instructions"].strip())
    return "\n\n".join(parts)


def criterion_text(c: Mapping[str, Any]) -> str:
    lines = [f"### {c['name']} (`{c['key']}`)"]
    if c.get("description"):
        lines.append(c["description"].strip())
    if c.get("kind") in LABEL_KINDS:
        lines.append("Options:\n" + choices_text(c))
    elif c.get("kind") in COMPARATIVE_KINDS:
        pass  # compared, not scored: the comparative prompt states its own answer format
    else:
        lo, hi = bounds(c)
        lines.append(f"Scale: an integer from {lo} to {hi}.")
        if c.get("levels"):
            lines.append("Levels:\n" + levels_text(c))
    if c.get("aspects"):
        lines.append("Aspects:\n" + "\n".join(f"- {a['name']}: {a.get('description', '')}" for a in c["aspects"]))
    if c.get("hint"):
        lines.append(f"Note: {c['hint']}")
    return "\n".join(lines)


def answer_schema(criteria: list[Mapping[str, Any]]) -> str:
    fields = []
    for c in criteria:
        if c.get("kind") in LABEL_KINDS:
            fields.append(f'"{c["key"]}": "<one of {"|".join(choice_values(c))}>"')
        else:
            lo, hi = bounds(c)
            fields.append(f'"{c["key"]}": <integer from {lo} to {hi}>')
    fields.append('"reasoning": "<brief justification per criterion>"')
    return "{" + ", ".join(fields) + "}"


def item_text(item: Mapping[str, Any], output: Mapping[str, Any] | int, overrides: Mapping[str, str] | None) -> str:
    return render(template(overrides, "item", ITEM), context=item.get("context") or "",
                  output=output_of(item, output)["content"])


def build_all(rubric: Mapping[str, Any], item: Mapping[str, Any], output: Mapping[str, Any] | int,
              overrides: Mapping[str, str] | None = None) -> Prompt:
    crits = judgeable(rubric)
    shared = "\n\n".join([
        template(overrides, "role", ROLE), rubric_header(rubric), "## Criteria",
        "\n\n".join(criterion_text(c) for c in crits),
        template(overrides, "answer", "Answer with one JSON object and nothing else: " + answer_schema(crits)),
    ])
    return make_prompt(shared, item_text(item, output, overrides), "json_scores")


def build_one(rubric: Mapping[str, Any], criterion: Mapping[str, Any], item: Mapping[str, Any],
              output: Mapping[str, Any] | int, overrides: Mapping[str, str] | None = None,
              output_format: str | None = None) -> Prompt:
    if criterion.get("kind") in LABEL_KINDS:
        answer = render(template(overrides, "answer_label", JSON_LABEL), options="|".join(choice_values(criterion)))
        expects = "label"
    else:
        lo, hi = bounds(criterion)
        fmt = output_format or "first_line"
        answer = render(template(overrides, "answer_json" if fmt == "json" else "answer_first_line",
                                 JSON_SCORE if fmt == "json" else FIRST_LINE), lo=lo, hi=hi)
        expects = "json_score" if fmt == "json" else "first_line"
    shared = "\n\n".join([template(overrides, "role", ROLE), rubric_header(rubric), "## Criterion",
                          criterion_text(criterion), answer])
    return make_prompt(shared, item_text(item, output, overrides), expects, criterion["key"])


def dumps(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False)
