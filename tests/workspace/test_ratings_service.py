"""Submitting answers without HTTP: validation per kind, idempotent upserts, revisions, attention checks."""

from __future__ import annotations

import copy

import pytest

from annotation.selectors import rater_progress

from annotation.models import Assignment, Rating, StudyMember
from annotation.services.assignments import assignment_next
from annotation.services.ratings import (
    AnswerError,
    SubmitError,
    answers_from_form,
    assignment_save_draft,
    assignment_submit,
)
from annotation.services.studies import study_set_status
from tests.workspace.conftest import all_kinds_answers, items_jsonl, rrgen_answers


def _shown_contents(a: Assignment) -> list[str]:
    outputs = {o.position: o.content for o in a.item.outputs.all()}
    return [outputs[p] for p in a.permutation]


def _answers_for(a: Assignment) -> dict:
    """all_kinds_answers with the highlight placed on whatever text Response 1 shows."""
    answers = all_kinds_answers()
    text = _shown_contents(a)[0]
    answers["responses"]["1"]["marks"] = [{"start": 0, "end": 2, "text": text[:2], "label": "good"}]
    return answers


def test_every_kind_is_stored_with_its_score(all_kinds_study):
    study, rater = all_kinds_study
    a = assignment_next(study=study, rater=rater)
    assignment_submit(assignment=a, answers=_answers_for(a), time_on_task_ms=4200)
    shown = {o.position: o for o in a.item.outputs.all()}
    first, second = shown[a.permutation[0]], shown[a.permutation[1]]
    got = {(r.output_id, r.criterion): (r.value, r.score, r.reasoning) for r in Rating.objects.filter(assignment=a)}
    assert got[(first.pk, "quality")] == (4, 4.0, "clear")
    assert got[(first.pk, "score")] == (7.5, 7.5, "")
    assert got[(first.pk, "verdict")] == ("TP", None, "")
    assert got[(first.pk, "decision")] == ("ACCEPT", 1.0, "")
    assert got[(second.pk, "decision")] == ("REJECT", 0.0, "")
    assert got[(second.pk, "score")] == (3, 3.0, "")
    assert got[(second.pk, "sure")] == (4, 4.0, "")
    assert got[(second.pk, "notes")] == ("terse", None, "")
    assert got[(None, "preferred")] == (1, 1.0, "")
    assert got[(first.pk, "marks")][0][0]["text"] == first.content[:2]
    assert (second.pk, "marks") not in got and (first.pk, "notes") not in got
    a.refresh_from_db()
    assert a.status == "submitted" and a.time_on_task_ms == 4200 and a.comment == "ok"


@pytest.mark.parametrize("mutate, field, message", [
    (lambda x: x["responses"]["1"].pop("quality"), "r1__quality", "Response 1: Quality is required"),
    (lambda x: x["responses"]["2"].update(quality=6), "r2__quality", "Response 2: Quality: choose a whole number from 1 to 5"),
    (lambda x: x["responses"]["1"].update(quality={"value": 3, "reasoning": ""}), "r1__quality__reasoning",
     "write your reasoning"),
    (lambda x: x["responses"]["1"].update(score=7.25), "r1__score", "Response 1: Score: choose a number from 0 to 10 in steps of 0.5"),
    (lambda x: x["responses"]["1"].update(score="seven"), "r1__score", "choose a number from 0 to 10 in steps of 0.5"),
    (lambda x: x["responses"]["1"].update(verdict="FP9"), "r1__verdict", "Response 1: Verdict: choose one of TP, FP1"),
    (lambda x: x["responses"]["1"].update(decision="MAYBE"), "r1__decision", "choose one of ACCEPT, REJECT"),
    (lambda x: x["responses"]["1"].update(sure=0), "r1__sure", "Response 1: Confidence: choose a whole number from 1 to 5"),
    (lambda x: x["responses"]["1"].update(quality={"value": True, "reasoning": "x"}), "r1__quality", "Response 1: Quality: choose a whole number from 1 to 5"),
    (lambda x: x["responses"]["1"].update(marks=[{"start": 0, "end": 999}]), "r1__marks", "outside the response"),
    (lambda x: x["responses"]["1"].update(marks=[{"start": 0, "end": 2, "text": "zz"}]), "r1__marks",
     "does not match"),
    (lambda x: x["responses"]["1"].update(marks=[{"start": 0, "end": 2, "label": "ugly"}]), "r1__marks",
     "label must be one of good, bad"),
    (lambda x: x["item"].pop("preferred"), "item__preferred", "Preferred response is required"),
    (lambda x: x["responses"].update({"3": {"quality": 1}}), "answers", "unknown response number"),
    (lambda x: x.update(ignored=True), "ignore_reason", "say why"),
])
def test_invalid_answers_are_refused_and_nothing_is_stored(all_kinds_study, mutate, field, message):
    study, rater = all_kinds_study
    a = assignment_next(study=study, rater=rater)
    answers = _answers_for(a)
    mutate(answers)
    with pytest.raises(AnswerError) as exc:
        assignment_submit(assignment=a, answers=answers, time_on_task_ms=10)
    assert field in exc.value.errors
    assert message in exc.value.errors[field]
    assert not Rating.objects.exists()
    a.refresh_from_db()
    assert a.status == "active"


