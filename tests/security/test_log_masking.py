"""No credential in a log line: the filter on the web's handler (settings.LOGGING) and on the Celery
worker's handlers (config/celery.py) masks the values of credential-named environment variables
and credential shapes, in messages and tracebacks; other text is left as it is."""

from __future__ import annotations

import io
import logging
import secrets

import pytest

from config.logmask import SecretsFilter, scrub_log_text

KEY = f"sk-{secrets.token_hex(16)}"
GATEWAY = secrets.token_hex(16)


@pytest.mark.parametrize("text,expected", [
    (f"Authorization: Bearer {KEY}", "Authorization: Bearer sk-..."),
    (f"sent {{'Authorization': 'Basic {GATEWAY}'}}", "sent {'Authorization': 'Basic " + GATEWAY[:3] + "...'}"),
    (f"POST /v1?api_key={GATEWAY}&model=m", f"POST /v1?api_key={GATEWAY[:3]}...&model=m"),
    (f'{{"x-api-key": "{GATEWAY}"}}', f'{{"x-api-key": "{GATEWAY[:3]}..."}}'),
    (f"401: invalid key {KEY} given", "401: invalid key sk-... given"),
    (f"postgres://concord:{GATEWAY}@db:5432/concord", "postgres://concord:" + GATEWAY[:3] + "...@db:5432/concord"),
    ("judge run 12 failed: max_tokens=512, tokens_in=3000, secret-judge, key criterion label",
     "judge run 12 failed: max_tokens=512, tokens_in=3000, secret-judge, key criterion label"),
], ids=["bearer", "basic", "query", "json-header", "message", "database-url", "no-credential"])  # ids without the
# random keys: pytest-xdist's workers must collect the same test names
def test_credential_shapes_are_masked_and_nothing_else(text, expected):
    assert scrub_log_text(text) == expected


def test_the_value_of_a_credential_variable_is_masked_anywhere(monkeypatch):
    monkeypatch.setenv("JUDGE_TEST_GATEWAY_TOKEN", GATEWAY)
    monkeypatch.setenv("CONCORD_TEST_MODEL", "a-model-name-not-secret")
    assert scrub_log_text(f"the gateway echoed {GATEWAY}!") == f"the gateway echoed {GATEWAY[:3]}...!"
    assert scrub_log_text("model a-model-name-not-secret") == "model a-model-name-not-secret"


def test_the_web_handler_masks_messages_and_tracebacks(monkeypatch):
    monkeypatch.setenv("JUDGE_TEST_GATEWAY_TOKEN", GATEWAY)
    (console,) = [h for h in logging.getLogger().handlers if any(isinstance(f, SecretsFilter) for f in h.filters)]
    stream = io.StringIO()
    # the handler settings.LOGGING made, written to here for the test; not setStream(), which flushes the stream
    # it had, and an earlier test's captured stderr may be closed by now
    before, console.stream = console.stream, stream
    try:
        try:
            raise RuntimeError(f"provider said: bad token {GATEWAY}")
        except RuntimeError:
            logging.getLogger("judges.services.runs").exception(
                "judge run %s failed with header Authorization: Bearer %s", 7, KEY)
    finally:
        console.stream = before
    err = stream.getvalue()
    assert "judge run 7 failed with header Authorization: Bearer sk-..." in err
    assert f"RuntimeError: provider said: bad token {GATEWAY[:3]}..." in err  # the traceback's text
    assert KEY not in err and GATEWAY not in err


def test_the_celery_workers_handlers_get_the_filter():
    from celery.signals import after_setup_logger, after_setup_task_logger

    import config.celery  # noqa: F401  (connects the signal handlers)

    for signal in (after_setup_logger, after_setup_task_logger):
        logger = logging.Logger(f"worker-{signal.name}")
        logger.addHandler(logging.StreamHandler())
        signal.send(sender=None, logger=logger, loglevel=logging.INFO, logfile=None, format="", colorize=False)
        assert [type(f) for f in logger.handlers[0].filters] == [SecretsFilter]
