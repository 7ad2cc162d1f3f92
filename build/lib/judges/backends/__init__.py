"""Judge backends behind one base class; provider libraries are imported lazily."""
from __future__ import annotations

from typing import Any

from judges.backends.base import Backend, JudgeRequest, JudgeResponse
from judges.backends.errors import (
    BackendError, BackendNotAvailable, BackendTimeout, MalformedResponseError, PermanentBackendError,
    RateLimited, RetryableBackendError,
)

KINDS = ("openai_compat", "transformers_local")


def get_backend(kind: str, config: dict[str, Any]) -> Backend:
    """Build a backend from its kind and a plain config dict (no secrets: keys come from env)."""
    if kind == "openai_compat":
        from judges.backends.openai_compat import OpenAICompatBackend

        return OpenAICompatBackend(config)
    if kind == "transformers_local":
        from judges.backends.transformers_local import TransformersBackend

        return TransformersBackend(**config)
    raise ValueError(f"unknown backend kind {kind!r}; expected one of {KINDS}")


__all__ = ["Backend", "JudgeRequest", "JudgeResponse", "BackendError", "RetryableBackendError",
           "PermanentBackendError", "BackendTimeout", "RateLimited", "MalformedResponseError",
           "BackendNotAvailable", "get_backend", "KINDS"]