def test_double_submit_stores_one_row_each(all_kinds_study):
    study, rater = all_kinds_study
    a = assignment_next(study=study, rater=rater)
    answers = _answers_for(a)
    assignment_submit(assignment=a, answers=answers, time_on_task_ms=100)
    n = Rating.objects.count()
    assignment_submit(assignment=a, answers=copy.deepcopy(answers), time_on_task_ms=100)
    assert Rating.objects.count() == n == 2 * 5 + 3  # 5 required per response; notes on 2, marks on 1, preferred


def test_revision_replaces_values_and_drops_cleared_answers(all_kinds_study):
    study, rater = all_kinds_study
    a = assignment_next(study=study, rater=rater)
    answers = _answers_for(a)
    assignment_submit(assignment=a, answers=answers, time_on_task_ms=100)
    ids_before = set(Rating.objects.values_list("id", flat=True))
    answers["responses"]["1"]["quality"] = {"value": 1, "reasoning": "changed my mind"}
    answers["responses"]["1"].pop("marks")
    assignment_submit(assignment=a, answers=answers, time_on_task_ms=50)
    shown_first = a.permutation[0]
    q = Rating.objects.get(assignment=a, criterion="quality", output__position=shown_first)
    assert (q.value, q.reasoning) == (1, "changed my mind")
    assert not Rating.objects.filter(assignment=a, criterion="marks").exists()
    assert q.id in ids_before  # updated in place, not re-inserted
    a.refresh_from_db()
    assert a.time_on_task_ms == 100  # a smaller report never lowers the total


def test_ignored_item_stores_no_ratings(all_kinds_study):
    study, rater = all_kinds_study
    a = assignment_next(study=study, rater=rater)
    assignment_submit(assignment=a, answers=_answers_for(a), time_on_task_ms=1)
    assignment_submit(assignment=a, answers={"ignored": True, "ignore_reason": "Broken item"}, time_on_task_ms=1)
    a.refresh_from_db()
    assert a.ignored and a.ignore_reason == "Broken item" and a.status == "submitted"
    assert not Rating.objects.filter(assignment=a).exists()


def test_ignore_refused_when_the_rubric_does_not_allow_it(make_study, raters):
    (r,) = raters(1)
    study = make_study("aqua-003", annotators=[r])
    a = assignment_next(study=study, rater=r)
    with pytest.raises(AnswerError) as exc:
        assignment_submit(assignment=a, answers={"ignored": True, "ignore_reason": "x"}, time_on_task_ms=1)
    assert "ignored" in exc.value.errors


def test_submit_refused_once_the_study_is_closed(make_study, raters):
    (r,) = raters(1)
    study = make_study("rrgen-001", annotators=[r])
    a = assignment_next(study=study, rater=r)
    study_set_status(study=study, status="closed")
    with pytest.raises(SubmitError):
        assignment_submit(assignment=a, answers=rrgen_answers(3), time_on_task_ms=1)
    assert not Rating.objects.exists()


def test_late_submit_after_expiry_is_kept_when_the_slot_is_free(make_study, raters):
    (r,) = raters(1)
    study = make_study("rrgen-001", annotators=[r], items_text=items_jsonl(1), raters_per_item=1)
    a = assignment_next(study=study, rater=r)
    Assignment.objects.filter(pk=a.pk).update(status="expired", slot=None)
    assignment_submit(assignment=a, answers=rrgen_answers(3), time_on_task_ms=1)
    a.refresh_from_db()
    assert a.status == "submitted" and a.slot == 0
    assert Rating.objects.filter(assignment=a).count() == 15


def test_late_submit_refused_when_someone_else_took_the_slot(make_study, raters):
    r1, r2 = raters(2)
    study = make_study("rrgen-001", annotators=[r1, r2], items_text=items_jsonl(1), raters_per_item=1)
    a = assignment_next(study=study, rater=r1)
    Assignment.objects.filter(pk=a.pk).update(status="expired", slot=None)
    from annotation.models import Item

    Item.objects.update(slots_taken=0)
    b = assignment_next(study=study, rater=r2)
    assert b.item_id == a.item_id
    with pytest.raises(SubmitError):
        assignment_submit(assignment=a, answers=rrgen_answers(3), time_on_task_ms=1)
    assert not Rating.objects.filter(assignment=a).exists()


