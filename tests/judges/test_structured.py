"""Structured output: the schema of every preset's methods is valid JSON Schema (and OpenAI-strict),
and an answer to it is read back into the same value by the method's own parser."""
from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
import yaml

from judges.fakeserver import text_hash
from judges.methods.direct import criterion_schema, label_set, parse_all, parse_for_prompt, parse_label_answer
from judges.parsing import parse_best_worst, parse_pairwise, parse_ranking
from judges.prompts import build_all_criteria, build_criterion
from judges.prompts.base import LABEL_KINDS, judgeable
from tests.doubles.strict_provider_server import check_strict, instance
from judges.structured import (
    as_native, best_worst_schema, label_schema, pairwise_schema, ranking_schema, reader, scores_schema,
)

REPO = Path(__file__).resolve().parents[2]
PRESETS = sorted(p.stem for p in (REPO / "rubrics" / "presets").glob("*.yaml"))
SCORED = [s for s in PRESETS if judgeable(yaml.safe_load((REPO / "rubrics" / "presets" / f"{s}.yaml").read_text()))]
ITEM = {"id": "x", "context": "A review.", "outputs": [{"content": "Thanks for the review."},
                                                      {"content": "We will fix it."}, {"content": "Noted."}]}
V = jsonschema.Draft202012Validator


def rubric(slug: str) -> dict:
    return yaml.safe_load((REPO / "rubrics" / "presets" / f"{slug}.yaml").read_text())


def valid(schema: dict) -> None:
    V.check_schema(schema)
    check_strict(schema)  # the strict server's check: all properties required, additionalProperties false


@pytest.mark.parametrize("slug", SCORED)
def test_all_criteria_schema_reads_back(slug):
    r = rubric(slug)
    crits = judgeable(r)
    schema = scores_schema(crits)
    valid(schema)
    prompt = build_all_criteria(r, ITEM, 0)
    for seed in range(5):
        answer = instance(schema, text_hash(f"{slug}/{seed}"))
        V(schema).validate(answer)
        parsed = parse_all(r, prompt, crits, json.dumps(answer), structured=True)
        assert {k: p.value for k, p in parsed.items()} == {c["key"]: answer[c["key"]] for c in crits}
        assert all(p.reasoning == answer["reason"] for p in parsed.values())


@pytest.mark.parametrize("slug", SCORED)
def test_one_criterion_schema_reads_back_in_the_prompts_own_format(slug):
    r = rubric(slug)
    for c in judgeable(r):
        for fmt in (None, "json"):
            prompt = build_criterion(r, c["key"], ITEM, 0, None, fmt)
            schema = criterion_schema(prompt, c)
            valid(schema)
            answer = instance(schema, text_hash(f"{slug}/{c['key']}/{fmt}"))
            V(schema).validate(answer)
            got = reader(schema, lambda t: parse_for_prompt(prompt, c, t))(json.dumps(answer))
            want = answer["label"] if c.get("kind") in LABEL_KINDS else answer["score"]
            assert got.status == "ok" and str(got.value) == str(want), (c["key"], fmt, got)


def test_out_of_scale_answer_is_refused_by_schema_and_parser_alike():
    r = rubric("fulltext-004")
    c = judgeable(r)[0]
    prompt = build_criterion(r, c["key"], ITEM, 0)
    schema = criterion_schema(prompt, c)
    bad = {"score": 11, "reason": "too high"}
    with pytest.raises(jsonschema.ValidationError):
        V(schema).validate(bad)
    assert reader(schema, lambda t: parse_for_prompt(prompt, c, t))(json.dumps(bad)).status == "unparsed"


def test_label_pairwise_ranking_best_worst_read_back():
    labels = label_set(rubric("aqua-003"), None)
    s = label_schema(labels)
    valid(s)
    assert parse_label_answer(rubric("aqua-003"), None, json.dumps({"label": "FP2", "reason": "r"})).value == "FP2"
    s = pairwise_schema()
    valid(s)
    for w in ("A", "B", "tie"):
        assert reader(s, parse_pairwise)(json.dumps({"winner": w, "reason": "it is [[A]] clearly"})).value == w
    s = ranking_schema(3)
    valid(s)
    got = reader(s, lambda t: parse_ranking(t, 3))(json.dumps({"ranking": [2, 3, 1], "reason": "r"}))
    assert got.value == [3, 1, 2]  # rank of Response 1, 2, 3
    assert reader(s, lambda t: parse_ranking(t, 3))(json.dumps({"ranking": [2, 2, 1], "reason": ""})).status == "unparsed"
    s = best_worst_schema(4)
    valid(s)
    got = reader(s, lambda t: parse_best_worst(t, 4))(json.dumps({"best": 4, "worst": 2, "reason": "r"}))
    assert got.value == {"best": 4, "worst": 2}


def test_prose_instead_of_json_goes_to_the_native_parser_unchanged():
    s = pairwise_schema()
    assert as_native(s, "I prefer [[B]]") == "I prefer [[B]]"
    assert reader(s, parse_pairwise)("I prefer [[B]]").value == "B"
