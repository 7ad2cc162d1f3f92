"""Prompts keep the seeds' wording, put shared text first and the item last, and accept overrides."""
from __future__ import annotations

import json
import os
import re
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


# ---------------------------------------------------------------- seed texts

SEEDS = REPO / "docs" / "seeds"


def seed_text(prefix: str) -> str:
    return next(SEEDS.glob(f"{prefix}_*.txt")).read_text(encoding="utf-8")


def squash(text: str) -> str:
    """Compare texts as a reader sees them: no trailing spaces (markdown hard breaks), one blank line at most."""
    lines = [line.rstrip() for line in text.strip().splitlines()]
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines))


def fill(text: str, *pairs: tuple[str, str]) -> str:
    """Replace each placeholder's next occurrence, in order."""
    for placeholder, value in pairs:
        assert placeholder in text, placeholder
        text = text.replace(placeholder, value, 1)
    return text


# ---------------------------------------------------------------- seed 000

def seed_000_prompt_section() -> str:
    text = seed_text("000")
    return text[text.index("You are acting as a human evaluator"):text.index("### 3.1.a Using ChatGPT")]


def seed_000_criteria_section() -> str:
    text = seed_text("000")
    return text[text.index("#### 1. Correctness"):text.index("## 2. Human Rating")]


def test_seed_000_prompt_is_the_seeds_section_3_1_word_for_word():
    r, items = preset("feedback-000"), demo("feedback-000")
    item = {**items[0], "metadata": {"criteria": "Criterion: c2 Evidence", "domain": "Biology"}}
    p = build_all_criteria(r, item, 0)
    expected = fill(seed_000_prompt_section(),
                    (": criteria (given in section 1.2)", ":\n\n" + seed_000_criteria_section()),
                    ("{text}", item["outputs"][0]["content"]), ("{load_criteria}", "Criterion: c2 Evidence"),
                    ("{load_domain}", "Biology"))
    assert squash(p.text) == squash(expected)
    assert p.expects == "criteria_block"


def test_seed_000_output_format_follows_the_item_and_the_rest_is_shared():
    r, items = preset("feedback-000"), demo("feedback-000")
    p = build_all_criteria(r, items[0], 0)
    text = p.text
    assert text.index("#### Assessment Template for New Text") < text.index("**Output Format:**")
    assert p.shared_prefix.rstrip().endswith("inspiring them to improve further.")
    assert "Confidence" not in text  # the rater's confidence is not a judge criterion


def test_seed_000_confidence_is_the_seeds_percentage_without_bands():
    c = next(c for c in preset("feedback-000")["criteria"] if c["key"] == "confidence")
    assert (c["kind"], c.get("min"), c.get("max")) == ("confidence", 0, 100)
    assert not c.get("levels")  # the seed gives a percentage ("e.g., 80–100%"), no bands
    assert "Indicate your confidence level (e.g., 80–100%)" in seed_text("000")
    assert c["description"].startswith("Indicate your confidence level (e.g., 80–100%)")


# ---------------------------------------------------------------- seed 004

def seed_004_section(name: str) -> str:
    part = seed_text("004").split(f"\n## {name}\n", 1)[1].split("\n## ", 1)[0]
    return "\n".join(line for line in part.splitlines() if line.strip() != "<br>")


FIRST_LINE_DIMENSIONS = [("structure", "Structure"), ("logic", "Logic"), ("argument", "Argument"),
                         ("language", "Language")]


@pytest.mark.parametrize("key,name", FIRST_LINE_DIMENSIONS)
def test_seed_004_first_line_dimensions_are_the_seeds_prompt_word_for_word(key, name):
    r, items = preset("fulltext-004"), demo("fulltext-004")
    shot = r["judge"]["few_shot"][key][0]
    assert shot["kind"] == "negative"  # the seed's one example slot is a "Negative Example"
    p = build_criterion(r, key, items[0], 0)
    expected = fill(seed_004_section(name),
                    ("*{**Instruction**}*", shot["instruction"]), ("*{**Model response**}*", shot["response"]),
                    ("*{**Example scoring response**}*", shot["judgement"]),
                    ("*{**Instruction**}*", items[0]["context"]),
                    ("*{**Model response**}*", items[0]["outputs"][0]["content"]))
    assert squash(p.text) == squash(expected)
    assert p.expects == "first_line"
    assert "Positive Example" not in p.text


def test_seed_004_evidence_is_the_seeds_json_prompt_word_for_word():
    r, items = preset("fulltext-004"), demo("fulltext-004")
    p = build_criterion(r, "evidence", items[0], 0)
    expected = fill(seed_004_section("Evidence"), ("*{**Prompt**}*", items[0]["context"]),
                    ("*{**Model answer**}*", items[0]["outputs"][0]["content"]))
    assert squash(p.text) == squash(expected)
    assert 'The output template is: {"score\\":"xx\\","reason\\":"xx\\"}' in p.text  # as the seed prints it
    assert "Example" not in p.text  # the seed gives Evidence no examples
    assert p.shared_prefix.rstrip().endswith("best fits the criteria and descriptions.")
    assert p.expects == "json_score"
    assert build_criterion(r, "evidence", items[0], 0, output_format="first_line").expects == "first_line"


def test_seed_004_without_a_negative_example_shows_no_example_slot():
    r, items = preset("fulltext-004"), demo("fulltext-004")
    r["judge"]["few_shot"] = {"logic": [{"kind": "positive", "instruction": "i", "response": "r", "judgement": "9"}]}
    p = build_criterion(r, "logic", items[0], 0)
    assert "Example" not in p.text and "Below are examples" not in p.text
    assert "Where the input \\n represents a line break." in p.text


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
