"""The training phase: training items come first, each answer is graded against its gold and
explained, the pass mark qualifies, one retry, and the result is stored and shown to the admin.
Training items never enter the study's data."""

from __future__ import annotations

import json

import pytest

from annotation.importers import ItemFileError
from annotation.models import Assignment, Rating, TrainingAttempt
from annotation.reports.study import study_report
from annotation.services.assignments import assignment_next
from annotation.services.items import items_import
from annotation.services.ratings import assignment_submit
from annotation.services.training import TrainingError, training_retry, training_state
from tests.workspace.conftest import items_jsonl, rrgen_answers

pytestmark = pytest.mark.django_db

EXPLANATION = "Both replies are fluent and on topic: a 7 for fluency, and each one can be sent."


def training_jsonl(n: int) -> str:
    return "".join(json.dumps({
        "id": f"train-{i}", "context": f"Training review {i}.", "training": True, "explanation": EXPLANATION,
        "gold": {"fluency": 7, "decision": "ACCEPT"},
        "outputs": [{"system": f"sys-{c}", "content": f"Training reply {c}."} for c in "ab"]}) + "\n" for i in range(n))


@pytest.fixture
def study(make_study, annotator, researcher):
    study = make_study("rrgen-001", annotators=[annotator], researchers=[researcher], items_text=items_jsonl(4),
                       training_pass_mark=0.5, consensus_min_raters=1)
    items_import(study=study, text=training_jsonl(2), filename="training.jsonl")
    return study


def answer(study, rater, *, right: bool) -> Assignment:
    a = assignment_next(study=study, rater=rater)
    a.study = study
    values = rrgen_answers(len(a.permutation), value=7 if right else 3)
    return assignment_submit(assignment=a, answers=values)


def test_training_comes_first_and_a_pass_opens_the_study(study, annotator):
    first = assignment_next(study=study, rater=annotator)
    assert first.item.is_training and first.is_attention_check
    assert assignment_next(study=study, rater=annotator).pk == first.pk  # the open one, until answered
    answer(study, annotator, right=True)
    assert training_state(study, annotator).in_progress
    answer(study, annotator, right=False)  # 1 of 2 right: the pass mark is 0.5
    attempt = TrainingAttempt.objects.get(rater=annotator)
    assert (attempt.n_correct, attempt.n_items, attempt.passed) == (1, 2, True) and attempt.finished_at
    regular = assignment_next(study=study, rater=annotator)
    assert not regular.item.is_training and not regular.is_attention_check
    # Training answers are no data: the report counts only the regular item's ratings.
    assignment_submit(assignment=regular, answers=rrgen_answers(len(regular.permutation)))
    report = study_report(study, n_boot=10)
    assert report["counts"]["items"] == 4
    rows = report["consensus"]["rows"]
    assert rows and {r["item"] for r in rows} == {regular.item.external_id}
    # nor counted as ratings analysed, nor scored for gold accuracy (their gold grades the training alone)
    analysed = [c["key"] for c in report["criteria"]]
    assert report["counts"]["raters"] == 1
    assert report["counts"]["ratings_analysed"] == Rating.objects.filter(assignment=regular,
                                                                         criterion__in=analysed).count() > 0
    assert report["raters"][annotator.username]["gold_accuracy"] is None


def test_a_failed_training_allows_one_retry_then_no_work(study, annotator):
    answer(study, annotator, right=False)
    answer(study, annotator, right=False)
    state = training_state(study, annotator)
    assert not state.qualified and state.can_retry and assignment_next(study=study, rater=annotator) is None
    training_retry(study=study, rater=annotator)
    assert assignment_next(study=study, rater=annotator).item.is_training  # the same items again
    answer(study, annotator, right=False)
    answer(study, annotator, right=False)
    state = training_state(study, annotator)
    assert state.failed_out and not state.can_retry
    assert assignment_next(study=study, rater=annotator) is None
    with pytest.raises(TrainingError):
        training_retry(study=study, rater=annotator)
    attempts = list(TrainingAttempt.objects.filter(rater=annotator).values_list("number", "n_correct", "passed"))
    assert attempts == [(1, 0, False), (2, 0, False)]  # both results stay stored


