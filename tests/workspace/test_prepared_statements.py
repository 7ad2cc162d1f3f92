"""The rating loop's statements are bound and prepared by the server; the ORM's are not."""

from __future__ import annotations

import json

import pytest
from django.db import connection

from annotation.access import get_study_for_annotator
from annotation.db import PREPARE_AFTER, prepared_cursor
from annotation.models import Assignment, Item, Study
from annotation.services.assignments import assignment_next

pytestmark = pytest.mark.django_db

PROBE = "SELECT count(*) FROM annotation_item WHERE study_id = %s AND id > %s"


def _prepared() -> list[str]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT statement FROM pg_prepared_statements")
        return [row[0] for row in cursor.fetchall()]


def test_a_statement_is_prepared_after_a_few_runs(make_study):
    study = make_study("rrgen-001")
    for k in range(PREPARE_AFTER + 1):
        with prepared_cursor() as cursor:
            cursor.execute(PROBE, [study.pk, k])
            assert cursor.fetchone()[0] == study.items.filter(id__gt=k).count()
    assert any("annotation_item WHERE study_id = $1 AND id > $2" in s for s in _prepared())


def test_no_prepared_statements_when_switched_off(make_study, settings):
    settings.DATABASE_PREPARED_STATEMENTS = False
    study = make_study("rrgen-001")
    for k in range(PREPARE_AFTER + 2):
        with prepared_cursor() as cursor:
            cursor.execute(PROBE, [study.pk, k])
    assert not any("annotation_item WHERE study_id" in s for s in _prepared())


def test_the_orm_still_takes_more_values_than_the_protocol_has_parameters(make_study):
    study = make_study("rrgen-001")
    ids = list(range(-70_000, 0)) + list(study.items.values_list("pk", flat=True))
    assert Item.objects.filter(pk__in=ids).count() == study.items.count()


def test_the_loop_reads_the_same_rows_as_the_orm(make_study, raters):
    (rater,) = raters(1)
    study = make_study("rrgen-001", annotators=[rater])
    for _ in range(PREPARE_AFTER + 1):  # prepared by now
        found = get_study_for_annotator(rater, study.slug)
    orm = Study.objects.select_related("rubric_version").get(pk=study.pk)
    for field in Study._meta.concrete_fields:
        assert getattr(found, field.attname) == getattr(orm, field.attname), field.name
    assert found.rubric_version.definition == orm.rubric_version.definition  # JSON decoded
    assignment = assignment_next(study=study, rater=rater)
    again = Assignment.objects.with_item(token=assignment.token)
    orm_a = Assignment.objects.select_related("item").get(pk=assignment.pk)
    for model, got, want in ((Assignment, again, orm_a), (Item, again.item, orm_a.item)):
        for field in model._meta.concrete_fields:
            assert getattr(got, field.attname) == getattr(want, field.attname), field.name
    assert [o.content for o in again.item.load_outputs().outputs.all()] == [
        o.content for o in orm_a.item.outputs.order_by("position")]


@pytest.mark.django_db(transaction=True)
def test_a_connection_that_died_is_replaced_before_the_first_prepared_statement_of_a_request():
    """PostgreSQL restarted while a worker thread's connection sat idle: the next request's first
    statement (the session user, read through prepared_cursor) gets a fresh connection, as Django's
    own cursor() would give it (CONN_HEALTH_CHECKS), instead of failing on the dead one. The health check
    reads the ended connection's socket (config.postgres) instead of asking PostgreSQL."""
    from django.core.signals import request_started
    from django.db import connections

    assert connection.settings_dict["CONN_HEALTH_CHECKS"]
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        dead_pid = cursor.fetchone()[0]
    killer = connections.create_connection("default")  # the restart, for this one connection
    try:
        with killer.cursor() as cursor:
            # with a timeout, it returns once the backend has gone, as after a restart
            cursor.execute("SELECT pg_terminate_backend(%s, 5000)", [dead_pid])
            assert cursor.fetchone()[0]
    finally:
        killer.close()
    request_started.send(sender=None)  # a new request: Django asks for a health check before first use
    with prepared_cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        assert cursor.fetchone()[0] != dead_pid


