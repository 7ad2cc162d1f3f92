"""Property: arbitrary reasoning text around a valid answer never changes the parsed value.

For each output format the answer sits where its prompt puts it (first line, JSON object,
seed 000 score lines, [[X]] marker) and the judge's prose goes around it: numbers, years,
quoted anchors, negations, label words, echoed templates, other criteria's names.
"""
from __future__ import annotations

import json
import re

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from judges.parsing import (
    parse_bool_field, parse_criteria_block, parse_int_field, parse_json_scores, parse_label, parse_pairwise,
    parse_score,
)

TRICKY = [
    "not TP", "this is not FP2", "I would not accept it", "REJECT", "ACCEPT", "yes", "no", "Yes, but no.",
    "a score of 10 means a rigorous structure", "A score of 0 represents chaos", "Score: 3", "score", "2023",
    "2 minor slips", "4/5", "7/10", "true|false", "true", "false", "<integer from 0 to 4>", "xx", "FP1 or FP3",
    "Response A", "Response B is better", "[A]", "tie", "Correctness: 2 errors", "**Clarity**: 1 point missing",
    "Overall Rating", "label: FP1", "meaning: 4", "reward -3", "score\":\"xx\"", "…", "\\n", "#", "- ", "**",
]
PLAIN = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="{}[]\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"),
                max_size=40)
FRAGMENT = st.one_of(PLAIN, st.sampled_from(TRICKY))
# One line of prose, no braces or brackets, and no <think>: a reasoning model's marker, not prose (an unclosed one
# hides what follows it by design, tests/judges/test_parsing.py; hypothesis once wrote "<THINK>" here).
PROSE = st.lists(FRAGMENT, max_size=8).map(" ".join).filter(lambda s: "<think>" not in s.lower())
PROSE_LINES = st.lists(PROSE, max_size=5).map("\n".join)
ANY_TEXT = st.lists(st.one_of(st.text(max_size=60), st.sampled_from(TRICKY)), max_size=8).map("\n".join)

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


# ---------------------------------------------------------------- first line (seed 004)

@SETTINGS
@given(score=st.integers(0, 10), deco=st.sampled_from(["{}", "**{}**", "{}.", "{}/10", "Score: {}", "{} – a clear hierarchy"]), after=ANY_TEXT)
def test_first_line_score_ignores_everything_after_it(score, deco, after):
    r = parse_score(deco.format(score) + "\n" + after, 0, 10, fmt="first_line")
    assert (r.status, r.value) == ("ok", score)


# ---------------------------------------------------------------- JSON score (seed 004 evidence, generic)

@SETTINGS
@given(score=st.integers(0, 10), as_text=st.booleans(), reason=st.text(max_size=80), before=PROSE_LINES,
       after=PROSE_LINES, escaped=st.booleans())
def test_json_score_ignores_text_around_it_and_inside_the_reason(score, as_text, reason, before, after, escaped):
    obj = json.dumps({"score": str(score) if as_text else score, "reason": reason}, ensure_ascii=False)
    if escaped and '\\"' not in obj:  # the seed's template style: {"score\":"6\",...}
        obj = re.sub(r'"(?=[:,}])', r'\\"', obj)
    r = parse_score(f"{before}\n{obj}\n{after}", 0, 10, fmt="json")
    assert (r.status, r.value) == ("ok", score)


# ---------------------------------------------------------------- seed 000 score lines

NAMES = {"correctness": "Correctness", "clarity": "Clarity", "tone": "Tone", "actionability": "Actionability",
         "coherence": "Coherence", "emotion": "Emotion", "overall": "Overall Rating"}
# A heading line that opens a score section ("Output:") would start a new set of score lines.
SCORE_HEADING = re.compile(r"^[\W_]*(output( format)?|scores?|ratings?|evaluation|assessment)[\W_]*$", re.I)
NAME_PROSE = st.tuples(st.sampled_from(list(NAMES.values())), st.integers(0, 2030),
                       st.sampled_from(["minor slips", "research", "of 4 points", "- but weak", "x"]), PROSE).map(
    lambda t: f"- **{t[0]}**: {t[1]} {t[2]} {t[3]}")
# ... and one that opens the Reasoning section ends them: prose before the scores is neither.
REASON_HEADING = re.compile(r"^[\W_]*(reasoning|reasons|justifications?|explanation|rationale)[\W_]*$", re.I)
PREAMBLE = st.lists(st.one_of(PROSE.filter(lambda s: not any(h.match(x.strip()) for h in (SCORE_HEADING, REASON_HEADING)
                                                             for x in s.splitlines() or [""])), NAME_PROSE),
                    max_size=4)
