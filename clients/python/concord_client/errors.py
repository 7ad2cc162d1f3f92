"""What a refused request raises: the server's own message, its status, and its per-line errors."""

from __future__ import annotations

from typing import Any

import httpx


class ConcordError(Exception):
    """The server refused a request. `status` is the HTTP status, `detail` the server's message and
    `errors` what it listed (upload lines and fields, rubric fields), as it sent them."""

    def __init__(self, status: int, detail: str, errors: Any = None, *, url: str = ""):
        self.status, self.detail, self.errors, self.url = status, detail, errors, url
        message = f"{status}: {detail}"
        if errors:
            message += "".join(f"\n  {_line(e)}" for e in (errors if isinstance(errors, list) else [errors]))
        super().__init__(message)

    @classmethod
    def from_response(cls, response: httpx.Response) -> "ConcordError":
        try:
            body = response.json()
        except ValueError:
            return cls(response.status_code, response.text.strip() or response.reason_phrase, url=str(response.url))
        if isinstance(body, dict) and "detail" in body:
            return cls(response.status_code, str(body["detail"]), body.get("errors"), url=str(response.url))
        # DRF's field errors: {"field": ["message", ...]}
        return cls(response.status_code, "the request was refused", body, url=str(response.url))


def _line(error: Any) -> str:
    if isinstance(error, dict) and "message" in error:
        where = ", ".join(f"{k} {error[k]}" for k in ("line", "field") if error.get(k) not in (None, ""))
        return f"{where}: {error['message']}" if where else str(error["message"])
    return str(error)
