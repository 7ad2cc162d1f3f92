"""Waiting until a page has settled: loaded, and no request of its context in flight for QUIET_S.

Playwright's `wait_for_load_state("networkidle")` waits for 500 ms without a request, whatever the page: half a
second after each of the several hundred pages the browser tests open (the page walks, axe on every page of the
inventory), about a tenth of the suite's browser time. A page here is done when its htmx fragments and images
have come in; 100 ms without a request is time enough for a swapped fragment to ask for the next one (htmx
issues it at once). The contexts the tests open are tracked from their first request: `tracked(context)`."""

from __future__ import annotations

import time

QUIET_S = 0.1
POLL_MS = 20


class _Requests:
    """The requests of one browser context that have neither finished nor failed, and when that last changed."""

    def __init__(self, context) -> None:
        self.in_flight: set = set()
        self.changed = time.monotonic()
        context.on("request", self._started)
        context.on("requestfinished", self._ended)
        context.on("requestfailed", self._ended)

    def _started(self, request) -> None:
        self.in_flight.add(request)
        self.changed = time.monotonic()

    def _ended(self, request) -> None:
        self.in_flight.discard(request)
        self.changed = time.monotonic()


def tracked(context):
    """The context, its requests counted from now on (before any page of it opens)."""
    context.concord_requests = _Requests(context)
    return context


def settle(page, timeout_s: float = 30.0) -> None:
    """Return once the page has loaded and no request of its context has been in flight for QUIET_S."""
    requests = getattr(page.context, "concord_requests", None)
    if requests is None:
        raise RuntimeError("settle() needs a context made by tests.page_settle.tracked()")
    page.wait_for_load_state("load")
    deadline = time.monotonic() + timeout_s
    while requests.in_flight or time.monotonic() - requests.changed < QUIET_S:
        if time.monotonic() > deadline:
            raise TimeoutError(f"still in flight after {timeout_s:.0f} s: {[r.url for r in requests.in_flight]}")
        page.wait_for_timeout(POLL_MS)  # Playwright delivers the request events while it waits
