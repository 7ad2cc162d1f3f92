"""Ranking prompt: order K responses from best to worst on a criterion, `[[2 > 1 > 3]]`."""
from __future__ import annotations

from typing import Any, Mapping, Sequence

from judges.prompts.base import Prompt, make_prompt, render, template
from judges.prompts.generic import rubric_header
from judges.prompts.shown import compared_on, shown_text

ROLE = """Please act as an impartial judge and rank several AI responses to the same input, from the best to the worst. Judge them strictly by the criterion below.
Avoid any position bias: the order in which the responses are presented must not influence your decision. Do not let the length of the responses or the names of assistants influence you."""

VERDICT = """After a brief explanation, output your final ranking on its own line by strictly following this format, best first, naming every response number shown exactly once: "[[2 > 1 > 3]]". $ties"""

TIES = 'Put "=" between two responses only when they are equally good, e.g. "[[2 = 1 > 3]]".'
NO_TIES = 'Ties are not allowed: use ">" only.'


def build(rubric: Mapping[str, Any], criterion: Mapping[str, Any] | None, item: Mapping[str, Any],
          shown: Sequence[int], overrides: Mapping[str, str] | None = None) -> Prompt:
    """`shown`: the item's output indexes in the order shown (Response 1 first)."""
    ties = bool(criterion and criterion.get("ties"))
    shared = "\n\n".join([
        template(overrides, "rank_role", ROLE), rubric_header(rubric), "## Criterion",
        compared_on(criterion, "Rank the responses by their overall quality."),
        render(template(overrides, "rank_verdict", VERDICT), ties=TIES if ties else NO_TIES),
    ])
    return make_prompt(shared, shown_text(item, shown, overrides), "ranking", criterion["key"] if criterion else None)
