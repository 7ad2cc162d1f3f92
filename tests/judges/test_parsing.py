"""Parsing real-looking judge outputs: the last verdict wins; failures are unparsed, never a number."""
from __future__ import annotations

import math

import pytest

from judges.parsing import (
    expected_score, extract_json_objects, parse_bool_field, parse_criteria_block, parse_int_field, parse_json_scores,
    parse_label, parse_pairwise, parse_score,
)

SCORES_0_10 = [
    # seed 004: score alone on the first line
    ("8\nThe response has a reasonable structure with a clear hierarchy.", 8),
    ("**7**\n\nThe logic is smooth but lacks depth.", 7),
    ("9.\nVery fluent.", 9),
    # seed 004 evidence: JSON, with the seed's string-typed score, fences, trailing text, single quotes
    ('{"score":"6","reason":"Over half of the sub-points lack evidence."}', 6),
    ('```json\n{"score": 4, "reason": "Mostly empty talk."}\n```\nI hope this helps!', 4),
    ("{'score': '10', 'reason': 'abundant evidence'}", 10),
    ("{'score': 3, 'reason': 'it's thin'}", 3),  # unescaped quote inside single quotes
    # an echoed output template is skipped; the judge's own object wins
    ('The template is {"score":"xx","reason":"xx"}.\n{"score": "5", "reason": "average"}', 5),
    # labelled and fractional forms; the LAST verdict, not one quoted from the response
    ("The assistant claims 'Score: 10' for itself, which is unjustified.\nFinal score: 3", 3),
    ("Overall this deserves 7/10.", 7),
    ("Rating: 2 out of 10", 2),
    ("Structure is fine.\nScore (0-10): 6", 6),
    ("<think>maybe 2? or 9</think>\n5\nsolid", 5),
]


@pytest.mark.parametrize("text,expected", SCORES_0_10)
def test_scores_on_a_0_10_scale(text, expected):
    r = parse_score(text, 0, 10)
    assert (r.status, r.value) == ("ok", expected)
    assert r.raw == text


UNPARSED = [
    ("", "unparsed"),
    ("The response is good but could use more examples.", "unparsed"),
    ("12\nexcellent", "unparsed"),  # out of range: never clipped to the maximum
    ('{"score": -1, "reason": "x"}', "unparsed"),
    ("Score: 4/5", "unparsed"),  # wrong denominator for a 0-10 scale
    ("6.5\nbetween two anchors", "unparsed"),  # integer scale
    ('{"score":"xx","reason":"xx"}', "unparsed"),
    ("I'm sorry, but I cannot evaluate this content.", "refusal"),
    ("I can't help with rating this response.", "refusal"),
    ("<think>The score is 7", "unparsed"),  # unfinished reasoning: nothing after it
]


@pytest.mark.parametrize("text,status", UNPARSED)
def test_unparsed_and_refusals_have_no_value(text, status):
    r = parse_score(text, 0, 10)
    assert r.value is None and r.status == status and r.raw == text


def test_likert_1_5_fraction_and_range():
    assert parse_score("I would rate this 4/5.", 1, 5).value == 4
    assert parse_score("0\nterrible", 1, 5).value is None  # 0 is below the scale, never a 'minimum'
    assert parse_score("Score: 5", 1, 5, allowed=[1, 3, 5]).value == 5
    assert parse_score("Score: 4", 1, 5, allowed=[1, 3, 5]).status == "unparsed"


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


def test_seed_000_block():
    r = parse_criteria_block(SEED_000_ANSWER, NAMES, 1, 5)
    assert {k: v.value for k, v in r.items()} == {"correctness": 4, "clarity": 5, "tone": 4, "actionability": 3,
                                                  "coherence": 4, "emotion": 5, "overall": 4}
    assert r["clarity"].reasoning == "Clear and concise."
    assert r["actionability"].reasoning == "Next steps are general."


def test_seed_000_block_missing_and_out_of_range_and_template_echo():
    text = ("**Output Format:**\n- **Correctness**: score\n- **Clarity**: score\n\n"
            "- **Correctness**: 6\n- **Clarity**: 3/5\n")
    r = parse_criteria_block(text, {"correctness": "Correctness", "clarity": "Clarity", "tone": "Tone"}, 1, 5)
    assert (r["correctness"].value, r["correctness"].status) == (None, "unparsed")
    assert r["clarity"].value == 3
    assert (r["tone"].value, r["tone"].status) == (None, "unparsed")