HOSTILE_ITEMS = "".join(json.dumps(row) + "\n" for row in [
    {"id": "h-1", "context": "Qu'en penses-tu ? «x» \\ \"quoted\"", "outputs": [
        {"system": "sys-a", "content": "naïve café 😀 \u2028 line\nbreak \"q\" \\ back", "metadata": {"t": [1, 2.5, None]}},
        {"system": "sys-b", "content": " ", "metadata": {}},
        {"system": "sys-c", "content": "{\"not\": \"json\"}", "metadata": {"nested": {"ü": "ß", "n": -3}}}]},
    {"id": "h-2", "context": "second", "outputs": [
        {"system": "sys-a", "content": "a"}, {"system": "sys-b", "content": "b"}, {"system": "sys-c", "content": "c"}]},
])


def test_outputs_come_with_the_assignment_in_the_same_statement(make_study, raters):
    """The rating loop reads an assignment, its item and the item's outputs in one statement (the
    outputs as JSON); what it reads equals the ORM's rows, field by field, whatever the text holds."""
    from django.test.utils import CaptureQueriesContext

    from annotation.models import Output

    (rater,) = raters(1)
    study = make_study("rrgen-001", annotators=[rater], items_text=HOSTILE_ITEMS, randomize_items=False)
    for item in study.items.all():
        assignment = Assignment.objects.create(study=study, item=item, rater=rater, permutation=[2, 0, 1], slot=0)
        with CaptureQueriesContext(connection) as captured:
            read = Assignment.objects.with_item(token=assignment.token)
            outputs = list(read.item.load_outputs().outputs.all())
        assert len(captured.captured_queries) == 1  # load_outputs found them already read
        want = list(Output.objects.filter(item=item).order_by("position"))
        assert len(outputs) == len(want) == 3
        for got, orm in zip(outputs, want):
            for field in Output._meta.concrete_fields:
                assert getattr(got, field.attname) == getattr(orm, field.attname), field.name
            assert got.item is read.item
    empty = Item.objects.create(study=study, external_id="no-outputs", context="x")
    bare = Assignment.objects.create(study=study, item=empty, rater=rater, permutation=[], slot=0)
    assert list(Assignment.objects.with_item(token=bare.token).item.outputs.all()) == []


def test_every_output_column_reads_back_from_json():
    """assignment_from_row builds outputs from JSON: a column JSON cannot carry as itself (a date, a
    decimal, bytes) would come back as a string, so adding one must change that read."""
    from django.db import models

    from annotation.models import Output

    carried = (models.AutoField, models.BigAutoField, models.ForeignKey, models.PositiveSmallIntegerField,
               models.CharField, models.TextField, models.JSONField)
    assert all(isinstance(f, carried) for f in Output._meta.concrete_fields)


def test_crowd_state_asks_nothing_where_the_study_has_no_crowd_link(make_study, raters, admin_user):
    from django.test.utils import CaptureQueriesContext

    from annotation.services.crowd import crowd_enter, crowd_link_create, crowd_state

    (rater,) = raters(1)
    study = make_study("rrgen-001", annotators=[rater])
    loaded = get_study_for_annotator(rater, study.slug)
    with CaptureQueriesContext(connection) as captured:
        assert crowd_state(loaded, rater) is None
    assert captured.captured_queries == []
    link = crowd_link_create(study=study, user=admin_user, provider="prolific", completion_code="C1")
    participant = crowd_enter(token=link.token, params={"PROLIFIC_PID": "p-1", "SESSION_ID": "s-1"})
    state = crowd_state(get_study_for_annotator(participant.user, study.slug), participant.user)
    assert state is not None and state.participant.pk == participant.pk and state.rated == 0
    assert crowd_state(get_study_for_annotator(rater, study.slug), rater) is None  # a member, not a participant


