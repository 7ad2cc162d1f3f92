"""bench/loop_statements.py: each statement of the loop is counted once a run and its CPU falls inside the
backend's; an arm's settings leave with its connection; the arm without triggers names the loop's triggers."""

from __future__ import annotations

import secrets

import pytest
from django.contrib.auth import get_user_model
from django.db import connection

from annotation.models import Assignment
from bench.loadclient import setup_study
from bench.loop_statements import ARMS, TRIGGERS, measure

pytestmark = pytest.mark.django_db(transaction=True)


def _study(settings, prefix: str):
    secret_key = secrets.token_urlsafe(40)
    slug, _sessions = setup_study(40, secret_key, raters=10, raters_per_item=3, user_prefix=prefix)
    settings.SECRET_KEY = secret_key
    return slug, list(get_user_model().objects.filter(username__startswith=prefix).order_by("username"))


def test_every_statement_is_counted_inside_the_backends_cpu(settings):
    slug, users = _study(settings, "statements-test")
    got = measure(slug, users, [], items=20, warm=2)
    assert Assignment.objects.filter(study__slug=slug, status="submitted").count() == 22
    runs = {label: n for label, (_, n) in got["statements"].items()}
    submits = [n for label, n in runs.items() if label.startswith("WITH done AS ( UPDATE annotation_assignment")]
    assert submits == [20]  # the one-statement submit, once an item
    assert sum(runs.values()) >= 5 * 20
    assert got["backend_ns"] > 0
    assert sum(ns for ns, _ in got["statements"].values()) <= got["backend_ns"]


def test_an_arms_setting_leaves_with_its_connection(settings):
    slug, users = _study(settings, "statements-arm")
    got = measure(slug, users, ARMS["without the foreign-key checks"], items=5, warm=1, by_statement=False)
    assert got["statements"] == {} and got["backend_ns"] > 0
    with connection.cursor() as cursor:
        cursor.execute("SHOW session_replication_role")
        assert cursor.fetchone()[0] == "origin"


def test_the_arm_without_triggers_disables_each_change_count_trigger():
    with connection.cursor() as cursor:
        cursor.execute("SELECT tgname, tgenabled FROM pg_trigger WHERE tgname LIKE '%_changes_%' AND NOT tgisinternal")
        enabled = dict(cursor.fetchall())
    assert enabled == dict.fromkeys(TRIGGERS, "A")  # every one, and fired in replica mode too
    disabled = ARMS["without the change-count triggers"]
    assert len(disabled) == len(TRIGGERS) and all(f"DISABLE TRIGGER {name}" in sql
                                                  for sql, name in zip(disabled, TRIGGERS))
