"""Prompts keep the seeds' wording, put shared text first and the item last, and accept overrides."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import yaml

from judges.prompts import build_all_criteria, build_criterion, build_label, build_pairwise, build_subjudge
from judges.prompts.aqua_003 import aligned_text, apply_diff

REPO = Path(__file__).resolve().parents[2]


def preset(slug: str) -> dict:
    return yaml.safe_load((REPO / "rubrics" / "presets" / f"{slug}.yaml").read_text())


def demo(slug: str) -> list[dict]:
    return [json.loads(line) for line in (REPO / "annotation" / "demo" / f"{slug}.jsonl").read_text().splitlines()]


def common_prefix(a: str, b: str) -> int:
    return len(os.path.commonprefix([a, b]))


# ---------------------------------------------------------------- seed 000

def test_seed_000_prompt_has_the_base_prompt_criteria_example_and_format():
    r, items = preset("feedback-000"), demo("feedback-000")
    p = build_all_criteria(r, items[0], 0)
    text = p.text
    for sentence in [  # verbatim from seed 000 section 3.1
        "You are acting as a human evaluator whose responsibility is to assess the quality of AI-generated feedback provided to students.",
        "- **Precise** – Ground your reasoning in the actual wording of the feedback.",
        "There are the criteria with their assessment:",
        "#### 1. Correctness (Accuracy & Helpfulness)",
        "- **Excellent (5)**: All factual content is accurate and up-to-date.",
        "#### 6. Emotion (Emotional Intelligence & Sensitivity)",
        "#### Given Example:",
        "- **Emotion**: The tone conveys empathy and motivation, respecting the student's effort while inspiring them to improve further.",
        "**Output Format:**",
        "- **Overall Rating**: score",
        "- **Coherence**: justification",
        "#### Assessment Template for New Text",
    ]:
        assert sentence in text, sentence
    assert "Confidence" not in text  # the rater's confidence is not a judge criterion
    assert text.index("**Output Format:**") < text.index("#### Assessment Template for New Text")
    assert f"**Text:** {items[0]['outputs'][0]['content']}" in text
    assert "**Domain:** Psychology" in text.split("#### Assessment Template for New Text")[1]
    assert p.expects == "criteria_block"


# ---------------------------------------------------------------- seed 004

SEED_004_STRUCTURE = [
    "I will provide you with a pair of questions and answers, and you will evaluate the responses from the ***structural*** perspective according to the following scoring criteria:",
    "A score of 10 represents a rigorous structure, very clear hierarchy, and appropriate level of detail.",
    "A score of 0 represents a chaotic structure, lacking hierarchy, and inappropriate level of detail.",
    "You need to utilize your experience to consider how to score the response that best fits the criteria and descriptions.",
    "The scoring will range from 0 to 10, where a higher score indicates better performance.",
    "Please provide an initial line containing only a single value, representing the score awarded to the assistant's response.",
    "Below are examples of positive or negative scoring that I have provided for your reference:",
    'Please rate the response following "Assistant:" based on the given conversation context and according to the criteria provided above:',
]


def test_seed_004_dimension_prompt_with_positive_and_negative_examples():
    r, items = preset("fulltext-004"), demo("fulltext-004")
    p = build_criterion(r, "structure", items[0], 0)
    for sentence in SEED_004_STRUCTURE:
        assert sentence in p.text, sentence
    assert "Positive Example:\n\nHuman: " in p.text and "Negative Example:\n\nHuman: " in p.text
    assert "GPT-4 Response: 9\n" in p.text  # the example's judgement, score on its first line
    assert p.text.rstrip().endswith("Assistant: " + items[0]["outputs"][0]["content"].rstrip())
    assert "Logic" not in p.text and "***logic***" not in p.text  # one dimension per prompt
    assert p.expects == "first_line"


def test_seed_004_evidence_asks_for_json():
    r, items = preset("fulltext-004"), demo("fulltext-004")
    p = build_criterion(r, "evidence", items[0], 0)
    assert "I want you to serve as an expert in news commentary writing" in p.text
    assert 'The output template is: {"score":"xx","reason":"xx"}' in p.text
    assert "provide a score between 0 and 10" in p.text
    assert f"Title: {items[0]['context']}" in p.text
    assert p.text.index("JSON format") < p.text.index("Title: ")
    assert p.expects == "json_score"
    assert build_criterion(r, "evidence", items[0], 0, output_format="first_line").expects == "first_line"


# ---------------------------------------------------------------- seed 003

def test_seed_003_label_prompt():
    r, items = preset("aqua-003"), demo("aqua-003")
    p = build_label(r, items[0], 0)
    for label_line in ["- TP: Edit fixes a real error; relative improvement even if other errors remain.",
                       "- FP3: Optional/preferential; correct→correct or style-only.",
                       "- FP2: Introduces a grammatical/punctuation error or minor meaning change.",
                       "- FP1: Major meaning change, high sensitivity, or nonsensical output."]:
        assert label_line in p.text
    assert '{"label": "TP|FP3|FP2|FP1"' in p.text and "strict JSON" in p.text
    assert "Source: She go to school every day by bus." in p.text
    assert "Aligned: She {go=>goes} to school every day by bus ." in p.text
    assert "Edit: go → goes" in p.text
    for kind, key in (("meaning", '"meaning"'), ("reward", '"reward"'), ("pair", '"target_correct"')):
        assert key in build_subjudge(kind, items[0], 0).text


def test_diff_markup_and_alignment():
    assert apply_diff("She [-go-]{+goes+} home.", "old") == "She go home."
    assert apply_diff("She [-go-]{+goes+} home.", "new") == "She goes home."
    assert aligned_text("I has a cat", "I have a cat") == "I {has=>have} a cat"
    item = {"id": "x", "context": "ignored", "outputs": [{"content": "We [-is-]{+are+} here.", "kind": "diff"}]}
    assert "Source: We is here." in build_label({"criteria": []}, item, 0).text


# ---------------------------------------------------------------- shared prefix first

@pytest.mark.parametrize("slug,build", [
    ("feedback-000", lambda r, it: build_all_criteria(r, it, 0)),
    ("fulltext-004", lambda r, it: build_criterion(r, "logic", it, 0)),
    ("fulltext-004", lambda r, it: build_criterion(r, "evidence", it, 0)),
    ("aqua-003", lambda r, it: build_label(r, it, 0)),
    ("rrgen-001", lambda r, it: build_all_criteria(r, it, 0)),
    ("rrgen-001", lambda r, it: build_criterion(r, "fluency", it, 0)),
    ("codegen-002", lambda r, it: build_all_criteria(r, it, 0)),
    ("rrgen-001", lambda r, it: build_pairwise(r, it, 0, 1, "fluency")),
])
def test_two_items_share_the_whole_rubric_prefix(slug, build):
    r, items = preset(slug), demo(slug)
    p1, p2 = build(r, items[0]), build(r, items[1])
    assert p1.shared_prefix == p2.shared_prefix
    assert p1.text.startswith(p1.shared_prefix) and p2.text.startswith(p2.shared_prefix)
    assert common_prefix(p1.text, p2.text) >= len(p1.shared_prefix)
    assert items[0]["outputs"][0]["content"][:60] not in p1.shared_prefix
    # every judged criterion's text is in the shared part
    for c in r["criteria"]:
        # (seed 000's prompt carries the six criteria of its section 1.2, not the overall scale)
        if c["kind"] in ("likert", "numeric") and p1.criterion in (None, c["key"]) and not c.get("overall"):
            for lv in c.get("levels") or []:
                if lv.get("description"):
                    assert lv["description"].strip()[:40] in p1.shared_prefix


# ---------------------------------------------------------------- generic rubric, overrides, pairwise

RUBRIC = {
    "slug": "t", "name": "Test rubric", "description": "d", "instructions": "Be fair.",
    "criteria": [
        {"key": "helpful", "name": "Helpfulness", "kind": "likert", "min": 1, "max": 5,
         "levels": [{"value": 1, "label": "Bad", "description": "useless"},
                    {"value": 5, "label": "Great", "description": "solves it"}], "hint": "Use 3 sparingly."},
        {"key": "ok", "name": "Acceptable", "kind": "binary",
         "choices": [{"value": "ACCEPT", "description": "usable"}, {"value": "REJECT", "description": "not usable"}]},
        {"key": "notes", "name": "Notes", "kind": "text"},
    ],
}
ITEM = {"id": "i1", "context": "What is 2+2?", "outputs": [{"content": "4"}, {"content": "five"}]}


def test_generic_all_criteria_lists_every_judgeable_criterion_and_schema():
    p = build_all_criteria(RUBRIC, ITEM, 0)
    assert "- 5 (Great): solves it" in p.text and "- ACCEPT: usable" in p.text and "Use 3 sparingly." in p.text
    assert '"helpful": <integer from 1 to 5>' in p.text and '"ok": "<one of ACCEPT|REJECT>"' in p.text
    assert "Notes" not in p.text
    assert p.text.endswith("## Response to evaluate\n4\n")


def test_overrides_replace_named_pieces():
    p = build_all_criteria(RUBRIC, ITEM, 1, overrides={"item": "Q: $context\nA: {output}", "role": "You grade."})
    assert p.text.startswith("You grade.") and p.text.endswith("Q: What is 2+2?\nA: five\n")
    p = build_criterion(RUBRIC, "helpful", ITEM, 0, overrides={"answer_first_line": "Score $lo..$hi first."})
    assert "Score 1..5 first." in p.text


def test_templates_leave_other_braces_and_dollars_alone():
    item = {"id": "c", "context": "Write JS", "outputs": [{"content": "const s = `${d.close} {output} $context`;"}]}
    p = build_all_criteria(RUBRIC, item, 0)
    assert "const s = `${d.close} {output} $context`;" in p.text


def test_pairwise_prompt_orders_a_then_b():
    ab = build_pairwise(RUBRIC, ITEM, 0, 1, "helpful")
    ba = build_pairwise(RUBRIC, ITEM, 1, 0, "helpful")
    assert ab.text.index("## Response A\n4") < ab.text.index("## Response B\nfive")
    assert "## Response A\nfive" in ba.text and "[[A]]" in ab.shared_prefix
