"""Judge configuration files: validated whole, errors name the field; no key ever stored."""

from __future__ import annotations

import pytest

from judges.config import JudgeConfigError, parse_judges_text, validate_judge
from judges.services.engine import item_slots, numeric_score, output_criteria
from judges.services.runs import make_chunks

GOOD = """
name: aqua-mini
backend: openai
model: gpt-4o-mini
endpoint: https://api.openai.com/v1
api_key_env: OPENAI_API_KEY
method: label
sampling: {temperature: 0, max_tokens: 256, seed: 7}
concurrency: 16
price_in_per_m: 0.15
price_out_per_m: 0.6
method_options: {chunk_size: 32}
"""


def errors_of(text: str) -> dict[str, str]:
    with pytest.raises(JudgeConfigError) as exc:
        parse_judges_text(text)
    return dict(exc.value.errors)


def test_a_good_file_is_normalised_with_defaults():
    (j,) = parse_judges_text(GOOD)
    assert j["name"] == "aqua-mini" and j["method"] == "label" and j["mode"] == "generate"
    assert j["queue"] == "judges" and j["prompt_overrides"] == {} and j["criteria"] == []
    assert j["price_in_per_m"] == 0.15 and isinstance(j["price_in_per_m"], float)


def test_a_key_in_the_file_is_refused_and_named():
    errs = errors_of(GOOD + "api_key: sk-live-123\n")
    assert "api_key" in errs and "environment" in errs["api_key"]


def test_a_key_given_as_the_env_name_is_refused():
    errs = errors_of(GOOD.replace("OPENAI_API_KEY", "sk-abc123"))
    assert "api_key_env" in errs


def test_every_problem_is_reported_at_once_with_its_path():
    text = """
judges:
  - name: Bad Name
    backend: cloud
    model: m
    sampling: {temperature: 5, best_of: 2}
    concurrency: 0
  - name: ok
    backend: transformers
    model: tiny
    endpoint: http://x
    method: escalation
"""
    errs = errors_of(text)
    assert {"judges[0].name", "judges[0].backend", "judges[0].sampling.temperature", "judges[0].sampling.best_of",
            "judges[0].concurrency", "judges[1].endpoint", "judges[1].method_options.experts"} <= set(errs)


def test_logprobs_mode_means_geval():
    j = validate_judge({"name": "g", "backend": "transformers", "model": "tiny", "mode": "logprobs"})
    assert j["method"] == "geval"
    with pytest.raises(JudgeConfigError) as exc:
        validate_judge({"name": "g", "backend": "transformers", "model": "tiny", "mode": "logprobs",
                        "method": "label"})
    assert "mode" in dict(exc.value.errors)


def test_method_options_are_checked_per_method():
    with pytest.raises(JudgeConfigError) as exc:
        validate_judge({"name": "x", "backend": "transformers", "model": "t", "method": "label",
                        "method_options": {"samples": 5}})
    assert "method_options.samples" in dict(exc.value.errors)
    ok = validate_judge({"name": "x", "backend": "transformers", "model": "t", "method": "self_consistency",
                         "method_options": {"samples": 5, "temperature": 0.7}})
    assert ok["method_options"]["samples"] == 5


def test_invalid_yaml_names_the_line():
    errs = errors_of("name: x\nbackend: [openai\n")
    assert any(k.startswith("line ") for k in errs)


def test_duplicate_names_in_one_file():
    errs = errors_of("judges:\n  - {name: a, backend: transformers, model: t}\n"
                     "  - {name: a, backend: transformers, model: t}\n")
    assert "appears twice" in errs["judges"]


RUBRIC = {"criteria": [
    {"key": "fluency", "kind": "likert", "min": 1, "max": 7, "target": "output"},
    {"key": "decision", "kind": "binary", "target": "output",
     "choices": [{"value": "ACCEPT"}, {"value": "REJECT"}]},
    {"key": "notes", "kind": "text", "target": "output"},
    {"key": "ignore", "kind": "binary", "target": "item", "choices": [{"value": "yes"}, {"value": "no"}]},
]}


def test_slots_per_method():
    assert output_criteria({"method": "per_criterion"}, RUBRIC) == ["fluency", "decision"]
    assert output_criteria({"method": "geval"}, RUBRIC) == ["fluency"]
    assert output_criteria({"method": "label"}, RUBRIC) == ["decision"]
    assert output_criteria({"method": "all_in_one", "criteria": ["decision"]}, RUBRIC) == ["decision"]
    assert output_criteria({"method": "pairwise"}, RUBRIC) == []
    assert item_slots({"method": "pairwise"}, 3) == ["pair:overall:0-1", "pair:overall:0-2", "pair:overall:1-2"]
    with pytest.raises(ValueError):
        output_criteria({"method": "per_criterion", "criteria": ["notes"]}, RUBRIC)


def test_numeric_score_of_each_kind():
    crit = {c["key"]: c for c in RUBRIC["criteria"]}
    assert numeric_score(crit["fluency"], 6) == 6.0
    assert numeric_score(crit["decision"], "ACCEPT") == 1.0 and numeric_score(crit["decision"], "REJECT") == 0.0
    assert numeric_score(crit["decision"], "MAYBE") is None
    assert numeric_score({"kind": "choice", "choices": [{"value": "TP"}]}, "TP") is None


def test_chunks_keep_items_whole_and_cover_every_item():
    counts = [(1, 3), (2, 3), (3, 1), (4, 1), (5, 5)]
    chunks = make_chunks(counts, 4)
    assert chunks == [[1, 2], [3, 4, 5]]
    assert make_chunks(counts, 1) == [[1], [2], [3], [4], [5]]
