"""Parsing real-looking judge answers: each verdict is read from where the output format puts it,
and nowhere else; echoes, negations and conflicts are unparsed, never a number."""
from __future__ import annotations

import math

import pytest

from judges.parsing import (
    expected_score, extract_json_objects, parse_bool_field, parse_criteria_block, parse_int_field, parse_json_scores,
    parse_label, parse_pairwise, parse_score,
)


def unparsed(r, why: str = "") -> bool:
    return r.value is None and r.status == "unparsed" and why in (r.detail or "")


# ---------------------------------------------------------------- seed 004: first line

FIRST_LINE = [
    ("8\nThe response has a reasonable structure with a clear hierarchy.", 8),
    ("**7**\n\nThe logic is smooth but lacks depth.", 7),
    ("9.\nVery fluent.", 9),
    ("Score: 6\nbasic clarity", 6),
    ("7/10\nsmooth", 7),
    ("<think>maybe 2? or 9</think>\n5\nsolid", 5),
    # numbers in the explanation never move the first line's score
    ("8\nA score of 10 represents a rigorous structure; this has 2 minor gaps. Final score: 3", 8),
    ("8 – a reasonable structure with a clear hierarchy\nMore detail follows.", 8),  # a comment set off by a dash
    ("```\n6\n```\nBasic reasoning.", 6),
]


@pytest.mark.parametrize("text,expected", FIRST_LINE)
def test_first_line_score(text, expected):
    r = parse_score(text, 0, 10, fmt="first_line")
    assert (r.status, r.value) == ("ok", expected)
    assert r.raw == text


@pytest.mark.parametrize("text,why", [
    ("", "empty"),
    ("The response is good but could use more examples.\n8", "first line is not a single score"),
    # quoting an anchor of the scale is not a score
    ("A score of 10 means rigorous structure, and this answer is close to it.", "first line is not a single score"),
    ("A score of 8 indicates a reasonable structure.\nI agree with that here.", "first line is not a single score"),
    ("score\nThe structure is clear.", "template echoed"),
    ("12\nexcellent", "out of range"),  # never clipped to the maximum
    ("4/5\ngood", "out of 5"),  # wrong denominator for a 0-10 scale
    ("2 minor slips, otherwise a rigorous structure\n8", "first line is not a single score"),
    ("8-bit style headings\n8", "first line is not a single score"),
    ("6.5\nbetween two anchors", "out of range"),  # integer scale
    ('{"score": 7, "reason": "json where a first line was asked"}', "first line is not a single score"),
    ("<think>The score is 7", "empty"),  # unfinished reasoning: nothing after it
])
def test_first_line_unparsed(text, why):
    r = parse_score(text, 0, 10, fmt="first_line")
    assert unparsed(r, why), r
    assert r.raw == text


def test_refusal_is_its_own_status():
    for text in ("I'm sorry, but I cannot evaluate this content.", "I can't help with rating this response."):
        r = parse_score(text, 0, 10)
        assert r.value is None and r.status == "refusal"


def test_likert_scale_and_allowed_values():
    assert parse_score("0\nterrible", 1, 5).value is None  # below the scale, never a 'minimum'
    assert parse_score("5\nfine", 1, 5, allowed=[1, 3, 5]).value == 5
    assert parse_score("4\nfine", 1, 5, allowed=[1, 3, 5]).status == "unparsed"


# ---------------------------------------------------------------- seed 004: JSON {"score", "reason"}

JSON_SCORES = [
    ('{"score":"6","reason":"Over half of the sub-points lack evidence."}', 6),
    ('```json\n{"score": 4, "reason": "Mostly empty talk."}\n```\nI hope this helps!', 4),
    ("{'score': '10', 'reason': 'abundant evidence'}", 10),
    ("{'score': 3, 'reason': 'it's thin'}", 3),  # unescaped quote inside single quotes
    # the seed's own template is printed with escaped quotes; a judge copying that style is read
    ('{"score\\":"6\\","reason\\":"Over half of the sub-points lack evidence.\\"}', 6),
    ('{"score\\":"6\\","reason\\":"…\\"}', 6),
    # an echoed output template is skipped; the judge's own object wins
    ('The template is {"score":"xx","reason":"xx"}.\n{"score": "5", "reason": "average"}', 5),
    # the same value twice is one value
    ('{"score": 7, "reason": "a"}\nTo repeat: {"score": "7"}', 7),
    # numbers in the reason never count
    ('{"score": 8, "reason": "A score of 10 would need 2023 data; 3 sub-points are weak."}', 8),
    ('{"score": "8 out of 10", "reason": "x"}', 8),
]


