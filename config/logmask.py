"""Log lines carry no credential: a filter on every handler (the web's, via LOGGING, and the Celery
worker's, via its logging signals) masks, in the message and in the traceback's text,

- the value of every environment variable whose name is credential-like (OPENAI_API_KEY,
  SECRET_KEY, a judge's headers_env variable such as GATEWAY_TOKEN), wherever it appears;
- what follows `Bearer`/`Basic`, a credential-like name with `:` or `=` (`api_key=...`,
  `"Authorization": "..."`), a well-known key shape (`sk-...`, `hf_...`, `AIza...`), and the
  password of a URL's `user:password@`.

Masks keep at most 3 characters (judges.masking.mask_value), as the pages and the API do.
"""

from __future__ import annotations

import logging
import os
import re

from judges.masking import is_secret_name, mask_value, scrub_text

_VALUE = r"[^\s\"',;&]{6,}"
PATTERNS = (
    re.compile(rf"(?i)\b(bearer|basic)(\s+)({_VALUE})"),
    re.compile(rf"(?i)([\"']?(?:authorization|proxy-authorization|x-api-key|x-goog-api-key|api[-_]?key|access[-_]?token"
               rf"|refresh[-_]?token|client[-_]?secret|secret|password|passwd)[\"']?\s*[:=]\s*[\"']?)"
               rf"(?!bearer\b|basic\b)({_VALUE})"),
    re.compile(r"()()\b(sk-[A-Za-z0-9_-]{8,}|sk-ant-[A-Za-z0-9_-]{8,}|hf_[A-Za-z0-9]{8,}|AIza[A-Za-z0-9_-]{20,})"),
    re.compile(r"(://[^/\s:@]+:)()([^@\s/]+)(?=@)"),
)


def _masked(match: re.Match) -> str:
    groups = match.groups()
    return "".join(g or "" for g in groups[:-1]) + mask_value(groups[-1])


def environ_secrets() -> list[str]:
    return [v for k, v in os.environ.items() if len(v) >= 8 and is_secret_name(k)]


def scrub_log_text(text: str) -> str:
    text = scrub_text(text, environ_secrets())
    for pattern in PATTERNS:
        text = pattern.sub(_masked, text)
    return text


class SecretsFilter(logging.Filter):
    """Masks the record in place (never drops it)."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # a malformed record is left for the handler to report
            return True
        clean = scrub_log_text(message)
        if clean != message:
            record.msg, record.args = clean, ()
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = scrub_log_text(record.exc_text)
        return True


def mask_handlers(logger: logging.Logger) -> None:
    """Add the filter to each of the logger's handlers (once)."""
    for handler in logger.handlers:
        if not any(isinstance(f, SecretsFilter) for f in handler.filters):
            handler.addFilter(SecretsFilter())
