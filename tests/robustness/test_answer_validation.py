"""Answers are checked on the way in, over HTTP as a participant sends them: a value of the wrong type
or size is refused with a message naming the question or field, and nothing of the call is stored. A
training answer, once its feedback was shown, cannot be changed (409), so the attempt's grade and the
stored answer always agree."""

from __future__ import annotations

import pytest

from annotation.models import Assignment, PhaseRecord, Rating, TrainingAttempt
from tests.phases.conftest import PHASES, crowd_study, expected_winner, pair_answers  # noqa: F401 (a fixture)
from tests.phases.test_state_machine import api, nxt, post, study, through_instructions  # noqa: F401 (fixtures)

pytestmark = pytest.mark.django_db

BIG = 10 ** 400  # valid JSON; float() of it overflows


@pytest.mark.parametrize("answers, key, message", [
    ({"native": "no", "age": 30, "langs": ["German"], "extra": 1}, "extra", "not a question"),
    ({"native": {"yes": 1}, "age": 30}, "native", "choose one of the options"),
    ({"native": "no", "age": BIG}, "age", "a number"),
    ({"native": "no", "age": True}, "age", "a number"),
    ({"native": "no", "age": [30]}, "age", "a number"),
    ({"native": "no", "age": "1e999"}, "age", "between 18 and 99"),
    ({"native": "no", "age": 30, "langs": [["English"]]}, "langs", "choose among the options"),
    ({"native": "no", "age": 30, "langs": ["English", "English"]}, "langs", "each once"),
])
def test_pre_questionnaire_refuses_each_wrong_shape_by_question(api, study, annotator, answers, key, message):
    assert post(api, study, "consent/", {"agree": True}).json()["state"] == "questionnaire"
    r = post(api, study, "questionnaire/pre/", {"answers": answers})
    assert r.status_code == 400, r.content
    assert message in r.json()["errors"][key]
    assert not PhaseRecord.objects.filter(study=study, rater=annotator, phase="pre").exists()


@pytest.mark.parametrize("comments, message", [
    ({"html": "<b>x</b>"}, "an answer in words"),
    (["a", "b"], "an answer in words"),
    (42, "an answer in words"),
    ("nul \x00 here", "cannot be stored"),
    ("lone \ud800 surrogate", "cannot be stored"),
    ("x" * 2001, "at most 2000 characters"),
])
def test_a_text_answer_is_text_that_can_be_stored(comments, message):
    from annotation.questionnaires import AnswersError, answers_clean

    questions = PHASES["post_questionnaire"]["questions"]
    with pytest.raises(AnswersError) as refused:
        answers_clean(questions, {"difficulty": 3, "comments": comments})
    assert message in refused.value.errors["comments"]
    assert answers_clean(questions, {"difficulty": "3", "comments": "  fine  "}) == {"difficulty": 3,
                                                                                     "comments": "fine"}


def _submit(api, study, token, answers, *, next_: bool = False):
    return api.post(f"/api/studies/{study.slug}/rate/{token}/submit/{'?next=1' if next_ else ''}",
                    {"answers": answers}, format="json")


@pytest.mark.parametrize("value, field", [
    ({"helpfulness": BIG}, "r1__helpfulness"),
    ({"helpfulness": {"value": 3, "reasoning": {"why": 1}}}, "r1__helpfulness__reasoning"),
    ({"helpfulness": {"value": 3, "score": 1}}, "r1__helpfulness"),
])
def test_a_rating_of_the_wrong_type_is_refused_by_field(api, study, annotator, value, field):
    state = through_instructions(api, study)
    token = state["assignment"]["token"]
    answers = pair_answers()
    answers["responses"]["1"] = value
    r = _submit(api, study, token, answers)
    assert r.status_code == 400, r.content
    assert field in r.json()["errors"]
    assert not Rating.objects.filter(assignment__token=token).exists()
    assert Assignment.objects.get(token=token).status == Assignment.Status.ACTIVE


def test_a_training_answer_cannot_change_after_its_feedback(api, study, annotator):
    state = through_instructions(api, study)
    a = Assignment.objects.get(token=state["assignment"]["token"])
    a.item.load_outputs()
    good = expected_winner(a)
    first = _submit(api, study, a.token, pair_answers(good))
    assert first.status_code == 200 and first.json()["training"]["right"] is True
    again = _submit(api, study, a.token, pair_answers(good))  # a retried request: the same answer, no change
    assert again.status_code == 200 and again.json()["ratings"] == first.json()["ratings"]
    wrong = {"1": "2", "2": "1"}[good]
    changed = _submit(api, study, a.token, pair_answers(wrong))
    assert changed.status_code == 409
    assert "cannot be changed" in changed.json()["detail"]
    draft = api.post(f"/api/studies/{study.slug}/rate/{a.token}/draft/", {"answers": pair_answers(wrong)},
                     format="json")
    assert draft.status_code == 409
    a.refresh_from_db()
    stored = Rating.objects.get(assignment=a, criterion="preference").value
    attempt = TrainingAttempt.objects.get(study=study, rater=annotator)
    assert a.attention_passed is True and attempt.answers == {a.item.external_id: True}
    assert stored["winner"] == a.item.outputs.get(position=a.permutation[int(good) - 1]).pk
    assert a.draft["item"]["preference"]["value"]["winner"] == good
    assert nxt(api, study)["state"] == "training"  # and the participant goes on
