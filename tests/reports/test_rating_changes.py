"""The change counts the database's triggers keep (migration 0018, annotation.reports.rating_changes):
every write a report reads moves its study's count, in the block of the assignment written, and
nothing else does; a rolled-back write moves nothing; cached reports are recomputed after a change only.
"""

from __future__ import annotations

import threading

import pytest
from django.db import connection, transaction

from annotation.models import Assignment, Rating, RatingChanges
from annotation.reports import rating_changes
from annotation.reports import study as study_module
from annotation.reports.rating_changes import CHANGE_BLOCK_BITS, block_changes, study_changes
from annotation.reports.ratings import ratings_fingerprint
from annotation.services.assignments import assignment_next
from annotation.services.ratings import assignment_save_draft, assignment_submit
from tests.conftest import make_user
from tests.workspace.conftest import rrgen_answers

pytestmark = pytest.mark.django_db(transaction=True)


class Counts:
    """The study's count and fingerprint, and another study's, before and after each step."""

    def __init__(self, study, other):
        self.study, self.other = study, other
        self.last = self.now()

    def now(self):
        return study_changes(self.study), ratings_fingerprint(self.study), study_changes(self.other)

    def moved(self) -> bool:
        before, self.last = self.last, self.now()
        assert self.last[2] == before[2], "another study's count moved"
        assert (self.last[0] != before[0]) == (self.last[1] != before[1])
        assert self.last[0] >= before[0], "a count went back"
        return self.last[0] != before[0]


def _submit(study, rater) -> Assignment:
    a = assignment_next(study=study, rater=rater)
    a.study = study
    return assignment_submit(assignment=a, answers=rrgen_answers(len(a.permutation)), time_on_task_ms=1000)


def test_every_change_a_report_reads_moves_the_count_and_nothing_else_does(make_study):
    rater, other_rater = make_user("counted"), make_user("elsewhere")
    study = make_study("rrgen-001", annotators=[rater])
    other = make_study("rrgen-001", annotators=[other_rater], slug="another-study")
    counts = Counts(study, other)

    # The annotator loop before a submit: an assignment handed out, a draft saved.
    a = assignment_next(study=study, rater=rater)
    assert not counts.moved()
    a.study = study
    assignment_save_draft(assignment=a, answers=rrgen_answers(len(a.permutation)), time_on_task_ms=500)
    assert not counts.moved()

    # A submit (the one-statement path: the assignment and its ratings), in the block of its assignment.
    assignment_submit(assignment=a, answers=rrgen_answers(len(a.permutation)), time_on_task_ms=1000)
    assert counts.moved()
    assert set(block_changes(study)) == {a.pk >> CHANGE_BLOCK_BITS}
    _submit(other, other_rater)
    counts.last = counts.now()  # (the other study's own submit)

    ratings = Rating.objects.filter(assignment=a).order_by("id")
    # A rating edited without updated_at (QuerySet.update), then deleted; then written by raw SQL.
    Rating.objects.filter(pk=ratings[0].pk).update(value=2, score=2.0)
    assert counts.moved()
    Rating.objects.filter(pk=ratings[1].pk).delete()
    assert counts.moved()
    with connection.cursor() as cursor:
        cursor.execute(f"INSERT INTO {Rating._meta.db_table} (assignment_id, output_id, criterion, value, score,"
                       " reasoning, created_at, updated_at) VALUES (%s, NULL, 'note', '\"x\"', NULL, '', now(), now())",
                       [a.pk])
    assert counts.moved()

    # The submitted assignment ignored, flagged, given to another rater, un-submitted.
    for change in ({"ignored": True}, {"is_attention_check": True}, {"rater": make_user("stand-in")},
                   {"status": Assignment.Status.ACTIVE}):
        Assignment.objects.filter(pk=a.pk).update(**change)
        assert counts.moved(), change
    # No longer submitted: a change to it alone is not in any report; submitting it again is.
    Assignment.objects.filter(pk=a.pk).update(status=Assignment.Status.EXPIRED, comment="late")
    assert not counts.moved()
    Assignment.objects.filter(pk=a.pk).update(status=Assignment.Status.SUBMITTED)
    assert counts.moved()

    # A write rolled back moves nothing.
    with pytest.raises(RuntimeError), transaction.atomic():
        _submit(study, rater)
        raise RuntimeError("rolled back")
    assert not counts.moved()

    # A submitted assignment deleted with its ratings (as a study or rater deletion does).
    Assignment.objects.filter(pk=a.pk).delete()
    assert counts.moved()
    assert not Assignment.objects.filter(study=study).exists()


def test_a_cached_report_is_recomputed_after_a_change_only(make_study, monkeypatch):
    raters = [make_user(f"cached-{k}") for k in range(2)]
    study = make_study("rrgen-001", annotators=raters)
    for rater in raters:
        _submit(study, rater)
    computed = []
    real = study_module.study_report

    def counted(s, **kwargs):
        computed.append(s.pk)
        return real(s, **kwargs)

    monkeypatch.setattr(study_module, "study_report", counted)
    first = study_module.cached_study_report(study, n_boot=20)
    again = study_module.cached_study_report(study, n_boot=20)
    assert len(computed) == 1 and again == first

    _submit(study, raters[0])
    grown = study_module.cached_study_report(study, n_boot=20)
    assert len(computed) == 2
    assert grown["counts"]["submitted_assignments"] == first["counts"]["submitted_assignments"] + 1


def test_writers_keep_rows_of_their_own_and_a_fold_keeps_every_sum_without_waiting(make_study, monkeypatch):
    """Concurrent writers (separate connections) never wait for each other's row; a reader folds the rows
    into one per block, keeping the sums and skipping (not waiting for) rows an open transaction holds."""
    raters = [make_user(f"writer-{k}") for k in range(4)]
    study = make_study("rrgen-001", annotators=raters)
    opened, release, done = threading.Event(), threading.Event(), []

    def long_writer():
        with transaction.atomic():
            done.append(_submit(study, raters[0]).pk)
            opened.set()
            release.wait(30)
        connection.close()

    def quick_writer(rater):
        with connection.cursor() as cursor:
            cursor.execute("SET lock_timeout = '2s'")  # a wait for the long writer's row would fail here
        done.append(_submit(study, rater).pk)
        connection.close()

    holder = threading.Thread(target=long_writer)
    holder.start()
    assert opened.wait(30)
    for rater in raters[1:]:
        t = threading.Thread(target=quick_writer, args=(rater,))
        t.start()
        t.join()
    assert len(done) == 4  # three submits committed while the long transaction held its row
    before = study_changes(study)
    stripes = RatingChanges.objects.filter(study_id=study.pk).values_list("stripe", flat=True)
    assert len(set(stripes)) == 3  # one row per writing process (the long writer's is not committed)

    monkeypatch.setattr(rating_changes, "FOLD_ABOVE", 1)
    with connection.cursor() as cursor:
        cursor.execute("SET lock_timeout = '2s'")
    assert study_changes(study) == before  # the read that folds
    assert set(RatingChanges.objects.filter(study_id=study.pk).values_list("stripe", flat=True)) == {-1}
    assert study_changes(study) == before

    release.set()
    holder.join()
    after = study_changes(study)
    assert after > before  # the long writer's changes, committed last
    assert set(RatingChanges.objects.filter(study_id=study.pk).values_list("stripe", flat=True)) == {-1}  # folded again
