"""Response cache: the same model, prompt, sampling and seed give the stored answer.

The key is sha256 over a canonical JSON of (backend identity, messages/prompt, sampling
parameters including seed). Only successful responses are stored. `CacheStore` is the
abstract store; `MemoryCache` keeps entries in a dict (the platform adds a DB-backed one).
"""
from __future__ import annotations

import abc
import dataclasses
import hashlib
import json
from typing import Any, Mapping, Sequence

from judges.backends.base import Backend, JudgeRequest, JudgeResponse, Result


def cache_key(identity: Mapping[str, Any], request: JudgeRequest) -> str:
    payload = {
        "identity": dict(identity),
        "messages": [dict(m) for m in request.messages] if request.messages is not None else None,
        "prompt": request.prompt,
        "sampling": request.sampling(),
    }
    blob = json.dumps(payload, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def response_to_dict(r: JudgeResponse) -> dict[str, Any]:
    d = dataclasses.asdict(r)
    d.pop("raw", None)  # raw provider bodies can be large; texts/logprobs/usage are what we reuse
    d.pop("cached", None)
    return d


def response_from_dict(d: Mapping[str, Any]) -> JudgeResponse:
    return JudgeResponse(**{k: v for k, v in d.items() if k not in ("raw", "cached")}, cached=True)


class CacheStore(abc.ABC):
    @abc.abstractmethod
    def get_many(self, keys: Sequence[str]) -> dict[str, dict[str, Any]]:
        """Stored entries (as dicts) for the keys that are present."""

    @abc.abstractmethod
    def set_many(self, entries: Mapping[str, dict[str, Any]]) -> None:
        """Store entries; an existing key may be overwritten with an equal value."""


class MemoryCache(CacheStore):
    def __init__(self) -> None:
        self.data: dict[str, dict[str, Any]] = {}
        self.hits = 0
        self.misses = 0

    def get_many(self, keys: Sequence[str]) -> dict[str, dict[str, Any]]:
        found = {k: self.data[k] for k in keys if k in self.data}
        self.hits += len(found)
        self.misses += len(keys) - len(found)
        return found

    def set_many(self, entries: Mapping[str, dict[str, Any]]) -> None:
        self.data.update(entries)


async def score_many_cached(backend: Backend, requests: Sequence[JudgeRequest],
                            cache: CacheStore | None) -> list[Result]:
    """`backend.score_many` with cached answers served first; order kept.

    Sampled requests (temperature > 0) are cached too: the seed is part of the key, and a
    rerun with the same seed is meant to reproduce the run.
    """
    if cache is None:
        return await backend.score_many(requests)
    ident = backend.identity()
    keys = [cache_key(ident, r) for r in requests]
    found = cache.get_many(list(dict.fromkeys(keys)))
    results: list[Result | None] = [response_from_dict(found[k]) if k in found else None for k in keys]
    todo = [i for i, r in enumerate(results) if r is None]
    # identical requests inside one batch are sent once
    first_of: dict[str, int] = {}
    unique = [i for i in todo if first_of.setdefault(keys[i], i) == i]
    fresh = await backend.score_many([requests[i] for i in unique])
    by_key = {keys[i]: res for i, res in zip(unique, fresh)}
    cache.set_many({k: response_to_dict(v) for k, v in by_key.items() if isinstance(v, JudgeResponse)})
    for i in todo:
        results[i] = by_key[keys[i]]
    return results  # type: ignore[return-value]