def test_a_first_submit_is_one_statement_and_stores_what_the_general_path_stores(make_study, raters):
    """The common submit (active, regular item, valid answers) is one statement with no transaction
    around it; its assignment row and ratings equal those of the general path (lock, upsert, update)
    for the same answers on the same item."""
    from django.test.utils import CaptureQueriesContext

    from annotation.models import Rating
    from annotation.services.ratings import assignment_submit
    from tests.workspace.conftest import rrgen_answers

    first, general = raters(2)
    study = make_study("rrgen-001", annotators=[first, general], raters_per_item=2, randomize_items=False)
    answers = rrgen_answers(3, value=5, decision="REJECT")
    answers["responses"]["2"]["fluency"] = 3
    done = {}
    for rater in (first, general):
        a = assignment_next(study=study, rater=rater)
        a.study = get_study_for_annotator(rater, study.slug)
        if rater is general:
            a.status = Assignment.Status.SUBMITTED  # as if read before a submit: the general path decides
        with CaptureQueriesContext(connection) as captured:
            done[rater] = assignment_submit(assignment=a, answers=answers, time_on_task_ms=7300)
        sql = [q["sql"] for q in captured.captured_queries]
        if rater is first:
            assert len(sql) == 1 and sql[0].lstrip().startswith("WITH done AS"), sql
        else:
            assert any("FOR UPDATE" in q for q in sql) and len(sql) > 1
    a1, a2 = (Assignment.objects.get(pk=done[r].pk) for r in (first, general))
    assert a1.item_id == a2.item_id
    for field in ("status", "draft", "ignored", "ignore_reason", "comment", "time_on_task_ms", "expires_at",
                  "attention_passed", "slot"):
        assert getattr(a1, field) == getattr(done[first], field), field
    for field in ("status", "draft", "ignored", "ignore_reason", "comment", "time_on_task_ms", "expires_at",
                  "attention_passed"):
        assert getattr(a1, field) == getattr(a2, field), field
    assert a1.status == "submitted" and a1.submitted_at is not None and a1.time_on_task_ms == 7300
    assert done[first].ratings_stored == done[general].ratings_stored == 15

    def stored(a):  # by the number each response was shown under (the two raters' orders differ)
        return sorted((a.permutation.index(r.output.position) + 1, r.criterion, r.value, r.score, r.reasoning)
                      for r in Rating.objects.filter(assignment=a).select_related("output"))

    assert stored(a1) == stored(a2) and len(stored(a1)) == 15
    assert [r[2] for r in stored(a1) if r[1] == "fluency"] == [5, 3, 5]


def test_a_first_submit_that_finds_its_assignment_expired_takes_the_general_path(make_study, raters):
    """The row changed after it was read (the sweep expired it): the one statement writes nothing and
    the general path reclaims the slot, as before."""
    from annotation.models import Rating
    from annotation.services.assignments import assignments_expire
    from annotation.services.ratings import assignment_submit
    from tests.workspace.conftest import rrgen_answers

    (rater,) = raters(1)
    study = make_study("rrgen-001", annotators=[rater])
    a = assignment_next(study=study, rater=rater)
    a.study = get_study_for_annotator(rater, study.slug)
    Assignment.objects.filter(pk=a.pk).update(expires_at=a.expires_at.replace(year=2000))
    assert assignments_expire(study=study) == 1
    done = assignment_submit(assignment=a, answers=rrgen_answers(3), time_on_task_ms=100)
    assert done.status == "submitted" and Assignment.objects.get(pk=a.pk).status == "submitted"
    assert Rating.objects.filter(assignment_id=a.pk).count() == 15


