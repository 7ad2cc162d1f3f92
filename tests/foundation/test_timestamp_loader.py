"""config.postgres: timestamps are read by psycopg's own (compiled) loader, with the same values Django's
Python loader gives, on a real PostgreSQL connection."""

from __future__ import annotations

import datetime

import psycopg
import pytest
from django.db import connection
from django.db.backends.postgresql.psycopg_any import register_tzloader
from psycopg.pq import Format

from config.postgres.base import TIMESTAMPTZ_OID, UtcTimestamptzLoader

pytestmark = pytest.mark.django_db

VALUES = """SELECT v FROM (VALUES ('2026-11-29 14:00:00.123456+00'::timestamptz), ('2026-03-29 01:30:00+01'),
    ('2026-10-25 02:30:00+02'), ('1970-01-01 00:00:00+00'), ('0001-01-01 00:00:00+00'),
    ('9999-12-31 23:59:59.999999+00'), ('2024-02-29 12:00:00-09:30'), (NULL)) t(v)"""


def _read(sql: str) -> list:
    with connection.cursor() as cursor:
        cursor.execute(sql)
        return [row[0] for row in cursor.fetchall()]


def test_the_connection_reads_timestamps_with_psycopgs_own_loader():
    connection.ensure_connection()
    loader = connection.connection.adapters.get_loader(TIMESTAMPTZ_OID, Format.TEXT)
    assert loader is UtcTimestamptzLoader
    native = psycopg.adapters.get_loader(TIMESTAMPTZ_OID, Format.TEXT)
    assert type(loader(TIMESTAMPTZ_OID, connection.connection).load.__self__) is native
    if psycopg.pq.__impl__ == "binary":
        assert native.__module__.startswith("psycopg_binary")  # compiled, not psycopg.types.datetime


def test_the_values_are_those_djangos_loader_gives():
    ours = _read(VALUES)
    register_tzloader(datetime.timezone.utc, connection.connection)  # Django's own, for comparison
    try:
        djangos = _read(VALUES)
    finally:
        connection.close()  # the next test's connection starts as the backend makes it
    assert ours == djangos
    assert ours[0] == datetime.datetime(2026, 11, 29, 14, 0, 0, 123456, tzinfo=datetime.timezone.utc)
    assert ours[1] == datetime.datetime(2026, 3, 29, 0, 30, tzinfo=datetime.timezone.utc)
    assert all(v.tzinfo is datetime.timezone.utc for v in ours if v is not None) and ours[-1] is None


def test_a_model_reads_back_the_instant_it_stored(make_study):
    from annotation.models import Study

    study = make_study("rrgen-001")
    moment = datetime.datetime(2026, 7, 1, 9, 30, 15, 250000, tzinfo=datetime.timezone(datetime.timedelta(hours=2)))
    Study.objects.filter(pk=study.pk).update(created_at=moment)
    stored = Study.objects.values_list("created_at", flat=True).get(pk=study.pk)
    assert stored == moment and stored.tzinfo is datetime.timezone.utc
