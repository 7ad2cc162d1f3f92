"""The rating loop's statements are bound and prepared by the server; the ORM's are not."""

from __future__ import annotations

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
    own cursor() would give it (CONN_HEALTH_CHECKS), instead of failing on the dead one."""
    from django.core.signals import request_started
    from django.db import connections

    assert connection.settings_dict["CONN_HEALTH_CHECKS"]
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        dead_pid = cursor.fetchone()[0]
    killer = connections.create_connection("default")  # the restart, for this one connection
    try:
        with killer.cursor() as cursor:
            cursor.execute("SELECT pg_terminate_backend(%s)", [dead_pid])
            assert cursor.fetchone()[0]
    finally:
        killer.close()
    request_started.send(sender=None)  # a new request: Django asks for a health check before first use
    with prepared_cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        assert cursor.fetchone()[0] != dead_pid
