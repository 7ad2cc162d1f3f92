"""The response cache in PostgreSQL, behind judges.cache.CacheStore.

The method layer calls the store from inside its event loop, where Django refuses
synchronous queries; so the queries run on one helper thread of the store's own, whose
connection `close()` releases. Entries are written with ON CONFLICT DO NOTHING: two
workers caching the same answer (same key, so an equal value) never fail each other.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Mapping, Sequence, TypeVar

from django.db import connection

from judges.cache import CacheStore
from judges.models import JudgeCacheEntry

T = TypeVar("T")
BATCH = 1000


class DBCache(CacheStore):
    def __init__(self) -> None:
        self.hits = 0
        self.misses = 0
        self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="judge-cache")

    def _run(self, fn: Callable[[], T]) -> T:
        return self._thread.submit(fn).result()

    def get_many(self, keys: Sequence[str]) -> dict[str, dict[str, Any]]:
        def fetch() -> dict[str, dict[str, Any]]:
            found: dict[str, dict[str, Any]] = {}
            for start in range(0, len(keys), BATCH):
                rows = JudgeCacheEntry.objects.filter(key__in=list(keys[start:start + BATCH]))
                found.update(rows.values_list("key", "response"))
            return found

        found = self._run(fetch) if keys else {}
        self.hits += len(found)
        self.misses += len(keys) - len(found)
        return found

    def set_many(self, entries: Mapping[str, dict[str, Any]]) -> None:
        if entries:
            rows = [JudgeCacheEntry(key=k, response=v) for k, v in entries.items()]
            self._run(lambda: JudgeCacheEntry.objects.bulk_create(rows, batch_size=BATCH, ignore_conflicts=True))

    def close(self) -> None:
        self._run(lambda: connection.close())  # resolved in the helper thread: its own connection
        self._thread.shutdown(wait=True)