@pytest.mark.parametrize("text,expected", JSON_SCORES)
def test_json_score(text, expected):
    r = parse_score(text, 0, 10, fmt="json")
    assert (r.status, r.value) == ("ok", expected), r


def test_json_score_reason_is_kept():
    r = parse_score('{"score\\":"6\\","reason\\":"Thin evidence.\\"}', 0, 10, fmt="json")
    assert r.reasoning == "Thin evidence."


@pytest.mark.parametrize("text,why", [
    ('{"score":"xx","reason":"xx"}', "template echoed"),
    ('{"score\\":"xx\\","reason\\":"xx\\"}', "template echoed"),
    ('{"score": "score", "reason": "x"}', "template echoed"),
    ('{"score": 7, "reason": "a"}\n{"score": 8, "reason": "b"}', "two different values"),
    ('{"score": -1, "reason": "x"}', "out of range"),
    ("Score: 6. The evidence is thin.", "no JSON field 'score'"),  # not where the format puts it
    ('{"score": "not 6", "reason": "x"}', "negated"),
])
def test_json_score_unparsed(text, why):
    assert unparsed(parse_score(text, 0, 10, fmt="json"), why)


def test_unknown_score_format_is_an_error():
    with pytest.raises(ValueError, match="first_line, json"):
        parse_score("5", 0, 10, fmt="xml")


# ---------------------------------------------------------------- seed 000: score lines

SEED_000_ANSWER = """**Output:**

- **Correctness**: 4
- **Clarity**: 5
- **Tone**: 4
- **Actionability**: 3
- **Coherence**: 4
- **Emotion**: 5
- **Overall Rating**: 4

**Reasoning:**

- **Correctness**: The feedback is accurate; it names Bandura's mechanisms (2 of 4 are explained).
- **Clarity**: Clear and concise.
- **Tone**: Supportive.
- **Actionability**: Next steps are general.
- **Coherence**: Flows well.
- **Emotion**: Encouraging.
"""

NAMES = {"correctness": "Correctness", "clarity": "Clarity", "tone": "Tone", "actionability": "Actionability",
         "coherence": "Coherence", "emotion": "Emotion", "overall": "Overall Rating"}
EXPECTED_000 = {"correctness": 4, "clarity": 5, "tone": 4, "actionability": 3, "coherence": 4, "emotion": 5,
                "overall": 4}


def values(results):
    return {k: v.value for k, v in results.items()}


def test_seed_000_block():
    r = parse_criteria_block(SEED_000_ANSWER, NAMES, 1, 5)
    assert values(r) == EXPECTED_000
    assert r["clarity"].reasoning == "Clear and concise."
    assert r["actionability"].reasoning == "Next steps are general."


def test_seed_000_reasoning_line_starting_with_a_number_does_not_override_the_score_line():
    text = SEED_000_ANSWER.replace("- **Correctness**: The feedback is accurate; it names Bandura's mechanisms "
                                   "(2 of 4 are explained).", "- **Correctness**: 2 minor slips, otherwise accurate.")
    assert "2 minor slips" in text
    r = parse_criteria_block(text, NAMES, 1, 5)
    assert values(r) == EXPECTED_000
    assert r["correctness"].reasoning == "2 minor slips, otherwise accurate."


def test_seed_000_reasoning_that_mentions_a_year_leaves_the_score_alone():
    text = SEED_000_ANSWER.replace("- **Actionability**: Next steps are general.",
                                   "- **Actionability**: 2023 research is suggested as a next step.")
    assert values(parse_criteria_block(text, NAMES, 1, 5)) == EXPECTED_000


def test_seed_000_without_a_reasoning_heading_prose_on_a_name_line_is_not_a_score():
    text = "- **Correctness**: 5\n- **Correctness**: 2 minor slips in the dates\n- **Clarity**: 2023 is cited\n"
    r = parse_criteria_block(text, {"correctness": "Correctness", "clarity": "Clarity"}, 1, 5)
    assert r["correctness"].value == 5
    assert unparsed(r["clarity"], "no score line")


def test_seed_000_template_echo_two_values_and_out_of_range():
    text = ("**Output Format:**\n- **Correctness**: score\n- **Clarity**: score\n- **Tone**: score\n\n"
            "- **Correctness**: 6\n- **Clarity**: 3/5\n- **Emotion**: 4\n- **Emotion**: 2\n")
    names = {"correctness": "Correctness", "clarity": "Clarity", "tone": "Tone", "emotion": "Emotion",
             "coherence": "Coherence"}
    r = parse_criteria_block(text, names, 1, 5)
    assert unparsed(r["correctness"], "out of range")
    assert r["clarity"].value == 3
    assert unparsed(r["tone"], "template echoed")
    assert unparsed(r["emotion"], "two different values (4, 2)")
    assert unparsed(r["coherence"], "no score line")


