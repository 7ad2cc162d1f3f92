"""Helpers for the workspace tests: raters, synthetic item files, complete answers."""

from __future__ import annotations

import json

import pytest

from tests.conftest import make_user


def items_jsonl(n: int, *, k: int = 3, attention: int = 0, prefix: str = "it") -> str:
    """n regular items with k text outputs from systems sys-a, sys-b, ...; `attention` gold items
    whose gold says every response deserves fluency 7 and ACCEPT (rrgen rubric)."""
    rows = []
    for i in range(n):
        rows.append({"id": f"{prefix}-{i:04d}", "context": f"Review number {i}: the room was fine.",
                     "outputs": [{"system": f"sys-{chr(97 + j)}", "content": f"Response {j} to review {i}."}
                                 for j in range(k)]})
    for i in range(attention):
        rows.append({"id": f"gold-{i:03d}", "context": f"Attention check {i}: rate fluency 7 and accept.",
                     "attention_check": True, "gold": {"fluency": 7, "decision": "ACCEPT"},
                     "outputs": [{"system": f"sys-{chr(97 + j)}", "content": f"Gold response {j}."} for j in range(k)]})
    return "\n".join(json.dumps(r) for r in rows) + "\n"


@pytest.fixture
def raters(db):
    def _make(n: int, prefix: str = "r"):
        return [make_user(f"{prefix}{i:02d}") for i in range(n)]

    return _make


def rrgen_answers(n_responses: int, *, value: int = 6, decision: str = "ACCEPT") -> dict:
    """A complete rrgen-001 answer: four Likert criteria and ACCEPT/REJECT per response."""
    keys = ["semantic_relevance", "fluency", "sentiment_appropriateness", "domain_accuracy"]
    return {"responses": {str(n): {**{k: value for k in keys}, "decision": decision}
                          for n in range(1, n_responses + 1)}}


ALL_KINDS_RUBRIC = {
    "slug": "all-kinds",
    "name": "Every criterion kind",
    "instructions": "Rate **carefully**.",
    "criteria": [
        {"key": "quality", "name": "Quality", "kind": "likert", "min": 1, "max": 5,
         "levels": [{"value": 1, "label": "Bad"}, {"value": 5, "label": "Great"}], "reasoning": "required"},
        {"key": "score", "name": "Score", "kind": "numeric", "min": 0, "max": 10, "step": 0.5},
        {"key": "verdict", "name": "Verdict", "kind": "choice",
         "choices": [{"value": "TP", "description": "fixes an error"}, {"value": "FP1"}]},
        {"key": "decision", "name": "Decision", "kind": "binary",
         "choices": [{"value": "ACCEPT"}, {"value": "REJECT"}]},
        {"key": "sure", "name": "Confidence", "kind": "confidence"},
        {"key": "notes", "name": "Notes", "kind": "text", "required": False},
        {"key": "marks", "name": "Highlights", "kind": "spans", "required": False, "labels": ["good", "bad"]},
        {"key": "preferred", "name": "Preferred response", "kind": "choice", "target": "item",
         "choices": [{"value": 1, "label": "Response 1"}, {"value": 2, "label": "Response 2"}]},
    ],
    "item_options": {"allow_ignore": True, "ignore_reasons": ["Broken item"], "comment": True},
}

TWO_OUTPUT_ITEM = (
    '{"id": "pair-1", "context": "Say hello.", "outputs": ['
    '{"system": "alpha-model", "content": "Hello there, friend."}, '
    '{"system": "beta-model", "content": "Hi."}]}\n'
)


def open_study_with_rubric(rubric: dict, items_text: str, *, admin_user, name: str, rater: str):
    """An open study of one rater on its own rubric (loaded as a new rubric version)."""
    from annotation.services.items import items_import
    from annotation.services.studies import study_create, study_members_add, study_set_status
    from rubrics.services import rubric_version_create

    version, _ = rubric_version_create(data=rubric)
    study = study_create(name=name, rubric_version=version, user=admin_user, raters_per_item=1)
    items_import(study=study, text=items_text, filename="items.jsonl")
    user = make_user(rater)
    study_members_add(study=study, usernames=[user.username], role="annotator")
    study_set_status(study=study, status="open")
    return study, user


@pytest.fixture
def all_kinds_study(db, admin_user):
    """An open study with the all-kinds rubric, one item with two responses, and a rater."""
    return open_study_with_rubric(ALL_KINDS_RUBRIC, TWO_OUTPUT_ITEM, admin_user=admin_user, name="All kinds",
                                  rater="kinds-rater")


def all_kinds_answers() -> dict:
    one = {"quality": {"value": 4, "reasoning": "clear"}, "score": 7.5, "verdict": "TP", "decision": "ACCEPT",
           "sure": 5, "marks": [{"start": 0, "end": 5, "text": "Hello", "label": "good"}]}
    two = {"quality": {"value": 2, "reasoning": "too short"}, "score": "3", "verdict": "FP1", "decision": "REJECT",
           "sure": "4", "notes": "terse"}
    return {"responses": {"1": one, "2": two}, "item": {"preferred": 1}, "comment": "ok"}


def complete_answers(rubric: dict, n_responses: int, *, reasoning: str = "because", comment: str = "") -> dict:
    """A valid answer to any rubric: the top of each scale, the first of each choice."""
    def value(c: dict):
        if c["kind"] in ("likert", "numeric", "confidence"):
            return c["max"]
        if c["kind"] in ("choice", "binary"):
            return c["choices"][0]["value"]
        if c["kind"] == "text":
            return "looks fine"
        return None  # spans: optional in every preset

    def block(target: str) -> dict:
        out = {}
        for c in rubric["criteria"]:
            if c["target"] != target or value(c) is None:
                continue
            out[c["key"]] = {"value": value(c), "reasoning": reasoning if c["reasoning"] != "none" else ""}
        return out

    return {"responses": {str(n): block("output") for n in range(1, n_responses + 1)}, "item": block("item"),
            "comment": comment if rubric["item_options"].get("comment") else ""}


def answers_to_form(answers: dict) -> dict:
    """The answers shape -> the workspace form's fields."""
    form = {}
    for n, block in answers.get("responses", {}).items():
        for key, entry in block.items():
            form[f"r{n}__{key}"] = str(entry["value"])
            if entry.get("reasoning"):
                form[f"r{n}__{key}__reasoning"] = entry["reasoning"]
    for key, entry in answers.get("item", {}).items():
        form[f"item__{key}"] = str(entry["value"])
        if entry.get("reasoning"):
            form[f"item__{key}__reasoning"] = entry["reasoning"]
    if answers.get("comment"):
        form["comment"] = answers["comment"]
    return form
