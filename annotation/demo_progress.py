"""How far a background `load_demo` has come, for the home page while `make run` already serves.

Kept in the cache (Redis), which the loader and the web server share; no entry means no demo is loading."""

from __future__ import annotations

from django.core.cache import cache

KEY = "concord:demo-progress"
TTL = 3600  # a loader killed midway leaves no banner behind for long


def demo_progress_start(slugs: list[str]) -> None:
    cache.set(KEY, {"total": len(slugs), "pending": list(slugs), "done": []}, TTL)


def demo_progress_done(slug: str) -> None:
    state = cache.get(KEY)
    if state is None:
        return
    state["pending"] = [s for s in state["pending"] if s != slug]
    state["done"].append(slug)
    cache.set(KEY, state, TTL)


def demo_progress_end() -> None:
    cache.delete(KEY)


def demo_progress() -> dict | None:
    """{"total", "done", "pending", "percent"} while the demo loads; None otherwise."""
    state = cache.get(KEY)
    if not state:
        return None
    return {**state, "percent": round(100 * len(state["done"]) / max(state["total"], 1))}
