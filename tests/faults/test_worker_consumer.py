"""config.worker_consumer: the worker's consumer survives kombu failing to close a lost connection
(the whole path, a real worker and a real Redis restart, is tests/faults/test_redis_restart.py)."""

from __future__ import annotations

import pytest

from config.celery import app
from config.worker_consumer import _close_ignoring_released_client


def test_the_worker_uses_this_consumer():
    from celery.utils.imports import symbol_by_name

    from config.worker_consumer import Consumer

    assert symbol_by_name(app.conf.worker_consumer) is Consumer


def test_kombus_released_client_failure_is_logged_not_raised(caplog):
    tries = []

    def close():
        tries.append(1)
        raise AttributeError("'NoneType' object has no attribute 'hostname'")

    _close_ignoring_released_client(close)()
    assert tries == [1] and "reconnecting anyway" in caplog.text


def test_other_errors_of_the_close_are_not_hidden():
    def close():
        raise ValueError("not kombu's released client")

    with pytest.raises(ValueError):
        _close_ignoring_released_client(close)()
