"""Our own backend exceptions; providers' errors are mapped onto these.

Callers only need to know whether trying again can help.
"""
from __future__ import annotations


class BackendError(Exception):
    """Any failure to get a judgement from a backend."""

    retryable = False

    def __init__(self, message: str, *, status: int | None = None, body: str | None = None):
        super().__init__(message)
        self.status = status
        self.body = body

    def __eq__(self, other: object) -> bool:  # lets tests compare results by value
        return type(self) is type(other) and str(self) == str(other) and self.status == other.status

    def __hash__(self) -> int:
        return hash((type(self), str(self), self.status))


class RetryableBackendError(BackendError):
    """Rate limits, 5xx, timeouts, dropped connections: trying later may succeed."""

    retryable = True

    def __init__(self, message: str, *, status: int | None = None, body: str | None = None,
                 retry_after: float | None = None):
        super().__init__(message, status=status, body=body)
        self.retry_after = retry_after


class BackendTimeout(RetryableBackendError):
    """The server did not answer in time."""


class RateLimited(RetryableBackendError):
    """HTTP 429."""


class PermanentBackendError(BackendError):
    """4xx other than 429, bad configuration: trying again cannot help."""


class MalformedResponseError(RetryableBackendError):
    """The body was not the JSON we expect (often a proxy cutting it short, so retryable)."""


class BackendNotAvailable(PermanentBackendError):
    """The provider's library is not installed or the model cannot be loaded."""


class BatchPending(RetryableBackendError):
    """A batch judge's request waits for its provider batch: the slot is judged when the answer is in."""
