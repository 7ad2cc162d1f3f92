"""Requests and tokens per minute for one judge, shared by every worker through Redis. No Django.

The counting is the `limits` library's in Redis (its Lua scripts make each hit atomic): an
exact moving window for requests, the sliding-window counter for tokens; so workers on any number of nodes draw on one quota per judge: the key is
the judge's name. A request takes one unit of the rpm limit and its input tokens (the
approximation of judges.tokens) plus the most it may generate of the tpm limit, as providers
count it. A 429 with Retry-After stops every worker of the judge until then (one Redis key),
and is counted, so the run can show how many it met.
"""

from __future__ import annotations

import asyncio
import math
import time
from typing import Any

MAX_WAIT_S = 5.0  # look again at least this often while waiting for the window


class SharedRateLimiter:
    def __init__(self, name: str, *, redis_url: str, rpm: int | None = None, tpm: int | None = None,
                 window_s: int = 60) -> None:
        """`rpm` requests and `tpm` tokens per `window_s` seconds (a minute, as providers state them)."""
        import redis
        from limits import RateLimitItemPerSecond
        from limits.storage import storage_from_string
        from limits.strategies import MovingWindowRateLimiter, SlidingWindowCounterRateLimiter

        self.name = name
        self.rpm = RateLimitItemPerSecond(rpm, window_s, namespace="concord-judge-rpm") if rpm else None
        self.tpm = RateLimitItemPerSecond(tpm, window_s, namespace="concord-judge-tpm") if tpm else None
        storage = storage_from_string(redis_url)
        # Requests in an exact moving window (one entry per request); tokens in the sliding-window counter,
        # which takes a cost of thousands in one INCRBY where the moving window would store each token.
        self._limiters = {"rpm": MovingWindowRateLimiter(storage), "tpm": SlidingWindowCounterRateLimiter(storage)}
        self._redis = redis.Redis.from_url(redis_url)
        self._until_key = f"concord:judge-ratelimit:{name}:until"
        self.rate_limited = 0  # 429s met through this limiter (one chunk's)
        self.waited_s = 0.0

    def _blocked_for(self) -> float:
        until = self._redis.get(self._until_key)
        return max(0.0, float(until) - time.time()) if until else 0.0

    def _take(self, item: Any, cost: int) -> float:
        """0 when `cost` units were taken, else the seconds until the window may have room."""
        limiter = self._limiters["rpm" if item is self.rpm else "tpm"]
        cost = min(cost, item.amount)  # a request bigger than the whole quota goes alone in its window
        if limiter.hit(item, self.name, cost=cost):
            return 0.0
        stats = limiter.get_window_stats(item, self.name)
        return min(MAX_WAIT_S, max(0.05, stats.reset_time - time.time()))

    async def acquire(self, tokens: int) -> None:
        """Wait until the request may go: after any Retry-After, with room in both windows."""
        for item, cost in ((self.rpm, 1), (self.tpm, tokens)):
            while item is not None:
                wait = await asyncio.to_thread(self._blocked_for) or await asyncio.to_thread(self._take, item, cost)
                if not wait:
                    break
                self.waited_s += wait
                await asyncio.sleep(wait)

    def throttled(self, retry_after: float | None) -> None:
        """A 429: count it, and hold every worker of this judge until Retry-After has passed."""
        self.rate_limited += 1
        if retry_after:
            until = time.time() + retry_after
            self._redis.set(self._until_key, f"{until:.3f}", px=max(1, math.ceil(retry_after * 1000)))