def test_a_retry_keeps_the_first_attempts_time_on_task_for_the_payment_sheet(study, annotator):
    """The retry replaces the first attempt's answers (one per item and rater), not the time they took:
    the sheet's time on task is every answer's; the pass mark counts only the attempt's own answers."""
    from annotation.payments import payment_rows

    def answer_in(seconds: int, *, right: bool) -> None:
        a = assignment_next(study=study, rater=annotator)
        assignment_submit(assignment=a, answers=rrgen_answers(len(a.permutation), value=7 if right else 3),
                          time_on_task_ms=seconds * 1000)

    answer_in(30, right=False)
    answer_in(40, right=False)
    training_retry(study=study, rater=annotator)
    assert TrainingAttempt.objects.get(rater=annotator, number=1).time_on_task_ms == 70_000
    answer_in(5, right=True)
    answer_in(7, right=False)
    second = TrainingAttempt.objects.get(rater=annotator, number=2)
    assert (second.n_answered, second.n_correct, second.passed) == (2, 1, True)  # this attempt's answers only
    [row] = payment_rows(study)
    assert row["time_on_task_s"] == 82.0 and row["items_submitted"] == 2  # the answers stored now


def test_no_pass_mark_no_training(make_study, annotator):
    study = make_study("rrgen-001", annotators=[annotator], items_text=items_jsonl(2))
    items_import(study=study, text=training_jsonl(1), filename="training.jsonl")
    got = assignment_next(study=study, rater=annotator)
    assert not got.item.is_training  # and a training item is never served as an attention check either
    assert not training_state(study, annotator).required


@pytest.mark.parametrize("row,field", [
    ({"training": True}, "gold"),
    ({"explanation": "why"}, "explanation"),
    ({"training": "yes", "gold": {"fluency": 7}}, "training"),
])
def test_bad_training_rows_are_refused_naming_the_field(study, row, field):
    base = {"id": "t-bad", "context": "x", "outputs": [{"system": "a", "content": "b"}]}
    with pytest.raises(ItemFileError) as exc:
        items_import(study=study, text=json.dumps({**base, **row}) + "\n", filename="t.jsonl")
    assert any(f == field for _, f, _ in exc.value.errors), exc.value.errors
    assert not study.items.filter(external_id="t-bad").exists()


def test_feedback_page_shows_the_expected_answer_and_why(study, annotator, client_for, admin_user):
    client = client_for(annotator)
    page = client.get(f"/studies/{study.slug}/rate/").content.decode()
    assert 'data-testid="training-banner"' in page and "item 1 of 2" in page
    a = Assignment.objects.get(rater=annotator, status="active")
    form = {f"r{n}__{k}": "3" for n in (1, 2) for k in ("semantic_relevance", "fluency", "sentiment_appropriateness",
                                                      "domain_accuracy")}
    form.update({"r1__decision": "ACCEPT", "r2__decision": "REJECT"})
    resp = client.post(f"/studies/{study.slug}/rate/{a.token}/submit/", form)
    assert resp.status_code == 302 and resp["Location"].endswith(f"/rate/{a.token}/training/")
    html = client.get(resp["Location"]).content.decode()
    assert "Not what was expected" in html and EXPLANATION in html
    assert "Response 1: 3; Response 2: 3" in html and "7" in html  # yours beside the expected
    assert "sys-a" not in html and "sys-b" not in html  # never a system name to a rater
    progress = client_for(admin_user).get(f"/studies/{study.slug}/progress/").content.decode()
    assert 'data-testid="training-cell"' in progress and "1 / 2 answered" in progress
