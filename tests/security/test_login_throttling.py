"""Login throttling (django-axes): ten failed logins for one username from one IP address lock that
pair out for 15 minutes, even with the right password; other pairs are unaffected. Thirty failures
from one address over any accounts lock that address out (config/login_throttle.py)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.test import Client

from tests.conftest import PASSWORD

pytestmark = pytest.mark.django_db
LIMIT = 10


def log_in(username: str, password: str, ip: str = "10.0.0.1"):
    client = Client(REMOTE_ADDR=ip)
    response = client.post("/login/", {"username": username, "password": password})
    return response, "_auth_user_id" in client.session


def fail(username: str, times: int, ip: str = "10.0.0.1") -> list[int]:
    return [log_in(username, "wrong password", ip)[0].status_code for _ in range(times)]


def test_the_eleventh_login_is_refused_even_with_the_right_password(annotator):
    statuses = fail(annotator.username, LIMIT)
    assert statuses[: LIMIT - 1] == [200] * (LIMIT - 1)  # the form again, with its error
    response, signed_in = log_in(annotator.username, PASSWORD)
    assert response.status_code == 429 and not signed_in


def test_nine_failures_do_not_lock_and_a_success_starts_the_count_again(annotator):
    fail(annotator.username, LIMIT - 1)
    response, signed_in = log_in(annotator.username, PASSWORD)
    assert response.status_code == 302 and signed_in
    fail(annotator.username, LIMIT - 1)  # counted from zero after the success
    assert log_in(annotator.username, PASSWORD)[1]


def test_the_lockout_is_per_username_and_address(annotator, researcher):
    fail(annotator.username, LIMIT)
    assert not log_in(annotator.username, PASSWORD)[1]
    assert log_in(annotator.username, PASSWORD, ip="10.0.0.2")[1]  # the rater, from elsewhere
    assert log_in(researcher.username, PASSWORD)[1]  # someone else, from the same address


def test_the_lockout_ends_after_fifteen_minutes(annotator):
    from axes.models import AccessAttempt

    fail(annotator.username, LIMIT)
    assert not log_in(annotator.username, PASSWORD)[1]
    AccessAttempt.objects.update(attempt_time=AccessAttempt.objects.get().attempt_time - timedelta(minutes=14))
    assert not log_in(annotator.username, PASSWORD)[1]
    AccessAttempt.objects.update(attempt_time=AccessAttempt.objects.get().attempt_time - timedelta(minutes=2))
    assert log_in(annotator.username, PASSWORD)[1]


def test_throttling_can_be_switched_off_for_tests_that_log_in_many_times(annotator, settings):
    settings.AXES_ENABLED = False
    fail(annotator.username, LIMIT + 5)
    assert log_in(annotator.username, PASSWORD)[1]


def test_behind_a_proxy_the_forwarded_address_is_the_one_locked_out(annotator, settings):
    settings.TRUSTED_PROXY_COUNT = 1

    def via_proxy(forwarded_for: str, password: str) -> bool:
        client = Client(REMOTE_ADDR="10.9.9.9", HTTP_X_FORWARDED_FOR=forwarded_for)
        client.post("/login/", {"username": annotator.username, "password": password})
        return "_auth_user_id" in client.session

    for _ in range(LIMIT):
        via_proxy("203.0.113.7", "wrong password")
    assert not via_proxy("203.0.113.7", PASSWORD)
    assert via_proxy("198.51.100.4", PASSWORD)  # another client behind the same proxy
    # A client cannot dodge the lockout by sending its own X-Forwarded-For: the proxy appends the real one.
    assert not via_proxy("192.0.2.1, 203.0.113.7", PASSWORD)


def test_one_address_trying_many_accounts_is_locked_out_for_all(annotator, settings):
    """A password sprayed over many accounts from one address: 45 tries in a minute were all answered."""
    limit = settings.LOGIN_ADDRESS_FAILURE_LIMIT
    assert LIMIT < limit < 45
    statuses = [log_in(f"sprayed{i:02d}", "Summer2026!")[0].status_code for i in range(45)]
    assert statuses[:limit] == [200] * limit and set(statuses[limit:]) == {429}
    response, signed_in = log_in(annotator.username, PASSWORD)  # the right password, from that address
    assert response.status_code == 429 and not signed_in
    assert log_in(annotator.username, PASSWORD, ip="10.0.0.2")[1]  # the rater, from elsewhere
