"""`manage.py parse_judge_output`: one raw answer parsed as a judge run of that rubric and method would."""
from __future__ import annotations

import asyncio
import io
import json

import pytest
from django.core.management import CommandError, call_command

from judges import methods as M
from judges.methods.answers import PLACEHOLDER_ITEM, as_report, parse_answer
from rubrics.loader import load_preset
from rubrics.services import rubric_version_create
from tests.judges.scripted import ScriptedBackend

pytestmark = pytest.mark.django_db

SEED_000 = """- **Correctness**: 5
- **Clarity**: 4
- **Tone**: 4
- **Actionability**: 3
- **Coherence**: 4
- **Emotion**: 5
- **Overall Rating**: 4

**Reasoning:**

- **Correctness**: 2 minor slips in the dates, otherwise accurate.
- **Clarity**: Clear.
- **Tone**: Warm.
- **Actionability**: It asks the student to add 2023 research, a concrete step.
- **Coherence**: Flows.
- **Emotion**: Encouraging.
"""


def run(*args: str, stdin: str | None = None, monkeypatch=None) -> dict:
    out = io.StringIO()
    if stdin is not None:
        monkeypatch.setattr("sys.stdin", io.StringIO(stdin))
    call_command("parse_judge_output", *args, stdout=out)
    return json.loads(out.getvalue())


def from_file(tmp_path, text: str, *args: str) -> dict:
    path = tmp_path / "answer.txt"
    path.write_text(text, encoding="utf-8")
    return run(*args, str(path))


def test_seed_000_reasoning_lines_never_override_the_score_lines(tmp_path):
    out = from_file(tmp_path, SEED_000, "--rubric", "feedback-000", "--method", "all_in_one")
    assert {k: v["value"] for k, v in out.items()} == {"correctness": 5, "clarity": 4, "tone": 4, "actionability": 3,
                                                      "coherence": 4, "emotion": 5, "overall": 4}
    assert all(v["status"] == "parsed" for v in out.values())
    assert out["correctness"]["detail"] == "score line 'Correctness'"


def test_seed_000_echoed_template_is_unparsed_and_others_still_parse(tmp_path):
    text = SEED_000.replace("- **Tone**: 4", "- **Tone**: score")
    out = from_file(tmp_path, text, "--rubric", "feedback-000", "--method", "all_in_one")
    assert out["tone"] == {"value": None, "status": "unparsed", "detail": "template echoed ('score')"}
    assert out["clarity"]["value"] == 4


def test_reads_standard_input_and_one_criterion(monkeypatch):
    out = run("--rubric", "feedback-000", "--method", "all_in_one", "--criterion", "emotion", "-", stdin=SEED_000,
              monkeypatch=monkeypatch)
    assert out == {"emotion": {"value": 5, "status": "parsed", "detail": "score line 'Emotion'"}}


@pytest.mark.parametrize("args,text,expected", [
    (["--rubric", "aqua-003", "--method", "label"], '{"label": "not TP", "reason": "style only"}',
     {"label": (None, "unparsed", "negated answer ('not TP')")}),
    (["--rubric", "aqua-003", "--method", "label"], "The edit is not TP.",
     {"label": (None, "unparsed", "no JSON field 'label'")}),
    (["--rubric", "aqua-003", "--method", "escalation"], '{"label": "FP2", "reason": "article error"}',
     {"label": ("FP2", "parsed", "JSON field 'label'")}),
    (["--rubric", "rrgen-001", "--method", "per_criterion", "--criterion", "decision"],
     '{"label": "I would not accept it", "reason": "off-topic"}',
     {"decision": (None, "unparsed", "negated answer ('I would not accept it')")}),
    (["--rubric", "rrgen-001", "--method", "per_criterion", "--criterion", "decision"], "I would not accept it.",
     {"decision": (None, "unparsed", "no JSON field 'label'")}),
    (["--rubric", "fulltext-004", "--method", "per_criterion", "--criterion", "structure"],
     "A score of 10 means a rigorous structure, and this one comes close.",
     {"structure": (None, "unparsed", "first line is not a single score: 'A score of 10 means a rigorous structure, "
                                      "and this one come…'")}),
    (["--rubric", "fulltext-004", "--method", "per_criterion", "--criterion", "logic"], "score\nThe logic is sound.",
     {"logic": (None, "unparsed", "template echoed: 'score'")}),
    (["--rubric", "fulltext-004", "--method", "per_criterion", "--criterion", "evidence"],
     '{"score\\":"6\\","reason\\":"Over half of the sub-points lack evidence.\\"}',
     {"evidence": (6, "parsed", "JSON field 'score'")}),
    (["--rubric", "fulltext-004", "--method", "self_consistency", "--criterion", "language"], "7\nFluent.",
     {"language": (7, "parsed", "first line")}),
    (["--rubric", "rrgen-001", "--method", "pairwise", "--criterion", "fluency"], "B is smoother.\n[[B]]",
     {"fluency": ("B", "parsed", "verdict marker")}),
    (["--rubric", "rrgen-001", "--method", "geval", "--criterion", "fluency"], "5",
     {"fluency": (None, "unparsed", "logprobs_unavailable: geval reads the score from logprobs, not from the "
                                    "answer's text")}),
])
def test_section_3_cases(tmp_path, args, text, expected):
    out = from_file(tmp_path, text, *args)
    assert {k: (v["value"], v["status"], v["detail"]) for k, v in out.items()} == expected


