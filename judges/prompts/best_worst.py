"""Best-worst prompt: pick the best and the worst of K responses on a criterion, `[[best: 3, worst: 1]]`."""
from __future__ import annotations

from typing import Any, Mapping, Sequence

from judges.prompts.base import Prompt, make_prompt, template
from judges.prompts.generic import rubric_header
from judges.prompts.shown import compared_on, shown_text

ROLE = """Please act as an impartial judge and compare several AI responses to the same input: pick the best one and the worst one. Judge them strictly by the criterion below.
Avoid any position bias: the order in which the responses are presented must not influence your decision. Do not let the length of the responses or the names of assistants influence you."""

VERDICT = """After a brief explanation, output your final verdict on its own line by strictly following this format, with two different response numbers: "[[best: 3, worst: 1]]"."""


def build(rubric: Mapping[str, Any], criterion: Mapping[str, Any] | None, item: Mapping[str, Any],
          shown: Sequence[int], overrides: Mapping[str, str] | None = None) -> Prompt:
    """`shown`: the output indexes of the tuple, in the order shown (Response 1 first)."""
    shared = "\n\n".join([
        template(overrides, "bw_role", ROLE), rubric_header(rubric), "## Criterion",
        compared_on(criterion, "Which response is the best overall, and which the worst?"),
        template(overrides, "bw_verdict", VERDICT),
    ])
    return make_prompt(shared, shown_text(item, shown, overrides), "best_worst",
                       criterion["key"] if criterion else None)