def test_seed_000_score_line_with_a_comment_after_a_dash():
    r = parse_criteria_block("- **Tone**: 4 – warm and encouraging\n- **Clarity**: 3 (Average) - some jargon", NAMES, 1, 5)
    assert (r["tone"].value, r["clarity"].value) == (4, 3)


def test_seed_000_markup_variants():
    r = parse_criteria_block("1. **Tone:** 2\n**Overall Rating** - 5\nClarity: **4** (Good)\n### Emotion: 3", NAMES, 1, 5)
    assert (r["tone"].value, r["overall"].value, r["clarity"].value, r["emotion"].value) == (2, 5, 4, 3)


def test_seed_000_scores_under_an_output_heading_after_the_reasoning():
    text = "**Reasoning:**\n- **Tone**: 3 strong points.\n\n**Output:**\n- **Tone**: 4\n"
    assert parse_criteria_block(text, {"tone": "Tone"}, 1, 5)["tone"].value == 4


def test_seed_000_json_is_not_the_seeds_format():
    r = parse_criteria_block('{"Correctness": 2}', {"correctness": "Correctness"}, 1, 5)
    assert unparsed(r["correctness"])


# ---------------------------------------------------------------- labels

LABELS = ["TP", "FP3", "FP2", "FP1"]


@pytest.mark.parametrize("text,expected", [
    ('{"label": "TP", "reason": "Fixes subject-verb agreement."}', "TP"),
    ('```json\n{"label": "FP2", "reason": "introduces an article error"}\n```', "FP2"),
    ("{'label': 'FP3', 'reason': 'style only'}", "FP3"),
    ('This is not a TP: the source was already correct.\n{"label": "FP3", "reason": "style"}', "FP3"),
    ('{"label": "tp"}', "TP"),
    ('{"label": "**FP1**."}', "FP1"),
    ('{"label": "FP3 (style only)"}', "FP3"),
    ('{"label": "TP – fixes the agreement error"}', "TP"),
])
def test_labels(text, expected):
    r = parse_label(text, LABELS)
    assert (r.status, r.value) == ("ok", expected)


@pytest.mark.parametrize("text,labels,why", [
    ('{"label": "not TP", "reason": "x"}', LABELS, "negated"),
    ("The edit is not TP.", LABELS, "no JSON field 'label'"),
    ("Label: FP3", LABELS, "no JSON field 'label'"),  # not the strict JSON the prompt asks for
    ('{"label": "TP|FP3|FP2|FP1", "reason": "<one sentence>"}', LABELS, "template echoed"),
    ('{"label": "FP4"}', LABELS, "not one of"),
    ('{"label": "not TP (the source was correct)"}', LABELS, "negated"),
    ('{"label": "TPX (typo)"}', LABELS, "not one of"),
    ('{"label": "TP"} or maybe {"label": "FP3"}', LABELS, "two different values"),
    ('{"label": "I would not accept it"}', ["ACCEPT", "REJECT"], "negated"),
    ("I would not accept it.", ["ACCEPT", "REJECT"], "no JSON field"),
    ('{"label": "<one of Yes|No>"}', ["Yes", "No"], "template echoed"),
])
def test_labels_unparsed(text, labels, why):
    assert unparsed(parse_label(text, labels), why)


def test_label_refusal():
    r = parse_label("I'm sorry, but I can't assist with that.", LABELS)
    assert r.value is None and r.status == "refusal"


# ---------------------------------------------------------------- pairwise

@pytest.mark.parametrize("text,expected", [
    ("Response A is more specific. [[A]]", "A"),
    ("Both are similar. [[C]]", "tie"),
    ("Response B cites the source [[B]], and again: [[B]]", "B"),
    ("There is no doubt: [[A]]", "A"),
])
def test_pairwise(text, expected):
    assert parse_pairwise(text).value == expected