def test_modular_echoed_template_is_unparsed(tmp_path):
    echo = '{"source_correct": true|false, "target_correct": true|false, "reason": "<one sentence>"}'
    out = from_file(tmp_path, echo, "--rubric", "aqua-003", "--method", "modular")
    assert out["source_correct"] == {"value": None, "status": "unparsed", "detail": "template echoed ('true|false')"}
    assert out["label"]["status"] == "unparsed" and out["label"]["value"] is None
    full = '{"meaning": 0, "reward": 2, "source_correct": false, "target_correct": true, "reason": "fix"}'
    out = from_file(tmp_path, full, "--rubric", "aqua-003", "--method", "modular")
    assert out["label"]["value"] == "TP" and out["reward"]["value"] == 2


@pytest.mark.parametrize("args,message", [
    (["--rubric", "nope", "--method", "all_in_one"], "unknown rubric 'nope'; known: aqua-003, codegen-002"),
    (["--rubric", "feedback-000", "--method", "vibes"], "unknown method 'vibes'; known: all_in_one, per_criterion"),
    (["--rubric", "feedback-000", "--method", "all_in_one", "--criterion", "confidence"],
     "criterion 'confidence' is not judged by method all_in_one in this rubric; known: correctness, clarity"),
    (["--rubric", "fulltext-004", "--method", "per_criterion"], "give --criterion (one of structure, logic"),
    (["--rubric", "fulltext-004", "--method", "label", "--criterion", "logic"], "has none, so there is no criterion"),
    (["--rubric", "aqua-003", "--method", "geval"], "method geval scores scale criteria; this rubric has none"),
])
def test_clear_errors(tmp_path, args, message):
    path = tmp_path / "a.txt"
    path.write_text("5")
    with pytest.raises(CommandError, match=message.replace("(", r"\(").replace(")", r"\)")):
        call_command("parse_judge_output", *args, str(path))


def test_missing_file_is_a_clear_error(tmp_path):
    with pytest.raises(CommandError, match="cannot read .*missing.txt"):
        call_command("parse_judge_output", "--rubric", "feedback-000", "--method", "all_in_one",
                     str(tmp_path / "missing.txt"))


def test_a_stored_rubric_version_is_used_before_the_preset(tmp_path):
    data = load_preset("fulltext-004")
    for c in data["criteria"]:
        c["max"] = 5
        c["levels"] = [lv for lv in c["levels"] if lv["value"] <= 5]
    rubric_version_create(data=data)
    out = from_file(tmp_path, "8\nGood.", "--rubric", "fulltext-004", "--method", "per_criterion",
                    "--criterion", "logic")
    assert out["logic"]["status"] == "unparsed" and "out of range: 8" in out["logic"]["detail"]


# ---------------------------------------------------------------- the command and a run agree

AGREE = [
    ("feedback-000", "all_in_one", None, SEED_000),
    ("feedback-000", "all_in_one", None, SEED_000.replace("- **Clarity**: 4", "- **Clarity**: 4\n- **Clarity**: 2")),
    ("fulltext-004", "per_criterion", "evidence", '{"score\\":"6\\","reason\\":"x\\"}'),
    ("fulltext-004", "per_criterion", "structure", "A score of 10 means…\n8"),
    ("aqua-003", "label", None, '{"label": "not TP"}'),
    ("aqua-003", "label", None, 'Not FP1. {"label": "FP3", "reason": "style"}'),
    ("aqua-003", "legacy", None, '{"label": "TP|FP3|FP2|FP1"}'),
    ("aqua-003", "legacy", None, '{"label": "FP2", "reason": "article"}'),
    ("rrgen-001", "all_in_one", None, '{"semantic_relevance": 6, "fluency": 9, "decision": "not ACCEPT"}'),
    ("codegen-002", "all_in_one", None, '{"technical_quality": 4, "aesthetic_quality": "<integer from 1 to 5>"}'),
]


@pytest.mark.parametrize("slug,method,criterion,text", AGREE)
def test_the_command_parses_exactly_as_the_method_does(slug, method, criterion, text):
    rubric = load_preset(slug)
    settings = M.MethodSettings(criteria=[criterion] if criterion else None)
    backend = ScriptedBackend(lambda prompt: text)
    results = asyncio.run(M.METHODS[method](backend, rubric, [M.Target(PLACEHOLDER_ITEM, 0)], settings))
    from_run = {r.criterion: (r.value if r.ok else None, r.status, r.detail.get("parse")) for r in results}
    from_command = {k: (r.value if r.ok else None, r.status, r.detail) for k, r in
                    parse_answer(rubric, method, text, criterion=criterion).items()}
    assert from_run == from_command
    assert as_report(parse_answer(rubric, method, text, criterion=criterion)).keys() == from_run.keys()
