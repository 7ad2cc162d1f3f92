"""The seed presets say what the seed protocols say, and the demo items fit them.

The seed protocols are kept verbatim in docs/seeds/; texts are compared with them
directly, so a preset that drifts from its seed fails here.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from rubrics.loader import load_preset

REPO = Path(__file__).resolve().parents[2]
SEEDS = REPO / "docs" / "seeds"
DEMO = REPO / "annotation" / "demo"


def seed(number: str) -> str:
    (path,) = SEEDS.glob(f"{number}_*.txt")
    return path.read_text(encoding="utf-8")


def squash(text: str) -> str:
    """Whitespace-insensitive form, for seeds whose HTML wraps sentences across lines."""
    return " ".join(text.split())


def by_key(rubric: dict) -> dict[str, dict]:
    return {c["key"]: c for c in rubric["criteria"]}


# ---------------------------------------------------------------- seed 000


FEEDBACK_CRITERIA = ["Correctness", "Clarity", "Tone", "Actionability", "Coherence", "Emotion"]
FEEDBACK_LABELS = {1: "Unacceptable", 2: "Poor", 3: "Average", 4: "Good", 5: "Excellent"}


def test_feedback_has_six_criteria_with_the_seeds_level_texts():
    text, rubric = seed("000"), load_preset("feedback-000")
    scored = [c for c in rubric["criteria"] if not c["overall"] and c["kind"] == "likert"]
    assert [c["name"] for c in scored] == FEEDBACK_CRITERIA
    sections = re.split(r"^#### \d\. ", text, flags=re.M)[1:]
    for criterion, section in zip(scored, sections):
        assert section.startswith(f"{criterion['name']} ({criterion['description']})\n")
        assert f"**{criterion['name']}** – {criterion['hint']}" in text  # the Step 2 question
        assert (criterion["min"], criterion["max"]) == (1, 5)
        assert len(criterion["levels"]) == 5
        for level in criterion["levels"]:
            assert level["label"] == FEEDBACK_LABELS[level["value"]]
            line = f"- **{level['label']} ({level['value']})**: {level['description']}"
            assert line in section.splitlines(), line
        assert criterion["reasoning"] == "required"  # "provide qualitative comments on each criterion"


def test_feedback_overall_rating_and_confidence():
    text, crit = seed("000"), by_key(load_preset("feedback-000"))
    overall = crit["overall"]
    assert overall["overall"] is True
    assert [lv["label"] for lv in overall["levels"]] == ["Unacceptable", "Poor", "Fair/Adequate", "Good", "Excellent"]
    for level in overall["levels"]:
        first, *indicators = level["description"].split("\n")
        row = next(r for r in text.splitlines() if r.startswith(f"| {level['value']} | {level['label']} |"))
        assert f"| {first} |" in row
        assert row.count("- ") == len(indicators) == 3
        assert all(i in row for i in indicators)
    confidence = crit["confidence"]
    assert confidence["kind"] == "confidence"
    assert (confidence["min"], confidence["max"]) == (0, 100)  # a percentage, the seed's "e.g., 80–100%"
    assert confidence["levels"] == []  # no bands the seed does not define


def test_feedback_judge_prompt_is_the_seeds():
    text, judge = seed("000"), load_preset("feedback-000")["judge"]
    assert judge["style"] == "feedback_000"
    seed_lines = {line.rstrip() for line in text.splitlines()}
    for part in ("base_prompt", "output_format"):
        for line in judge[part].splitlines():
            assert line in seed_lines, (part, line)
    # the judges app appends the criteria, the example and the item itself
    assert judge["base_prompt"].startswith("You are acting as a human evaluator")
    assert judge["base_prompt"].rstrip().endswith("impact on student learning.")
    assert judge["output_format"].startswith("**Output Format:**")
    assert "- **Overall Rating**: score" in judge["output_format"]
    assert judge["output_format"].rstrip().endswith("- **Emotion**: justification")


# ---------------------------------------------------------------- seed 001


RRGEN_LABELS = ["Not at all", "Slightly", "More than slightly", "Partially",
                "More than partially", "Almost completely", "Completely"]


def test_rrgen_four_likert_criteria_one_to_seven():
    text, rubric = squash(seed("001")), load_preset("rrgen-001")
    likert = [c for c in rubric["criteria"] if c["kind"] == "likert"]
    assert [c["key"] for c in likert] == ["semantic_relevance", "fluency", "sentiment_appropriateness",
                                          "domain_accuracy"]
    for c in likert:
        assert (c["min"], c["max"]) == (1, 7)
        assert [lv["label"] for lv in c["levels"]] == RRGEN_LABELS
        assert [lv["value"] for lv in c["levels"]] == list(range(1, 8))
        assert all(f"{lv['value']} = {lv['label']}" in text for lv in c["levels"])
        assert c["sparing_values"] == [3, 5]
        assert c["hint"] in text
        assert f"<strong>{c['name'].upper()}</strong>: {c['description']}" in text


def test_rrgen_accept_reject_highlights_and_ignore():
    text, rubric = squash(seed("001")), load_preset("rrgen-001")
    crit = by_key(rubric)
    decision = crit["decision"]
    assert decision["kind"] == "binary"
    assert [ch["value"] for ch in decision["choices"]] == ["ACCEPT", "REJECT"]
    spans = crit["highlights"]
    assert (spans["kind"], spans["target"], spans["required"]) == ("spans", "output", False)
    options = rubric["item_options"]
    assert options["allow_ignore"] is True and len(options["ignore_reasons"]) == 2
    assert "should be ignored completely" in text
    assert "3 and 5 are reserved for difficult/borderline cases" in rubric["instructions"]
    assert "randomised and shown in succession" in rubric["instructions"]


# ---------------------------------------------------------------- seed 002


def test_codegen_groups_aspects_and_scale():
    text, rubric = seed("002"), load_preset("codegen-002")
    crit = by_key(rubric)
    assert {g["key"]: g["weight"] for g in rubric["groups"]} == {"technical": 0.5, "aesthetic": 0.5}
    for key, group, column in (("technical_quality", "technical", 0), ("aesthetic_quality", "aesthetic", 1)):
        c = crit[key]
        assert c["group"] == group and (c["min"], c["max"]) == (1, 5)
        assert len(c["aspects"]) == 4
        assert all(f"- **{a['name']}**: {a['description']}" in text for a in c["aspects"])
        for level in c["levels"]:
            row = next(r for r in text.splitlines() if r.startswith(f"| {level['value']} | "))
            cell = [x.strip() for x in row.strip("|").split("|")][1 + column]
            assert cell == f"{level['label']}: {level['description']}"


@pytest.mark.parametrize("technical, aesthetic, overall", [(5.0, 4.8, 4.9), (3.2, 2.8, 3.0)])
def test_codegen_group_weights_reproduce_the_seeds_overall(technical, aesthetic, overall):
    # the seed's dataset example: chosen 5.0/4.8 -> 4.9, rejected 3.2/2.8 -> 3.0
    groups = {g["key"]: g["weight"] for g in load_preset("codegen-002")["groups"]}
    weighted = (groups["technical"] * technical + groups["aesthetic"] * aesthetic) / sum(groups.values())
    assert weighted == pytest.approx(overall)


# ---------------------------------------------------------------- seed 003


def test_aqua_label_taxonomy():
    text, rubric = seed("003"), load_preset("aqua-003")
    (label,) = rubric["criteria"]
    assert label["kind"] == "choice"
    assert [ch["value"] for ch in label["choices"]] == ["TP", "FP3", "FP2", "FP1"]
    for ch in label["choices"]:
        assert f"- {ch['value']}: {ch['description']}" in text
    assert rubric["judge"]["style"] == "aqua_003"


# ---------------------------------------------------------------- seed 004


def test_fulltext_five_dimensions_with_seed_anchors():
    text, rubric = seed("004"), load_preset("fulltext-004")
    assert [c["name"] for c in rubric["criteria"]] == ["Structure", "Logic", "Argument", "Evidence", "Language"]
    sections = re.split(r"^## ", text, flags=re.M)[1:]
    for c, section in zip(rubric["criteria"], sections):
        assert section.startswith(c["name"])
        assert (c["min"], c["max"]) == (0, 10)
        assert [lv["value"] for lv in c["levels"]] == [0, 4, 6, 8, 10]
        lines = section.splitlines()
        # descriptions continue the seed's sentence "A score of N <description>"
        assert all(f"A score of {lv['value']} {lv['description']}" in lines for lv in c["levels"])
    assert rubric["judge"]["style"] == "fulltext_004"


def test_fulltext_few_shot_fills_the_seeds_one_negative_example_slot():
    # The seed has one "Negative Example:" per first-line dimension and no examples for Evidence.
    rubric = load_preset("fulltext-004")
    few_shot = rubric["judge"]["few_shot"]
    assert set(few_shot) == {"structure", "logic", "argument", "language"}
    for key, examples in few_shot.items():
        assert [e["kind"] for e in examples] == ["negative"]
        first, rest = examples[0]["judgement"].split("\n", 1)  # "an initial line containing only a single value"
        assert 0 <= int(first) <= 4
        assert len(rest.split()) > 30


# ---------------------------------------------------------------- demo items


OUTPUT_KINDS = {"text", "markdown", "code", "html", "diff", "conversation"}


def demo_items(slug: str) -> list[dict]:
    lines = (DEMO / f"{slug}.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


@pytest.mark.parametrize("slug", ["feedback-000", "rrgen-001", "codegen-002", "aqua-003", "fulltext-004"])
def test_demo_items_have_the_required_fields(slug):
    items = demo_items(slug)
    assert 4 <= len(items) <= 6
    assert len({it["id"] for it in items}) == len(items)
    keys = set(by_key(load_preset(slug)))
    for it in items:
        assert isinstance(it["id"], str) and it["id"]
        assert isinstance(it["context"], str) and it["context"].strip()
        assert it.get("context_kind", "text") in {"text", "markdown"}
        assert it["outputs"]
        for out in it["outputs"]:
            assert out["system"] and out["content"].strip() and out["kind"] in OUTPUT_KINDS
        assert len({o["system"] for o in it["outputs"]}) == len(it["outputs"])
        assert set(it.get("gold", {})) <= keys


def test_rrgen_demo_three_responses_and_one_unsuitable_review():
    items = demo_items("rrgen-001")
    assert all(len(it["outputs"]) == 3 for it in items)
    assert {it["metadata"]["domain"] for it in items} == {"hotel", "restaurant"}
    assert sum("ignore" in it["metadata"].get("note", "") for it in items) == 1


def test_codegen_demo_html_pages_are_complete_and_offline():
    outputs = [o for it in demo_items("codegen-002") for o in it["outputs"]]
    html = [o["content"] for o in outputs if o["kind"] == "html"]
    assert len(html) >= 2 and any(o["kind"] == "code" for o in outputs)
    for page in html:
        assert page.lstrip().lower().startswith(("<!doctype html", "<html")) and "</html>" in page
        assert "<svg" in page
        assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", page)  # nothing fetched from outside


def test_aqua_demo_diffs_apply_to_the_source():
    choices = {ch["value"] for ch in load_preset("aqua-003")["criteria"][0]["choices"]}
    items = demo_items("aqua-003")
    assert {it["gold"]["label"] for it in items} == choices  # every class is represented
    for it in items:
        (out,) = it["outputs"]
        assert out["kind"] == "diff"
        diff = out["content"]
        assert len(re.findall(r"\[-.*?-\]|\{\+.*?\+\}", diff)) in (1, 2)  # one edit: delete and/or insert
        source = re.sub(r"\{\+.*?\+\}", "", re.sub(r"\[-(.*?)-\]", r"\1", diff))
        target = re.sub(r"\[-.*?-\]", "", re.sub(r"\{\+(.*?)\+\}", r"\1", diff))
        assert source == it["context"] == it["metadata"]["source"]
        assert target == it["metadata"]["target"] != source


def test_fulltext_demo_long_form_answers():
    for it in demo_items("fulltext-004"):
        assert len(it["outputs"]) == 2
        assert max(len(o["content"].split()) for o in it["outputs"]) >= 200


@pytest.mark.parametrize("slug", ["feedback-000", "rrgen-001", "codegen-002", "aqua-003", "fulltext-004"])
def test_demo_items_pass_the_item_importer(slug):
    from annotation.importers import parse_items  # pure code: the same check an upload gets

    path = DEMO / f"{slug}.jsonl"
    keys = set(by_key(load_preset(slug)))
    items = parse_items(path.read_text(encoding="utf-8"), filename=path.name, criteria_keys=keys)
    assert len(items) == len(demo_items(slug))