@pytest.mark.parametrize("text,why", [
    ("Both responses have merits.", "no [[A]]/[[B]] verdict"),
    ("At first [[A]] seemed right, but on reflection [[B]]", "two different values"),
    ('Output "[[A]]" if response A is better, "[[B]]" if response B is better, "[[C]]" for a tie.',
     "two different values"),
    ("It is certainly not [[A]].", "negated"),
    ("I wouldn't pick [[B]] here.", "negated"),
    ('{"winner": "B"}', "no [[A]]/[[B]] verdict"),
])
def test_pairwise_unparsed(text, why):
    assert unparsed(parse_pairwise(text), why)


def test_pairwise_tie_only_when_allowed():
    assert parse_pairwise("[[C]]", allow_tie=False).value is None


# ---------------------------------------------------------------- sub-judge fields (seed 003 modular)

def test_subjudge_fields():
    t = '{"meaning": 3, "reward": -2, "source_correct": "false", "target_correct": true}'
    assert parse_int_field(t, "meaning", 0, 4).value == 3
    assert parse_int_field(t, "reward", -3, 3).value == -2
    assert parse_bool_field(t, "source_correct").value is False
    assert parse_bool_field(t, "target_correct").value is True
    assert parse_bool_field('{"escalate": "yes"}', "escalate").value is True
    assert unparsed(parse_int_field('{"meaning": 7}', "meaning", 0, 4), "out of range")
    assert unparsed(parse_int_field("meaning: 2", "meaning", 0, 4), "no JSON field")
    assert unparsed(parse_bool_field("nothing", "target_correct"))


def test_subjudge_template_echo_is_unparsed():
    echo = '{"source_correct": true|false, "target_correct": true|false, "reason": "<one sentence>"}'
    assert unparsed(parse_bool_field(echo, "source_correct"), "template echoed")
    assert unparsed(parse_bool_field(echo, "target_correct"), "template echoed")
    assert unparsed(parse_int_field('{"meaning": <integer from 0 to 4>, "reason": "x"}', "meaning", 0, 4),
                    "template echoed")


# ---------------------------------------------------------------- generic all-criteria JSON

def test_json_scores_generic():
    specs = {"fluency": ("score", 1, 7), "decision": ("label", ["ACCEPT", "REJECT"]), "relevance": ("score", 1, 7),
             "coverage": ("score", 1, 7)}
    r = parse_json_scores('{"fluency": 6, "decision": "reject", "relevance": 9, "coverage": "<integer from 1 to 7>",'
                          ' "reasoning": "r"}', specs)
    assert (r["fluency"].value, r["decision"].value) == (6, "REJECT")
    assert unparsed(r["relevance"], "out of range")
    assert unparsed(r["coverage"], "template echoed")
    assert r["fluency"].reasoning == "r"


def test_json_scores_negated_label():
    r = parse_json_scores('{"decision": "not ACCEPT"}', {"decision": ("label", ["ACCEPT", "REJECT"])})
    assert unparsed(r["decision"], "negated")


def test_extract_json_objects_skips_non_json_braces():
    objs = extract_json_objects('Set {a, b}. Then {"x": 1} and {"y": {"z": 2}}')
    assert {"x": 1} in objs and {"y": {"z": 2}} in objs


# ---------------------------------------------------------------- G-Eval logprobs

def test_expected_score_renormalises_over_score_tokens():
    # G-Eval: score = sum_i p(s_i) * s_i over the score tokens, renormalised
    probs = {"1": 0.05, "2": 0.10, "3": 0.20, "4": 0.40, "5": 0.15, "The": 0.10}
    r = expected_score([{t: math.log(p) for t, p in probs.items()}], [1, 2, 3, 4, 5])
    assert r.status == "ok"
    assert r.value == pytest.approx((0.05 * 1 + 0.10 * 2 + 0.20 * 3 + 0.40 * 4 + 0.15 * 5) / 0.90)
    assert r.extra["score_mass"] == pytest.approx(0.90)
    assert r.extra["top_prob"] == pytest.approx(0.40 / 0.90)


def test_expected_score_merges_space_variants_and_finds_the_score_position():
    positions = [{"**": -0.1, "Score": -3.0}, {"4": math.log(0.3), " 4": math.log(0.3), "5": math.log(0.4)}]
    r = expected_score(positions, [1, 2, 3, 4, 5], chosen=["**", "5"])
    assert r.value == pytest.approx(0.6 * 4 + 0.4 * 5)
    assert r.extra["position"] == 1


def test_expected_score_without_logprobs_says_so():
    assert expected_score(None, [1, 2, 3]).status == "logprobs_unavailable"
    assert expected_score([], [1, 2, 3]).value is None
    r = expected_score([{"The": -0.1, "A": -2.0}], [1, 2, 3])
    assert r.status == "unparsed" and r.value is None
