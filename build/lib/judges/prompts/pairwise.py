"""Pairwise prompt: which of two responses is better on a criterion (MT-Bench-style verdict)."""
from __future__ import annotations

from typing import Any, Mapping

from judges.prompts.base import Prompt, make_prompt, output_of, render, template
from judges.prompts.generic import criterion_text, rubric_header

ROLE = """Please act as an impartial judge and compare two AI responses to the same input. Judge them strictly by the criterion below.
Avoid any position bias: the order in which the responses are presented must not influence your decision. Do not let the length of the responses or the names of assistants influence you."""

VERDICT = """After a brief explanation, output your final verdict by strictly following this format: "[[A]]" if response A is better, "[[B]]" if response B is better, and "[[C]]" for a tie."""

ITEM = """## Input
$context

## Response A
$output_a

## Response B
$output_b"""


def build(rubric: Mapping[str, Any], criterion: Mapping[str, Any] | None, item: Mapping[str, Any],
          output_a: Mapping[str, Any] | int, output_b: Mapping[str, Any] | int,
          overrides: Mapping[str, str] | None = None) -> Prompt:
    crit = criterion_text(criterion) if criterion else "### Overall quality\nWhich response is better overall?"
    shared = "\n\n".join([template(overrides, "pair_role", ROLE), rubric_header(rubric), "## Criterion", crit,
                          template(overrides, "verdict", VERDICT)])
    text = render(template(overrides, "pair_item", ITEM), context=item.get("context") or "",
                  output_a=output_of(item, output_a)["content"], output_b=output_of(item, output_b)["content"])
    return make_prompt(shared, text, "pairwise", criterion["key"] if criterion else None)