REASONING = st.lists(st.one_of(st.text(max_size=60), st.sampled_from(TRICKY), NAME_PROSE,
                               st.sampled_from(list(NAMES.values())).map(lambda n: f"- **{n}**: 3")),
                     max_size=8).filter(lambda ls: not any(SCORE_HEADING.match(x.strip()) for l in ls
                                                           for x in l.splitlines()))


@SETTINGS
@given(scores=st.fixed_dictionaries({k: st.integers(1, 5) for k in NAMES}), preamble=PREAMBLE, reasoning=REASONING,
       deco=st.sampled_from(["- **{n}**: {v}", "- **{n}:** {v}", "{n}: {v}", "1. **{n}**: **{v}**", "- {n}: {v}/5",
                                  "- **{n}**: {v} – see below"]))
def test_seed_000_score_lines_ignore_prose_and_the_reasoning_section(scores, preamble, reasoning, deco):
    lines = [deco.format(n=NAMES[k], v=v) for k, v in scores.items()]
    text = "\n".join(preamble + ["**Output:**"] + lines + ["", "**Reasoning:**", ""] + reasoning)
    r = parse_criteria_block(text, NAMES, 1, 5)
    assert {k: p.value for k, p in r.items()} == scores


# ---------------------------------------------------------------- labels, yes/no, ACCEPT/REJECT

LABEL_SETS = [["TP", "FP3", "FP2", "FP1"], ["ACCEPT", "REJECT"], ["Yes", "No"]]


@SETTINGS
@given(data=st.data(), labels=st.sampled_from(LABEL_SETS), reason=st.text(max_size=80), before=PROSE_LINES,
       after=PROSE_LINES)
def test_label_ignores_text_around_it(data, labels, reason, before, after):
    label = data.draw(st.sampled_from(labels))
    said = data.draw(st.sampled_from(["{}", "{} (see the reason)", "**{}**"])).format(label)
    obj = json.dumps({"label": said, "reason": reason}, ensure_ascii=False)
    r = parse_label(f"{before}\n{obj}\n{after}", labels)
    assert (r.status, r.value) == ("ok", label)


@SETTINGS
@given(fluency=st.integers(1, 7), decision=st.sampled_from(["ACCEPT", "REJECT"]), reasoning=st.text(max_size=80),
       before=PROSE_LINES, after=PROSE_LINES)
def test_generic_json_scores_ignore_text_around_them(fluency, decision, reasoning, before, after):
    obj = json.dumps({"fluency": fluency, "decision": decision, "reasoning": reasoning}, ensure_ascii=False)
    r = parse_json_scores(f"{before}\n{obj}\n{after}",
                          {"fluency": ("score", 1, 7), "decision": ("label", ["ACCEPT", "REJECT"])})
    assert (r["fluency"].value, r["decision"].value) == (fluency, decision)


@SETTINGS
@given(meaning=st.integers(0, 4), source=st.booleans(), target=st.booleans(), reason=st.text(max_size=80),
       before=PROSE_LINES, after=PROSE_LINES)
def test_subjudge_fields_ignore_text_around_them(meaning, source, target, reason, before, after):
    text = (f"{before}\n" + json.dumps({"meaning": meaning, "source_correct": source, "target_correct": target,
                                        "reason": reason}) + f"\n{after}")
    assert parse_int_field(text, "meaning", 0, 4).value == meaning
    assert parse_bool_field(text, "source_correct").value is source
    assert parse_bool_field(text, "target_correct").value is target


# ---------------------------------------------------------------- pairwise [[A]] / [[B]]

@SETTINGS
@given(verdict=st.sampled_from(["A", "B", "C"]), before=PROSE_LINES, after=PROSE_LINES)
def test_pairwise_verdict_ignores_text_around_it(verdict, before, after):
    r = parse_pairwise(f"{before}\n[[{verdict}]]\n{after}")
    assert (r.status, r.value) == ("ok", {"A": "A", "B": "B", "C": "tie"}[verdict])


def test_a_score_like_line_before_the_output_heading_is_prose():
    """Found by the property above: a preamble line `- **Correctness**: 2 - but weak …` read as a
    second score made the criterion unparsed (two different values)."""
    scores = "\n".join(f"- **{n}**: 3" for n in NAMES.values())
    text = f"- **Correctness**: 2 - but weak evidence\n**Output:**\n{scores}\n\n**Reasoning:**\n- **Clarity**: 5"
    r = parse_criteria_block(text, NAMES, 1, 5)
    assert {k: p.value for k, p in r.items()} == dict.fromkeys(NAMES, 3)
    # without a score heading, the lines before any heading are the scores, as before
    assert parse_criteria_block("- **Correctness**: 2 - but weak", {"correctness": "Correctness"}, 1, 5)[
        "correctness"].value == 2
