"""Seed 000 (feedback evaluation): the Base Prompt, all criteria in one call.

The template is the seed's text (or the rubric's `judge.base_prompt`, or an override)
with `criteria (given in section 1.2)` replaced by the rubric's criteria and the
placeholders {text}, {load_criteria}, {load_domain}. One reordering: the seed puts
"Output Format" after the new text; we put it before "Assessment Template for New Text" so
that everything except the item is a shared prefix.
"""
from __future__ import annotations

from typing import Any, Mapping

from judges.prompts.base import Prompt, judgeable, make_prompt, metadata, output_of, render, split_at, template

BASE_PROMPT = """You are acting as a human evaluator whose responsibility is to assess the quality of AI-generated feedback provided to students.

Your role involves:

- Reading the AI-generated feedback in full and considering the student's context.
- Assigning a score (1–5) for each evaluation criterion.
- Providing written reasoning for each score, supported by specific examples or phrases from the feedback text.
- Determining an overall rating based on the combined scores, adjusted if necessary for exceptional strengths or weaknesses.
- Suggesting improvements, either for the feedback itself or for refining the evaluation rubric.

As the evaluator, you are expected to be:

- **Objective** – Apply the criteria consistently without bias.
- **Precise** – Ground your reasoning in the actual wording of the feedback.
- **Educationally aware** – Judge feedback in terms of its usefulness, clarity, and impact on student learning.

There are the criteria with their assessment: criteria (given in section 1.2)

#### Given Example:

**Input:**

**Feedback:**
"Your analysis of psychological factors is strong. You identified key variables and theories well. To improve, integrate recent 2023 research findings and consider the impact of cultural and policy contexts on behavior. Your structure is clear and well-written. Excellent work!"

**Criteria:** Criterion: c1
**Name:** Theoretical Understanding
**Description:** Demonstrates comprehension of relevant psychological theories and their application.

**Performance Descriptors:**
- **excellent**: Demonstrates comprehensive and nuanced understanding of complex psychological theories
- **good**: Shows solid understanding of psychological theories with clear connections to topic
- **average**: Demonstrates adequate understanding of key psychological theories with minor gaps

**Domain:** Psychology

**Output:**

- **Correctness**: 5
- **Clarity**: 5
- **Tone**: 5
- **Actionability**: 5
- **Coherence**: 5
- **Emotion**: 5
- **Overall Rating**: 5

**Feedback:**
"Your analysis of psychological theories is strong. You identified key concepts and applied them appropriately. To improve, include recent 2023 research findings and consider cultural or policy-related influences on behavior. Your structure is clear and well-written. Excellent work!"

**Reasoning:**

- **Correctness**: The feedback is accurate and aligns with the criterion (c1: Theoretical Understanding), directly assessing the student's use of psychological theories.
- **Clarity**: The message is expressed in a straightforward and logical way, highlighting strengths and improvements without ambiguity.
- **Tone**: The wording is encouraging and constructive, balancing praise ("strong analysis") with growth-oriented suggestions.
- **Actionability**: The feedback gives concrete next steps (adding 2023 research, considering cultural/policy influences), making improvement realistic.
- **Coherence**: The feedback flows naturally, with a clear progression from strengths → areas for improvement → overall praise, making it easy to follow.
- **Emotion**: The tone conveys empathy and motivation, respecting the student's effort while inspiring them to improve further.

#### Assessment Template for New Text

**Text:** {text}
**Criteria:** {load_criteria}
**Domain:** {load_domain}"""

CRITERIA_PLACEHOLDER = "criteria (given in section 1.2)"
ITEM_MARKER = "#### Assessment Template for New Text"
OVERALL_NAME = "Overall Rating"
# A rubric's base_prompt may be the role text only (the preset's form): the seed's criteria
# line, example and item block follow it.
ROLE_TEXT, SEED_REST = BASE_PROMPT.split("\n\nThere are the criteria", 1)
SEED_REST = "There are the criteria" + SEED_REST


def output_names(rubric: Mapping[str, Any]) -> dict[str, str]:
    """criterion key -> the name used in the Output Format ("Overall Rating" for the overall one)."""
    return {c["key"]: (OVERALL_NAME if c.get("overall") else c["name"]) for c in judgeable(rubric)}


def criteria_section(rubric: Mapping[str, Any]) -> str:
    """Section 1.2 of the seed rebuilt from the rubric: one heading per criterion, its levels best first."""
    parts = []
    crits = [c for c in judgeable(rubric) if not c.get("overall")]
    for i, c in enumerate(crits, 1):
        desc = (c.get("description") or "").strip()
        head = f"#### {i}. {c['name']}" + (f" ({desc})" if desc else "")
        levels = sorted(c.get("levels") or [], key=lambda lv: -float(lv["value"]))
        lines = [f"- **{lv.get('label') or lv['value']} ({lv['value']})**: {(lv.get('description') or '').strip()}"
                 for lv in levels]
        parts.append(head + ("\n\n" + "\n".join(lines) if lines else ""))
    return "\n\n".join(parts)


def output_format(rubric: Mapping[str, Any]) -> str:
    names = output_names(rubric)
    scores = "\n".join(f"- **{n}**: score" for n in names.values())
    reasons = "\n".join(f"- **{n}**: justification" for n in names.values() if n != OVERALL_NAME)
    return f"**Output Format:**\n\n{scores}\n\n**Reasoning:**\n\n{reasons}"


def build(rubric: Mapping[str, Any], item: Mapping[str, Any], output: Mapping[str, Any] | int,
          overrides: Mapping[str, str] | None = None) -> Prompt:
    judge = rubric.get("judge") or {}
    tpl = template(overrides, "base_prompt", judge.get("base_prompt") or BASE_PROMPT)
    if not any(m in tpl for m in (CRITERIA_PLACEHOLDER, ITEM_MARKER, "{text}")):
        tpl = tpl.rstrip() + "\n\n" + SEED_REST
    tpl = tpl.replace(": " + CRITERIA_PLACEHOLDER, ":" + CRITERIA_PLACEHOLDER)
    tpl = tpl.replace(CRITERIA_PLACEHOLDER, "\n\n" + criteria_section(rubric))
    marker = ITEM_MARKER if ITEM_MARKER in tpl else "{text}"
    shared_tpl, item_tpl = split_at(tpl, marker)
    if not item_tpl:  # a template without the item placeholders: append the seed's block
        item_tpl = BASE_PROMPT[BASE_PROMPT.index(ITEM_MARKER):]
    fmt = template(overrides, "output_format", judge.get("output_format") or output_format(rubric))
    shared = shared_tpl.rstrip() + "\n\n" + fmt.strip()
    meta = metadata(item)
    item_text = render(item_tpl, text=output_of(item, output)["content"],
                       load_criteria=meta.get("criteria") or item.get("context") or "",
                       load_domain=meta.get("domain") or "")
    return make_prompt(shared, item_text, "criteria_block")