def test_the_study_and_the_raters_assignment_are_one_statement_and_refuse_what_the_two_reads_refused(
        make_study, raters):
    """A submit reads the study (membership, rubric, crowd links) and the rater's own assignment with its
    item and outputs in one statement. What it reads equals the two separate reads; another rater's
    token, a token of another study, an unknown token, an unknown study and a removed member are each
    the 404 they were, with the same message."""
    from django.http import Http404
    from django.test.utils import CaptureQueriesContext
    from django.utils import timezone

    from annotation.access import get_study_and_own_assignment
    from annotation.models import StudyMember

    mine, other = raters(2)
    study = make_study("rrgen-001", annotators=[mine, other], raters_per_item=2)
    elsewhere = make_study("rrgen-001", annotators=[mine], slug="elsewhere")
    a = assignment_next(study=study, rater=mine)
    b = assignment_next(study=study, rater=other)
    c = assignment_next(study=elsewhere, rater=mine)
    with CaptureQueriesContext(connection) as captured:
        found_study, found = get_study_and_own_assignment(mine, study.slug, str(a.token))
        outputs = list(found.item.load_outputs().outputs.all())
    assert len(captured.captured_queries) == 1
    alone = get_study_for_annotator(mine, study.slug)
    for field in Study._meta.concrete_fields:
        assert getattr(found_study, field.attname) == getattr(alone, field.attname), field.name
    assert found_study.rubric_version.definition == alone.rubric_version.definition
    assert found_study.has_crowd_links is False and found.study is found_study
    want = Assignment.objects.with_item(token=a.token)
    for model, got, expected in ((Assignment, found, want), (Item, found.item, want.item)):
        for field in model._meta.concrete_fields:
            assert getattr(got, field.attname) == getattr(expected, field.attname), field.name
    assert [o.content for o in outputs] == [o.content for o in want.item.load_outputs().outputs.all()]
    assert len(outputs) == 3

    def refused(user, slug, token) -> str:
        with pytest.raises(Http404) as caught:
            get_study_and_own_assignment(user, slug, token)
        return str(caught.value)

    assert refused(mine, study.slug, b.token) == "No such assignment"  # another rater's
    assert refused(mine, study.slug, c.token) == "No such assignment"  # mine, of another study
    assert refused(mine, study.slug, "00000000-0000-0000-0000-000000000000") == "No such assignment"
    assert refused(mine, study.slug, "not-a-token") == "No such assignment"
    assert refused(mine, "no-such-study", a.token) == "No such study"
    assert refused(mine, "no-such-study", "not-a-token") == "No such study"
    StudyMember.objects.filter(study=study, user=mine).update(removed_at=timezone.now())
    assert refused(mine, study.slug, a.token) == "No such study"


def test_the_next_item_is_three_statements_and_a_held_item_comes_back_with_a_fresh_lease(make_study, raters):
    """rate/next/ locks the rater, then asks in one statement for the item they hold (renewing its
    lease) and, only if they hold none, for a free item, then takes its slot: three statements in one
    transaction. A rater who holds an item gets it back and nothing else is locked or assigned."""
    from datetime import timedelta

    from django.test.utils import CaptureQueriesContext
    from django.utils import timezone

    rater, other, third = raters(3)
    study = make_study("rrgen-001", annotators=[rater, other, third], raters_per_item=1, randomize_items=False)
    assignment_next(study=study, rater=third)  # the first call of a process sweeps expired leases first
    with CaptureQueriesContext(connection) as captured:
        first = assignment_next(study=study, rater=rater)
    # (a test runs inside a transaction, so the engine's own transaction is a savepoint here)
    sql = [q["sql"].lstrip() for q in captured.captured_queries if not q["sql"].startswith(("SAVEPOINT", "RELEASE"))]
    assert [s.split()[0] for s in sql] == ["SELECT", "WITH", "WITH"], sql
    assert "FOR NO KEY UPDATE" in sql[0] and "WITH own AS" in sql[1] and "INSERT INTO" in sql[2]
    Assignment.objects.filter(pk=first.pk).update(expires_at=timezone.now() + timedelta(seconds=5))
    again = assignment_next(study=study, rater=rater)
    assert again.pk == first.pk and again.item.pk == first.item.pk
    assert Assignment.objects.get(pk=first.pk).expires_at > timezone.now() + timedelta(minutes=1)  # renewed
    assert Assignment.objects.filter(rater=rater).count() == 1
    taken = assignment_next(study=study, rater=other)  # the held item was neither locked nor given away
    assert taken.item_id != first.item_id
