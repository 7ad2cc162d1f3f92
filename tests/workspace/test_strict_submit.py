"""A submit that carries what the rubric does not ask for is refused by name, nothing stored; every
refusal speaks the rater's language. Service, REST API and workspace form alike."""

from __future__ import annotations

import pytest

from annotation.models import Assignment, Rating
from annotation.services.assignments import assignment_next
from annotation.services.ratings import AnswerError, assignment_submit
from tests.workspace.conftest import all_kinds_answers, complete_answers, items_jsonl, rrgen_answers

LIKERT = ["semantic_relevance", "fluency", "sentiment_appropriateness", "domain_accuracy"]


def _all_kinds(a: Assignment) -> dict:
    answers = all_kinds_answers()
    answers["responses"]["1"].pop("marks", None)
    return answers


@pytest.mark.parametrize("mutate, field, message", [
    (lambda x: x["responses"]["1"].update(bogus=3), "r1__bogus", "Response 1: this rubric has no criterion 'bogus'"),
    (lambda x: x["item"].update(bogus=3), "item__bogus", "this rubric has no criterion 'bogus'"),
    (lambda x: x["responses"]["1"].update(preferred=1), "r1__preferred",
     "Preferred response is asked once for the whole item, not per response"),
    (lambda x: x["item"].update(quality={"value": 3, "reasoning": "x"}), "item__quality",
     "Quality is asked for each response, not for the whole item"),
    (lambda x: x["responses"]["2"].update(score={"value": 7, "reasoning": "I think so"}), "r2__score__reasoning",
     "Response 2: Score asks for no reasoning"),
    (lambda x: x["responses"]["1"].update(quality={"value": 4, "reasoning": "ok", "confidence": 5}), "r1__quality",
     "unknown field(s) 'confidence'"),
    (lambda x: x["responses"]["1"].update(quality={"reasoning": "ok"}), "r1__quality", "the value is missing"),
    (lambda x: x.update(highlights=[]), "answers", "unknown field(s) 'highlights'"),
    (lambda x: x.update(ignored="false"), "ignored", "must be true or false"),
    (lambda x: x.update(comment=5), "comment", "must be text"),
    (lambda x: x.update(ignored=True, ignore_reason="I am bored"), "ignore_reason",
     "choose one of the reasons: Broken item"),
    (lambda x: x["responses"].update({"0": {"quality": 1}}), "answers", "(responses are 1 to 2)"),
])
def test_what_the_rubric_does_not_ask_for_is_refused(all_kinds_study, mutate, field, message):
    study, rater = all_kinds_study
    a = assignment_next(study=study, rater=rater)
    answers = _all_kinds(a)
    assignment_submit(assignment=a, answers=dict(answers), time_on_task_ms=1)  # the unmutated answers pass
    before = list(Rating.objects.values_list("id", "value"))
    mutate(answers)
    with pytest.raises(AnswerError) as exc:
        assignment_submit(assignment=a, answers=answers, time_on_task_ms=1)
    assert message in exc.value.errors.get(field, ""), exc.value.errors
    assert list(Rating.objects.values_list("id", "value")) == before  # the earlier submit stands untouched


@pytest.mark.parametrize("preset, extra, field, message", [
    ("rrgen-001", {"comment": "nice"}, "comment", "this study takes no comments"),
    ("aqua-003", {"ignore_reason": "odd edit"}, "ignore_reason", "this study does not allow ignoring an item"),
    ("aqua-003", {"responses": {"1": {"label": "TP", "highlights": [{"start": 0, "end": 1}]}}}, "r1__highlights",
     "this rubric has no criterion 'highlights'"),
    ("fulltext-004", {"responses": {"1": {"structure": {"value": 7, "reasoning": "well built"}}}},
     "r1__structure__reasoning", "asks for no reasoning"),
])
def test_presets_refuse_what_they_do_not_ask_for(make_study, raters, preset, extra, field, message):
    (r,) = raters(1)
    study = make_study(preset, annotators=[r])
    a = assignment_next(study=study, rater=r)
    answers = complete_answers(study.rubric, len(a.permutation))
    for key, value in extra.items():
        if key == "responses":
            for n, block in value.items():
                answers["responses"][n].update(block)
        else:
            answers[key] = value
    with pytest.raises(AnswerError) as exc:
        assignment_submit(assignment=a, answers=answers, time_on_task_ms=1)
    assert message in exc.value.errors.get(field, ""), exc.value.errors
    assert not Rating.objects.exists()


@pytest.mark.parametrize("value", ["abc", "4.5", 9, 0, "", True, [3]])
def test_scale_errors_speak_the_raters_language(make_study, raters, value):
    (r,) = raters(1)
    study = make_study("rrgen-001", annotators=[r], items_text=items_jsonl(1))
    a = assignment_next(study=study, rater=r)
    answers = rrgen_answers(3)
    answers["responses"]["2"]["fluency"] = value
    with pytest.raises(AnswerError) as exc:
        assignment_submit(assignment=a, answers=answers, time_on_task_ms=1)
    expected = ("Response 2: Fluency is required" if value == "" else
                "Response 2: Fluency: choose a whole number from 1 to 7")
    assert exc.value.errors == {"r2__fluency": expected}


def test_api_submit_refuses_a_comment_where_comments_are_off(make_study, annotator, api_for):
    study = make_study("rrgen-001", annotators=[annotator], items_text=items_jsonl(1))
    api = api_for(annotator)
    token = api.post(f"/api/studies/{study.slug}/rate/next/").json()["assignment"]["token"]
    url = f"/api/studies/{study.slug}/rate/{token}/submit/"
    answers = {**rrgen_answers(3), "comment": "nice work"}
    answers["responses"]["1"]["fluency"] = {"value": 6, "reasoning": "reads well"}
    response = api.post(url, {"answers": answers}, format="json")
    assert response.status_code == 400
    assert response.json()["errors"] == {"comment": "this study takes no comments",
                                         "r1__fluency__reasoning": "Response 1: Fluency asks for no reasoning"}
    assert not Rating.objects.exists()
    assert Assignment.objects.get(token=token).status == "active"
    assert api.post(url, {"answers": rrgen_answers(3)}, format="json").status_code == 200


def test_workspace_form_refuses_unknown_fields_by_name(make_study, annotator, client_for):
    study = make_study("rrgen-001", annotators=[annotator], items_text=items_jsonl(1))
    c = client_for(annotator)
    c.get(f"/studies/{study.slug}/rate/")
    a = Assignment.objects.get(rater=annotator, status="active")
    form = {f"r{n}__{key}": "6" for n in (1, 2, 3) for key in LIKERT}
    form.update({f"r{n}__decision": "ACCEPT" for n in (1, 2, 3)})
    url = f"/studies/{study.slug}/rate/{a.token}/submit/"
    bad = {**form, "r1__bogus": "3", "r2__fluency__reasoning": "fine", "comment": "hello", "r2__fluency": "seven",
           "csrfmiddlewaretoken": "ignored-by-the-test-client"}
    response = c.post(url, bad, HTTP_HX_REQUEST="true")
    page = response.content.decode()
    assert response.status_code == 400
    for message in ("Response 1: this rubric has no criterion &#x27;bogus&#x27;",
                    "Response 2: Fluency: choose a whole number from 1 to 7",
                    "this study takes no comments"):
        assert message in page, message
    assert "could not convert" not in page
    assert not Rating.objects.exists()
    a.refresh_from_db()
    assert a.status == "active"
    assert c.post(url, form).status_code == 302
    assert Rating.objects.filter(assignment=a).count() == 3 * 5
