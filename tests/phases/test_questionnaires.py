"""The phases settings and questionnaire answers, checked whole with errors that name the path or
the question (pure: no database)."""

from __future__ import annotations

import pytest

from annotation.demo import CROWD_PHASES
from annotation.questionnaires import (
    AnswersError, PhasesError, answers_clean, check_errors, phases_dump, phases_parse, phases_validate,
)
from tests.phases.conftest import PHASES

QUESTIONS = PHASES["pre_questionnaire"]["questions"] + PHASES["post_questionnaire"]["questions"]


def test_the_demo_and_test_settings_are_valid_and_round_trip_through_yaml():
    assert phases_validate(CROWD_PHASES) == [] and phases_validate(PHASES) == []
    assert phases_parse(phases_dump(PHASES)) == PHASES
    assert phases_parse("") == {} and phases_dump({}) == ""


@pytest.mark.parametrize(("text", "path", "message"), [
    ("consent: {}", "consent", "'text' is a required property"),
    ("pre_questionnaire: {questions: [{key: a, text: A, kind: slider}]}", "pre_questionnaire.questions[0].kind",
     "is not one of"),
    ("pre_questionnaire: {questions: [{key: a, text: A, kind: single}]}", "pre_questionnaire.questions[0]",
     "needs options"),
    ("pre_questionnaire: {questions: [{key: a, text: A, kind: number, min: 5, max: 1}]}",
     "pre_questionnaire.questions[0].max", "above min"),
    ("post_questionnaire: {questions: [{key: a, text: A, kind: text}, {key: a, text: B, kind: text}]}",
     "post_questionnaire.questions[1].key", "used twice"),
    ("instructions: {check: [{key: a, text: A, kind: single, options: [x, y]}]}", "instructions.check[0]",
     "needs its correct answer"),
    ("instructions: {check: [{key: a, text: A, kind: single, options: [x, y], correct: z}]}",
     "instructions.check[0].correct", "one of the options"),
    ("pre_questionnaire: {questions: [{key: a, text: A, kind: text, correct: x}]}",
     "pre_questionnaire.questions[0].correct", "only comprehension checks"),
    ("attention_policy: {reject_after_failed: 0}", "attention_policy.reject_after_failed", "minimum"),
    ("screened_out: {payment: lots}", "screened_out.payment", "amount"),
    ("surprise: 1", "", "Additional properties"),
    ("consent: [unclosed", "line 1", "not valid YAML"),
])
def test_bad_settings_name_the_path(text, path, message):
    with pytest.raises(PhasesError) as exc:
        phases_parse(text)
    assert any(p == path and message in m for p, m in exc.value.errors), exc.value.errors


def test_answers_are_checked_whole_and_cleaned():
    clean = answers_clean(QUESTIONS, {"native": "yes", "age": "41", "langs": ["French", "English"],
                                      "difficulty": "4", "comments": "  fine  "})
    assert clean == {"native": "yes", "age": 41, "langs": ["English", "French"], "difficulty": 4, "comments": "fine"}
    assert "langs" not in answers_clean(QUESTIONS, {"native": "no", "age": 20, "difficulty": 1})  # optional
    with pytest.raises(AnswersError) as exc:
        answers_clean(QUESTIONS, {"native": "si", "age": 17.5, "langs": ["Klingon"], "difficulty": 6, "x": 1})
    assert exc.value.errors == {
        "x": "not a question of this questionnaire", "native": "choose one of the options",
        "age": "between 18 and 99", "langs": "choose among the options, each once",
        "difficulty": "a point of the scale, 1 to 5"}
    with pytest.raises(AnswersError) as exc:
        answers_clean(QUESTIONS, {"age": 30.5, "difficulty": 2, "native": "yes"})
    assert exc.value.errors == {"age": "a whole number"}
    with pytest.raises(AnswersError) as exc:
        answers_clean(QUESTIONS, {})
    assert set(exc.value.errors) == {"native", "age", "difficulty"}  # the required ones


def test_the_comprehension_check_names_wrong_answers():
    check = PHASES["instructions"]["check"]
    assert check_errors(check, {"tie_ok": "yes"}) == {}
    assert "read them again" in check_errors(check, {"tie_ok": "no"})["tie_ok"]