def test_draft_keeps_an_incomplete_form(all_kinds_study):
    study, rater = all_kinds_study
    a = assignment_next(study=study, rater=rater)
    assignment_save_draft(assignment=a, answers={"responses": {"2": {"quality": 3}}}, time_on_task_ms=900)
    a.refresh_from_db()
    assert a.draft["responses"]["2"]["quality"] == {"value": 3, "reasoning": ""}
    assert a.time_on_task_ms == 900 and a.status == "active"
    assert not Rating.objects.exists()


def test_answers_from_form_reads_the_workspace_fields(all_kinds_study):
    study, _ = all_kinds_study
    form = {"r1__quality": "4", "r1__quality__reasoning": "fine", "r2__marks":
            '[{"start": 0, "end": 2, "text": "Hi", "label": ""}]', "item__preferred": "2", "ignored": "",
            "comment": " hello "}
    answers = answers_from_form(form, rubric=study.rubric, n_responses=2)
    assert answers["responses"] == {"1": {"quality": {"value": "4", "reasoning": "fine"}},
                                    "2": {"marks": {"value": [{"start": 0, "end": 2, "text": "Hi", "label": ""}],
                                                    "reasoning": ""}}}
    assert answers["item"] == {"preferred": {"value": "2", "reasoning": ""}}
    assert answers["comment"] == "hello" and answers["ignored"] is False


def test_attention_failures_are_counted_and_pause_the_rater(make_study, raters):
    (r,) = raters(1)
    study = make_study("rrgen-001", annotators=[r], items_text=items_jsonl(20, attention=4),
                       attention_check_rate=0.5, attention_fail_pause=2, raters_per_item=1)
    passed = failed = 0
    while True:
        try:
            a = assignment_next(study=study, rater=r)
        except Exception as exc:  # RaterPaused
            assert type(exc).__name__ == "RaterPaused"
            break
        assert a is not None
        if a.is_attention_check and passed == 0:
            answers = rrgen_answers(3, value=7, decision="ACCEPT")  # matches the gold
            passed += 1
        elif a.is_attention_check:
            answers = rrgen_answers(3, value=2, decision="REJECT")
            failed += 1
        else:
            answers = rrgen_answers(3)
        assignment_submit(assignment=a, answers=answers, time_on_task_ms=1)
    assert (passed, failed) == (1, 2)
    assert StudyMember.objects.get(user=r).paused
    row = next(row for row in rater_progress(study) if row["user"] == r)
    assert (row["checks"], row["checks_failed"]) == (3, 2)
    assert list(Assignment.objects.filter(is_attention_check=True).order_by("submitted_at")
                .values_list("attention_passed", flat=True)) == [True, False, False]


def test_rows_are_stored_exactly_as_checked_whatever_the_text(all_kinds_study):
    """The ratings go to PostgreSQL as one JSON array: every stored value, score and reasoning equals
    the checked row, for text with quotes, backslashes, line separators, emoji and JSON-looking text,
    and for scores that are not exact in binary (7.5 is; the Likert and confidence scores are ints)."""
    from annotation.services.ratings import answers_check, answers_normalise

    study, rater = all_kinds_study
    a = assignment_next(study=study, rater=rater)
    answers = _answers_for(a)
    hostile = 'say "no" \\ back\u2028sep\nnew 😀 é 中 {"value": 1} \' -- ; \t'
    answers["responses"]["1"]["quality"]["reasoning"] = hostile
    answers["responses"]["2"]["notes"] = hostile
    answers["comment"] = hostile
    assignment_submit(assignment=a, answers=answers, time_on_task_ms=10)
    shown = {o.position: o for o in a.item.outputs.all()}
    contents = [shown[p].content for p in a.permutation]
    rows = answers_check(study.rubric, answers_normalise(answers), contents, a.item.context,
                         [shown[p].pk for p in a.permutation])
    stored = {(r.output_id, r.criterion): r for r in Rating.objects.filter(assignment=a)}
    assert len(stored) == len(rows) == 13  # six answers a response (a highlight on 1, notes on 2), the preference
    for row in rows:
        output_id = shown[a.permutation[row.response - 1]].pk if row.response is not None else None
        got = stored[(output_id, row.criterion)]
        assert (got.value, got.score, got.reasoning) == (row.value, row.score, row.reasoning), row.criterion
        assert type(got.score) is type(row.score)
    assert stored[(shown[a.permutation[0]].pk, "quality")].reasoning == hostile.strip()
    assert stored[(shown[a.permutation[1]].pk, "notes")].value == hostile.strip()
