"""A paid crowd study like the demo's compare-pairwise one: the demo's two training items (pass mark
0.5), a Prolific link, and helpers that answer as a participant does."""

from __future__ import annotations

import json

import pytest
from django.test import Client

from annotation.demo import CROWD_PHASES, TRAINING
from annotation.models import Assignment
from annotation.services.assignments import assignment_next
from annotation.services.crowd import crowd_link_create
from annotation.services.items import items_import
from annotation.services.ratings import assignment_submit
from annotation.simulation.items import items_for


@pytest.fixture
def crowd_study(make_study, admin_user):
    items = "\n".join(json.dumps(r) for r in items_for("compare-pairwise", 10, seed=3))
    study = make_study("compare-pairwise", items_text=items, raters_per_item=3, training_pass_mark=0.5)
    rows = [{**row, "training": True} for row in TRAINING]
    items_import(study=study, text="".join(json.dumps(r) + "\n" for r in rows), filename="training.jsonl")
    return study


@pytest.fixture
def link(crowd_study, admin_user):
    return crowd_link_create(study=crowd_study, user=admin_user, provider="prolific", completion_code="DEMO2026",
                             time_limit_minutes=60)


def phases_study(make_study, *, n_items: int):
    """A compare-pairwise study with every phase of the demo (CROWD_PHASES) and its two training items."""
    items = "\n".join(json.dumps(r) for r in items_for("compare-pairwise", n_items, seed=4))
    study = make_study("compare-pairwise", items_text=items, raters_per_item=3, training_pass_mark=0.5,
                       phases=CROWD_PHASES)
    items_import(study=study, text="".join(json.dumps({**r, "training": True}) + "\n" for r in TRAINING),
                 filename="training.jsonl")
    return study


def enter(link, pid: str) -> Client:
    client = Client()
    resp = client.get(f"/crowd/{link.token}/", {"PROLIFIC_PID": pid, "STUDY_ID": "st1", "SESSION_ID": f"se-{pid}"})
    assert resp.status_code == 302, resp.content.decode()[:300]
    return client


def pair_answers(winner: str = "1") -> dict:
    return {"responses": {"1": {"helpfulness": 6}, "2": {"helpfulness": 3}},
            "item": {"preference": {"value": {"winner": winner, "strength": "clearly"}}}}


def expected_winner(assignment: Assignment) -> str:
    """The shown number of the gold's better answer of a training item."""
    best = assignment.item.gold["preference"][0]
    systems = {o.position: o.system for o in assignment.item.outputs.all()}
    return str([systems[p] for p in assignment.permutation].index(best) + 1)


def answer_training(study, rater, *, right: bool) -> Assignment:
    a = assignment_next(study=study, rater=rater)
    assert a is not None and a.item.is_training
    a.study = study
    a.item.load_outputs()
    good = expected_winner(a)
    return assignment_submit(assignment=a, answers=pair_answers(good if right else {"1": "2", "2": "1"}[good]),
                             time_on_task_ms=4000)


def rate_items(study, rater, n: int) -> None:
    for _ in range(n):
        a = assignment_next(study=study, rater=rater)
        assert a is not None and not a.item.is_training
        a.study = study
        assignment_submit(assignment=a, answers=pair_answers(), time_on_task_ms=6000)


PHASES = {
    "consent": {"text": "# Consent\n\nYou rate answers for about 10 minutes. Your answers are kept anonymous.",
                "return_code": "NOCONSENT"},
    "pre_questionnaire": {"title": "About you", "questions": [
        {"key": "native", "text": "Is English your first language?", "kind": "single", "options": ["yes", "no"]},
        {"key": "age", "text": "Your age", "kind": "number", "min": 18, "max": 99, "integer": True},
        {"key": "langs", "text": "Languages you read well", "kind": "multiple",
         "options": ["English", "German", "French", "Other"], "required": False},
    ]},
    "instructions": {"text": "Read both answers; choose the better one.", "check": [
        {"key": "tie_ok", "text": "May you choose a tie?", "kind": "single", "options": ["yes", "no"],
         "correct": "yes"}]},
    "post_questionnaire": {"questions": [
        {"key": "difficulty", "text": "How hard was it?", "kind": "likert", "min": 1, "max": 5,
         "labels": {"1": "very easy", "5": "very hard"}},
        {"key": "comments", "text": "Anything to tell us?", "kind": "text", "required": False}]},
    "attention_policy": {"reject_after_failed": 2},
    "screened_out": {"payment": "0.50", "code": "SCREENED"},
    "completion": {"text": "Thank you!"},
}
