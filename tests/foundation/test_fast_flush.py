"""tests/fast_flush.py: the flush that ends each transactional test empties every table by DELETE, and the
database keeps its foreign keys and triggers afterwards (the DELETEs skip them only inside the flush)."""

from __future__ import annotations

import pytest
from django.core.management import call_command
from django.db import IntegrityError, connection, transaction

from annotation.models import Assignment, Rating
from annotation.services.assignments import assignment_next
from annotation.services.ratings import assignment_submit
from tests.conftest import make_user
from tests.fast_flush import MAX_DELETE_BYTES

pytestmark = pytest.mark.django_db(transaction=True)


def row_counts() -> dict[str, int]:
    tables = connection.introspection.django_table_names(only_existing=True, include_views=False)
    with connection.cursor() as cursor:
        cursor.execute(" UNION ALL ".join(f"SELECT '{t}', count(*) FROM \"{t}\"" for t in tables))
        return dict(cursor.fetchall())


def flush_as_a_transactional_test_does() -> list[str]:
    """pytest-django's TransactionTestCase teardown: flush with reset_sequences=False; returns the SQL run."""
    with connection.execute_wrapper(lambda execute, sql, *args: (ran.append(sql), execute(sql, *args))[1]):
        ran: list[str] = []
        call_command("flush", verbosity=0, interactive=False, database="default", reset_sequences=False,
                     allow_cascade=False, inhibit_post_migrate=True)
    return ran


def test_the_flush_deletes_every_row_of_every_table(make_study, monkeypatch):
    # tables this worker's earlier tests grew (a rolled-back test keeps its pages) would make it TRUNCATE
    monkeypatch.setattr("tests.fast_flush.MAX_DELETE_BYTES", 2**62)
    rater = make_user("flush-rater")
    study = make_study("aqua-003", annotators=[rater])
    assignment = assignment_next(study=study, rater=rater)
    assignment_submit(assignment=assignment, answers={"responses": {"1": {"label": "TP"}}})
    assert Rating.objects.exists()
    ran = flush_as_a_transactional_test_does()
    assert any(sql.startswith("DELETE FROM") for sql in ran) and not any("TRUNCATE" in sql for sql in ran)
    assert {t: n for t, n in row_counts().items() if n} == {}


def test_foreign_keys_and_triggers_hold_again_after_the_flush(make_study):
    """The replica role, which skips triggers (foreign keys are triggers too), ends with the flush."""
    rater = make_user("flush-rater")
    study = make_study("aqua-003", annotators=[rater])
    flush_as_a_transactional_test_does()
    with connection.cursor() as cursor:
        cursor.execute("SHOW session_replication_role")
        assert cursor.fetchone()[0] == "origin"
    # the study's row is gone with its creator; a row pointing at them is refused again (deferred to commit)
    with pytest.raises(IntegrityError), transaction.atomic():
        Assignment.objects.create(study_id=study.pk, item_id=10**9, rater_id=rater.pk, permutation=[0])


def test_a_database_grown_large_is_truncated(make_study):
    study = make_study("aqua-003")
    with connection.cursor() as cursor:  # tables past the threshold, as the export fault tests make them
        cursor.execute("INSERT INTO annotation_auditentry (study_id, actor_name, action, target, detail, at)"
                       " SELECT %s, '', 'setting_change', '', jsonb_build_object('pad', md5(g::text)), now()"
                       " FROM generate_series(1, %s) g", [study.pk, MAX_DELETE_BYTES // 100])
    ran = flush_as_a_transactional_test_does()
    assert any("TRUNCATE" in sql for sql in ran)
    assert {t: n for t, n in row_counts().items() if n} == {}