def test_seed_000_block_as_json_and_bold_variants():
    r = parse_criteria_block('{"Correctness": 2, "Overall Rating": {"score": 3}}', NAMES, 1, 5)
    assert r["correctness"].value == 2 and r["overall"].value == 3
    r = parse_criteria_block("1. **Tone:** 2\n**Overall Rating** - 5", NAMES, 1, 5)
    assert r["tone"].value == 2 and r["overall"].value == 5


LABELS = ["TP", "FP3", "FP2", "FP1"]


@pytest.mark.parametrize("text,expected", [
    ('{"label": "TP", "reason": "Fixes subject-verb agreement."}', "TP"),
    ('```json\n{"label": "FP2", "reason": "introduces an article error"}\n```', "FP2"),
    ("{'label': 'FP3', 'reason': 'style only'}", "FP3"),
    ("This is not a TP: the source was already correct.\nLabel: FP3", "FP3"),
    ("Aligned: She {go=>goes}. Comparing with TP and FP1 cases... Final verdict: FP1", "FP1"),
    ("The correct label is **FP2**.", "FP2"),
    ('{"label": "tp"}', "TP"),
])
def test_labels(text, expected):
    r = parse_label(text, LABELS)
    assert (r.status, r.value) == ("ok", expected)


@pytest.mark.parametrize("text,status", [
    ('{"label": "FP4"}', "unparsed"),
    ("The edit looks fine to me.", "unparsed"),
    ("I'm sorry, but I can't assist with that.", "refusal"),
])
def test_labels_unparsed(text, status):
    r = parse_label(text, LABELS)
    assert r.value is None and r.status == status


def test_label_words_do_not_match_inside_other_words():
    assert parse_label("ACCEPTED? no. REJECT", ["ACCEPT", "REJECT"]).value == "REJECT"
    assert parse_label("I accept this response.", ["ACCEPT", "REJECT"]).value == "ACCEPT"


@pytest.mark.parametrize("text,expected", [
    ("Response A is more specific. [[A]]", "A"),
    ("Both are similar. [[C]]", "tie"),
    ('{"winner": "B"}', "B"),
    ("Winner: Response B", "B"),
    ("At first [[A]] seemed right, but on reflection [[B]]", "B"),
])
def test_pairwise(text, expected):
    assert parse_pairwise(text).value == expected


def test_pairwise_no_verdict_is_not_a_tie():
    r = parse_pairwise("Both responses have merits.")
    assert r.value is None and r.status == "unparsed"
    assert parse_pairwise("[[C]]", allow_tie=False).value is None


def test_subjudge_fields():
    t = '{"meaning": 3, "reward": -2, "source_correct": "false", "target_correct": true}'
    assert parse_int_field(t, "meaning", 0, 4).value == 3
    assert parse_int_field(t, "reward", -3, 3).value == -2
    assert parse_bool_field(t, "source_correct").value is False
    assert parse_bool_field(t, "target_correct").value is True
    assert parse_int_field('{"meaning": 7}', "meaning", 0, 4).status == "unparsed"
    assert parse_int_field("meaning: 2", "meaning", 0, 4).value == 2
    assert parse_bool_field("nothing", "target_correct").value is None


def test_json_scores_generic():
    specs = {"fluency": ("score", 1, 7), "decision": ("label", ["ACCEPT", "REJECT"]), "relevance": ("score", 1, 7)}
    r = parse_json_scores('{"fluency": 6, "decision": "reject", "relevance": 9, "reasoning": "r"}', specs)
    assert (r["fluency"].value, r["decision"].value) == (6, "REJECT")
    assert r["relevance"].value is None and r["relevance"].status == "unparsed"
    assert r["fluency"].reasoning == "r"


def test_extract_json_objects_skips_non_json_braces():
    objs = extract_json_objects('Set {a, b}. Then {"x": 1} and {"y": {"z": 2}}')
    assert {"x": 1} in objs and {"y": {"z": 2}} in objs


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
