"""Whether this process may ask the workers for background work (a routing refresh, an active-inference
round). `load_demo` turns it off while it loads: make run's workers are already running then, and a refresh or
a draw they ran mid-load, with their own timing and randomness, made the demo differ from machine to machine
(and from the figures the README states). Process-wide, since the loader may work in more than one thread."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

_held = {"off": 0}


@contextlib.contextmanager
def no_background_requests() -> Iterator[None]:
    _held["off"] += 1
    try:
        yield
    finally:
        _held["off"] -= 1


def background_requests_allowed() -> bool:
    return not _held["off"]
