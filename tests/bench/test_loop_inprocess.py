"""bench/loop_inprocess.py: its arms really rate (every item stored); the WSGI arms read the signed-in user in
the loop's first statement (annotation.loop_auth), the session arm by a statement of its own a request as
Django's session auth does, and the services arm not at all."""

from __future__ import annotations

import secrets

import pytest
from django.contrib.auth import get_user_model

from annotation.models import Assignment
from bench.loadclient import setup_study
from bench.loop_inprocess import measure

pytestmark = pytest.mark.django_db(transaction=True)


def test_each_arm_rates_and_the_services_arm_skips_only_the_user_reads(settings):
    secret_key = secrets.token_urlsafe(40)
    slug, sessions = setup_study(60, secret_key, raters=10, raters_per_item=3, user_prefix="inproc-test")
    settings.SECRET_KEY = secret_key  # the sessions are signed with it, as the bench's server has it
    settings.ALLOWED_HOSTS = ["127.0.0.1"]
    users = list(get_user_model().objects.filter(username__startswith="inproc-test").order_by("username"))
    spent = measure(slug, sessions, users, items=25, warm=2)
    assert set(spent) == {"WSGI, every middleware", "WSGI, the loop's middleware only",
                          "services after reading the session and its user", "services alone"}
    assert Assignment.objects.filter(study__slug=slug, status="submitted").count() == 4 * (25 + 2)
    assert all(cpu_s > 0 and statements >= 4 * 25 for cpu_s, statements, _, _ in spent.values())
    assert [user_reads for _, _, user_reads, _ in spent.values()] == [0, 0, 2 * 25, 0]
    statements = [statements for _, statements, _, _ in spent.values()]
    assert statements[0] < statements[2] and statements[1] < statements[2]  # the user comes with the study
    assert all(db_cpu_s >= 0 for *_, db_cpu_s in spent.values())
